/// Compact JSON for the small objects ClientCore writes by hand on every join (relay frames,
/// join messages), without Foundation's `JSONSerialization`, which boxes every value and escapes
/// long strings slowly. Keys come out sorted (as `.sortedKeys` writes them); strings are escaped
/// as RFC 8259 asks.
enum JSONText {
    case string(String)
    case int(Int)
    case strings([String])
    /// A JSON object's text, inserted as it is; see ``isSingleObject(_:)``.
    case object([UInt8])
    /// An array of objects.
    case objects([[String: JSONText]])

    /// `{"key":value,…}` with the keys sorted.
    static func object(_ members: [String: JSONText]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        out.append(UInt8(ascii: "{"))
        for (index, key) in members.keys.sorted().enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            writeString(key, into: &out)
            out.append(UInt8(ascii: ":"))
            members[key]?.write(into: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    private func write(into out: inout [UInt8]) {
        switch self {
        case .string(let text): Self.writeString(text, into: &out)
        case .int(let value): out.append(contentsOf: String(value).utf8)
        case .strings(let list):
            out.append(UInt8(ascii: "["))
            for (index, text) in list.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(text, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let bytes): out.append(contentsOf: bytes)
        case .objects(let list):
            out.append(UInt8(ascii: "["))
            for (index, members) in list.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: Self.object(members))
            }
            out.append(UInt8(ascii: "]"))
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

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
