/// Two scans over a join message's JSON text that let a grant (a JSON object another layer
/// wrote) travel as the bytes it was written as, without parsing it only to write it again. The
/// messages themselves are read and written by the mailbox protocol's one codec (`Mailbox`).
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
    /// The text of the top-level member `name` of the JSON object `bytes`, which the caller has
    /// parsed already (so it is well-formed); nil when there is no such member or the key is
    /// written with escapes. Lets a reader take a nested object as it was sent instead of
    /// serialising what it parsed again.
    static func memberText(_ name: String, in bytes: [UInt8]) -> ArraySlice<UInt8>? {
        let wanted = Array(name.utf8)
        var index = skipSpace(bytes, 0)
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        while true {
            index = skipSpace(bytes, index)
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\""),
                let keyEnd = skipValue(bytes, index)
            else { return nil }
            let key = bytes[(index + 1)..<max(index + 1, keyEnd - 1)]
            index = skipSpace(bytes, keyEnd)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            let start = skipSpace(bytes, index + 1)
            guard let end = skipValue(bytes, start), end > start else { return nil }
            if key.elementsEqual(wanted) { return bytes[start..<end] }
            index = skipSpace(bytes, end)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }

    private static func skipSpace(_ bytes: [UInt8], _ start: Int) -> Int {
        var index = start
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        return index
    }

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
