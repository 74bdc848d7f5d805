/// Text others wrote (names, messages, thread and space names, notes), made safe to print on a
/// terminal: what shows is what was sent. A control character (C0, DEL, C1) or a bidirectional
/// override or isolate (U+202A–U+202E, U+2066–U+2069) is shown as a visible escape (`\x1B`,
/// `\u{202E}`) instead of acting on the terminal, so a message cannot retitle or colour it,
/// overwrite a line with `\r` or reorder what follows. Not for `--json` output, which JSON escapes.
public enum SafeText {
    /// One line (a name, a title, a note): a newline is escaped too.
    public static func line(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars { append(scalar, to: &out) }
        return out
    }

    /// Several lines: each made safe as by ``line(_:)``, the newlines between them kept.
    public static func lines(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { isUnsafe($0) && $0 != "\n" }) else { return text }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line(String($0)) }
            .joined(separator: "\n")
    }

    /// A message body after a `prefix` such as `Paul: `: each line after the first is indented by
    /// the prefix's width, so a line of the message cannot pose as a new sender's.
    public static func body(_ text: String, after prefix: String) -> String {
        let indent = String(repeating: " ", count: prefix.count)
        return
            prefix
            + text.split(separator: "\n", omittingEmptySubsequences: false).map { line(String($0)) }
            .joined(separator: "\n" + indent)
    }

    /// Whether `scalar` is shown as an escape.
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069, 0x2028, 0x2029: true
        default: false
        }
    }

    private static func append(_ scalar: Unicode.Scalar, to out: inout String) {
        guard isUnsafe(scalar) else {
            out.unicodeScalars.append(scalar)
            return
        }
        let hex = String(scalar.value, radix: 16, uppercase: true)
        out +=
            scalar.value <= 0xFF ? "\\x" + String(repeating: "0", count: 2 - hex.count) + hex : "\\u{\(hex)}"
    }
}
