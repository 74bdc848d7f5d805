/// A scan over a grant's JSON text (an object another layer wrote) that lets it go into a join
/// message as the bytes it was written as, without parsing it only to write it again. The
/// messages themselves are read and written by the mailbox protocol's one codec (`Mailbox`),
/// which reads a grant back as its text (`JSONParser.members`).
enum JSONText {
    /// Whether `bytes` is one JSON object and nothing else as far as nesting goes: it opens with
    /// `{` and the brace that closes it is the last byte (strings and escapes skipped). Enough to
    /// insert it as a member's value without its text reaching the members around it; whether
    /// its inside is well-formed is for the reader to check.
    static func isSingleObject(_ bytes: [UInt8]) -> Bool {
        bytes.first == UInt8(ascii: "{") && bytes.last == UInt8(ascii: "}")
            && skipValue(bytes, 0) == bytes.count
    }
}

extension JSONText {
    /// Where the value starting at `start` ends (one past its last byte); nil when a string or
    /// an object or array it opens is not closed before the end of `bytes`.
    private static func skipValue(_ bytes: [UInt8], _ start: Int) -> Int? {
        guard start < bytes.count else { return start }
        var index = start
        var depth = 0
        var inString = false
        var escaped = false
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    if depth == 0 { return index }
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if depth == 0 { return index - 1 }
                depth -= 1
                if depth == 0 { return index }
            case UInt8(ascii: ","), 0x20, 0x09, 0x0A, 0x0D:
                if depth == 0 { return index - 1 }
            default: break
            }
        }
        return inString || depth > 0 ? nil : index
    }
}
