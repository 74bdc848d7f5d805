/// A JSON value as the mailbox protocol needs it: object members keep their order and numbers
/// keep their exact text, so values the relay echoes (`orig`, `id`, `pong`) go back as sent.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number's text exactly as it appeared (already checked against the JSON grammar).
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The string, when this is one.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The object, when this is one.
    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The number as an integer, when it is one exactly (`5`, `5.0`); nil for anything else.
    public var integerValue: Int? {
        guard case .number(let n) = self else { return nil }
        return Int(n.text) ?? n.doubleValue.flatMap { Int(exactly: $0) }
    }

    /// A short name of the kind of value, for error messages.
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

/// A JSON number, kept as its text so echoing it is exact.
public struct JSONNumber: Sendable, Equatable, CustomStringConvertible {
    public let text: String

    /// A number from already-validated JSON text.
    init(validatedText: String) { self.text = validatedText }

    /// A number from a double, written in the shortest form that reads back the same.
    public init(_ value: Double) {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
            // `1764433206.0`, not `1.764433206e9`: integral values keep a fraction, no exponent.
            self.text = String(Int64(value)) + ".0"
        } else if value.isFinite {
            self.text = value.description
        } else {
            self.text = "0"
        }
    }

    /// A number from an integer.
    public init(_ value: Int) { self.text = String(value) }

    public var doubleValue: Double? { Double(text) }
    public var description: String { text }
}

/// A JSON object whose members keep their order. Lookups find the last member with a name, as
/// Python's `json.loads` does with duplicate names.
public struct JSONObject: Sendable, Equatable {
    public struct Member: Sendable, Equatable {
        public let key: String
        public let value: JSONValue
        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    public private(set) var members: [Member]

    public init(_ members: [Member] = []) { self.members = members }

    public init(_ pairs: KeyValuePairs<String, JSONValue>) {
        self.members = pairs.map { Member(key: $0.key, value: $0.value) }
    }

    public subscript(key: String) -> JSONValue? {
        for member in members.reversed() where member.key == key { return member.value }
        return nil
    }

    public func contains(_ key: String) -> Bool { self[key] != nil }

    /// Appends a member (the caller keeps names unique when building server messages).
    public mutating func append(_ key: String, _ value: JSONValue) {
        members.append(Member(key: key, value: value))
    }
}

/// A JSON object read one level deep by ``JSONParser/members(_:)``: its members in order, each
/// a made value or, for an object or an array, where its text lies. Lookups find the last member
/// with a name, as ``JSONObject``'s do.
public struct JSONMembers: Sendable {
    public enum Value: Sendable, Equatable {
        /// A string, number, boolean or null, made.
        case made(JSONValue)
        /// An object or an array, checked, at these bytes of the text.
        case nested(Range<Int>)
    }

    public struct Member: Sendable, Equatable {
        public let key: String
        public let value: Value
    }

    /// The whole text.
    public let bytes: [UInt8]
    public let members: [Member]

    /// The value of the last member named `key`, an object or array made now.
    public subscript(key: String) -> JSONValue? {
        guard let value = last(key) else { return nil }
        return self.value(value)
    }

    /// The value of a member, an object or array made now.
    public func value(_ value: Value) -> JSONValue {
        switch value {
        case .made(let made): return made
        // Checked by `members(_:)` at a greater depth than this, so it parses.
        case .nested(let range): return (try? JSONParser.parse(Array(bytes[range]))) ?? .null
        }
    }

    /// The text of the last member named `key` when it is an object or an array, exactly as sent.
    public func nestedText(_ key: String) -> ArraySlice<UInt8>? {
        guard case .nested(let range)? = last(key) else { return nil }
        return bytes[range]
    }

    private func last(_ key: String) -> Value? {
        for member in members.reversed() where member.key == key { return member.value }
        return nil
    }
}
