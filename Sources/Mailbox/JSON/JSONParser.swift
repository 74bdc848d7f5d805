/// Why a payload is not the JSON the relay accepts.
public struct JSONParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Byte offset of the problem in the payload.
    public let offset: Int
    public let reason: String
    public var description: String { "\(reason) at byte \(offset)" }
}

/// A strict RFC 8259 parser over UTF-8 bytes, with a nesting limit so hostile input cannot
/// exhaust the stack. Rejects what JSON forbids (NaN, trailing commas, lone surrogates,
/// control characters in strings, invalid UTF-8, trailing garbage).
public struct JSONParser {
    /// Deepest array/object nesting accepted.
    public static let maximumDepth = 64

    private let bytes: [UInt8]
    private var index = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Parses one JSON text (a value surrounded by optional whitespace).
    public static func parse(_ bytes: some Sequence<UInt8>) throws(JSONParseError) -> JSONValue {
        try parse(Array(bytes))
    }

    /// Parses one JSON text held in an array. Not generic, so callers in other modules (the
    /// relay reads every frame through here) call it directly rather than through a generic
    /// entry point this module cannot specialise for them.
    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else {
            throw parser.error("unexpected data after the value")
        }
        return value
    }

    /// Parses a JSON text given as a string.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Reads a JSON text that must be one object, one level deep: the whole text is checked as
    /// ``parse(_:)`` checks it (grammar, nesting limit, UTF-8), the members' strings, numbers
    /// and literals are made, and their objects and arrays are only checked and located (made
    /// when asked for). A reader that wants a nested object's text rather than its tree (a join
    /// grant of kilobytes) then never builds the tree.
    public static func members(_ bytes: [UInt8]) throws(JSONParseError) -> JSONMembers {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        guard parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: "{") else {
            throw parser.error("expected an object")
        }
        parser.index += 1
        var members: [JSONMembers.Member] = []
        parser.skipWhitespace()
        if parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: "}") {
            parser.index += 1
        } else {
            while true {
                parser.skipWhitespace()
                guard parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: "\"") else {
                    throw parser.error("expected a member name")
                }
                let key = try parser.parseString()
                parser.skipWhitespace()
                guard parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: ":") else {
                    throw parser.error("expected ':'")
                }
                parser.index += 1
                parser.skipWhitespace()
                guard parser.index < bytes.count else { throw parser.error("unexpected end of input") }
                let start = parser.index
                switch bytes[start] {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    // The top-level object is depth 1, as in `parse`.
                    try parser.skipValue(depth: 1)
                    members.append(JSONMembers.Member(key: key, value: .nested(start..<parser.index)))
                default:
                    members.append(
                        JSONMembers.Member(key: key, value: .made(try parser.parseValue(depth: 1))))
                }
                parser.skipWhitespace()
                guard parser.index < bytes.count else { throw parser.error("unexpected end of input") }
                if bytes[parser.index] == UInt8(ascii: ",") {
                    parser.index += 1
                } else if bytes[parser.index] == UInt8(ascii: "}") {
                    parser.index += 1
                    break
                } else {
                    throw parser.error("expected ',' or '}'")
                }
            }
        }
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected data after the value") }
        return JSONMembers(bytes: bytes, members: members)
    }

    private func error(_ reason: String) -> JSONParseError { JSONParseError(offset: index, reason: reason) }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try parseNumber())
        default:
            throw error("unexpected character")
        }
    }

    /// Checks the value at `index` as ``parseValue(depth:)`` does and moves past it, making
    /// nothing but the short text of its numbers.
    private mutating func skipValue(depth: Int) throws(JSONParseError) {
        guard index < bytes.count else { throw error("unexpected end of input") }
        let open = bytes[index]
        guard open == UInt8(ascii: "{") || open == UInt8(ascii: "[") else {
            if open == UInt8(ascii: "\"") {
                _ = try scanString(making: false)
            } else {
                _ = try parseValue(depth: depth)
            }
            return
        }
        let isObject = open == UInt8(ascii: "{")
        let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        guard depth + 1 <= Self.maximumDepth else { throw error("nested too deeply") }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == close {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            if isObject {
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw error("expected a member name")
                }
                _ = try scanString(making: false)
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                    throw error("expected ':'")
                }
                index += 1
                skipWhitespace()
            }
            try skipValue(depth: depth + 1)
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == close {
                index += 1
                return
            } else {
                throw error(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
            }
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of input") }
        let matches = literal.withUTF8Buffer { lit in
            (0..<count).allSatisfy { bytes[index + $0] == lit[$0] }
        }
        guard matches else { throw error("invalid literal") }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw error("nested too deeply") }
        index += 1
        var object = JSONObject()
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("expected a member name")
            }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            object.append(key, value)
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(object)
            } else {
                throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw error("nested too deeply") }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            } else {
                throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        return JSONNumber(validatedText: String(decoding: bytes[start..<index], as: UTF8.self))
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    private mutating func parseString() throws(JSONParseError) -> String {
        // Always made when asked to be.
        try scanString(making: true) ?? ""
    }

    /// Checks the string that starts at `index` and moves past it; makes it only when `making`
    /// (a skipped value's strings are checked, never made).
    private mutating func scanString(making: Bool) throws(JSONParseError) -> String? {
        index += 1  // opening quote
        // Filled only once an escape comes: a string without one (nearly every string, a
        // message's hex body of kilobytes among them) is made from the input's bytes directly.
        var out: [UInt8] = []
        var escaped = false
        var runStart = index
        while true {
            index = Self.plainASCIIEnd(bytes, from: index)
            guard index < bytes.count else { throw error("unterminated string") }
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let run = bytes[runStart..<index]
                index += 1
                guard making else { return nil }
                // Checked as UTF-8 on the way (`skipUTF8Sequence`).
                guard escaped else { return String(decoding: run, as: UTF8.self) }
                out.append(contentsOf: run)
                break
            }
            if b < 0x20 { throw error("control character in string") }
            if b == UInt8(ascii: "\\") {
                escaped = true
                if making { out.append(contentsOf: bytes[runStart..<index]) }
                try parseEscape(into: &out)
                runStart = index
                continue
            }
            // Past the ASCII run: the start of a multi-byte sequence.
            try skipUTF8Sequence()
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Where the run of printable ASCII other than `"` and `\` that starts at `start` ends: the
    /// bytes a string holds as they are, scanned without a bounds check per byte.
    private static func plainASCIIEnd(_ bytes: [UInt8], from start: Int) -> Int {
        bytes.withUnsafeBufferPointer { buffer in
            var at = start
            while at < buffer.count {
                let b = buffer[at]
                if b < 0x20 || b >= 0x80 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { break }
                at += 1
            }
            return at
        }
    }

    private mutating func parseEscape(into out: inout [UInt8]) throws(JSONParseError) {
        index += 1
        guard index < bytes.count else { throw error("unterminated escape") }
        let e = bytes[index]
        index += 1
        switch e {
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "/"): out.append(0x2F)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else { throw error("lone surrogate in string") }
                index += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw error("lone surrogate in string") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw error("lone surrogate in string")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid escape") }
            out.append(contentsOf: Array(String(Character(unicode)).utf8))
        default:
            throw error("invalid escape")
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let digit: UInt32
            switch b {
            case 0x30...0x39: digit = UInt32(b - 0x30)
            case 0x41...0x46: digit = UInt32(b - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(b - 0x61 + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// Validates one multi-byte UTF-8 sequence (no overlongs, no surrogates, ≤ U+10FFFF).
    private mutating func skipUTF8Sequence() throws(JSONParseError) {
        let b0 = bytes[index]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch b0 {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            high = 0x9F
        case 0xF0:
            length = 4
            low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            high = 0x8F
        default: throw error("invalid UTF-8")
        }
        guard index + length <= bytes.count else { throw error("invalid UTF-8") }
        let b1 = bytes[index + 1]
        guard b1 >= low, b1 <= high else { throw error("invalid UTF-8") }
        for k in 2..<max(2, length) {
            let b = bytes[index + k]
            guard b >= 0x80, b <= 0xBF else { throw error("invalid UTF-8") }
        }
        index += length
    }
}
