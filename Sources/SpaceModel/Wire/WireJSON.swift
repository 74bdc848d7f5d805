import Foundation
import Mailbox

/// JSON for the space API's bodies, both directions, without Foundation's `JSONDecoder` and
/// `JSONEncoder` on the common path: they were about a tenth of the server's, the attendant's and
/// each joiner's CPU per join (docs/bot.md, "Session 12"). Any `Codable` type goes through here;
/// ``EventListReader`` stays for the event list, which is larger and read by every joiner.
///
/// Reading parses with Mailbox's strict ``JSONParser`` and hands the tree to the type's own
/// `init(from:)`. It takes only what it reads exactly as `JSONDecoder` would: objects without
/// repeated keys, integers in plain form, strings, booleans and null. On anything else (a
/// fraction, an exponent, Foundation's special types such as `Data` and `Date`, text the
/// parser refuses) it gives up, even where the type itself catches the error, and the whole
/// body goes to `JSONDecoder`, which accepts or refuses it, with its error, exactly as before.
///
/// Writing gives the same bytes as ``SpaceWire/EventList/encoder`` (`JSONEncoder` with sorted
/// keys and slashes as they are; on Linux keys sort by their UTF-8 bytes): events are stored
/// and spliced in that form, and ``EventListReader`` reads only it. Anything it does not write
/// exactly as `JSONEncoder` does (a floating-point number, Foundation's special types, a value
/// that encodes nothing) goes to `JSONEncoder`. `WireJSONTests` compare the two both ways.
public enum WireJSON {
    /// Decodes `type` from `bytes` as `JSONDecoder` with `userInfo` would.
    public static func decode<T: Decodable>(
        _ type: T.Type, from bytes: [UInt8], userInfo: [CodingUserInfoKey: any Sendable] = [:]
    ) throws -> T {
        if userInfo.isEmpty, let value = strictDecode(type, from: bytes) { return value }
        if let value = fastDecode(type, from: bytes, userInfo: userInfo) { return value }
        let decoder = JSONDecoder()
        decoder.userInfo = userInfo
        return try decoder.decode(type, from: Data(bytes))
    }

    /// The bytes `SpaceWire.EventList.encoder` writes for `value`.
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        if let writable = value as? any DirectJSONWritable {
            var out: [UInt8] = []
            writable.writeJSON(into: &out)
            return out
        }
        if let bytes = directEncode(value) ?? fastEncode(value) { return bytes }
        return Array(try SpaceWire.EventList.encoder.encode(value))
    }

    /// The answers the server writes most (`GET …/wraps` to every joiner, `GET …/threads`),
    /// written field by field without `Codable`: the generic writer spent most of its time in
    /// `Codable`'s own machinery there. Keys in the sorted order `JSONEncoder` writes them;
    /// `WireJSONTests` compare the bytes.
    static func directEncode<T: Encodable>(_ value: T) -> [UInt8]? {
        var out: [UInt8] = []
        if T.self == SpaceWire.WrapList.self {
            let list = value as! SpaceWire.WrapList
            out.reserveCapacity(64 + list.wraps.count * 400 + (list.bundles?.count ?? 0) * 600)
            out += #"{"#.utf8
            if let bundles = list.bundles { writeBundles(bundles, into: &out) }
            out += #""wraps":["#.utf8
            for (index, wrap) in list.wraps.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(wrap, into: &out)
            }
            out += "]}".utf8
        } else if T.self == SpaceWire.ThreadList.self {
            let list = value as! SpaceWire.ThreadList
            out.reserveCapacity(16 + list.threads.count * 160)
            out += #"{"threads":["#.utf8
            for (index, thread) in list.threads.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out += #"{"createdAt":"#.utf8
                out += String(thread.createdAt).utf8
                field("createdBy", thread.createdBy.base64URL, into: &out)
                field("id", thread.id.base64URL, into: &out)
                if let messages = thread.messages {
                    out += #","messages":"#.utf8
                    out += String(messages).utf8
                }
                if let metadata = thread.metadata { field("metadata", metadata, into: &out) }
                out.append(UInt8(ascii: "}"))
            }
            out += "]}".utf8
        } else if T.self == SpaceWire.EventsRequest.self {
            // The attendant's admission: its joiners' bundles (most of the body) written here,
            // the events by the generic writer (a `MembershipEvent` has many shapes).
            let request = value as! SpaceWire.EventsRequest
            guard let events = fastEncode(request.events) else { return nil }
            out.reserveCapacity(events.count + 32 + (request.bundles?.count ?? 0) * 600)
            out += #"{"#.utf8
            if let bundles = request.bundles { writeBundles(bundles, into: &out) }
            out += #""events":"#.utf8
            out += events
            if let count = request.threadCount {
                out += #","threadCount":"#.utf8
                out += String(count).utf8
            }
            out.append(UInt8(ascii: "}"))
        } else {
            return nil
        }
        return out
    }

    /// `"bundles":[…],`: the first field of the bodies that carry wrap bundles (keys sorted).
    static func writeBundles(_ bundles: [KeyWrapBundle], into out: inout [UInt8]) {
        out += #""bundles":["#.utf8
        for (index, bundle) in bundles.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            write(bundle, into: &out)
        }
        out += "],".utf8
    }

    /// `,"name":"text"`, the text escaped as `JSONEncoder` escapes it.
    static func field(_ name: StaticString, _ text: String, into out: inout [UInt8]) {
        out += #",""#.utf8
        name.withUTF8Buffer { out += $0 }
        out += #"":"#.utf8
        WriteNode.writeString(text, into: &out)
    }

    /// `,"name":number`.
    static func field(_ name: StaticString, _ number: some BinaryInteger, into out: inout [UInt8]) {
        out += #",""#.utf8
        name.withUTF8Buffer { out += $0 }
        out += #"":"#.utf8
        out += String(number).utf8
    }

    static func write(_ wrap: KeyWrap, into out: inout [UInt8]) {
        out += #"{"recipient":"#.utf8
        WriteNode.writeString(wrap.recipient.base64URL, into: &out)
        field("sealed", Base64URL.encode(wrap.sealed), into: &out)
        field("signature", Base64URL.encode(wrap.signature.bytes), into: &out)
        field("signer", Base64URL.encode(wrap.signer.bytes), into: &out)
        field("space", wrap.space.base64URL, into: &out)
        field("thread", wrap.thread.base64URL, into: &out)
        out.append(UInt8(ascii: "}"))
    }

    static func write(_ bundle: KeyWrapBundle, into out: inout [UInt8]) {
        out += #"{"entries":["#.utf8
        for (index, entry) in bundle.entries.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += #"{"nonce":"#.utf8
            WriteNode.writeString(Base64URL.encode(entry.nonce), into: &out)
            field("sealed", Base64URL.encode(entry.sealed), into: &out)
            field("thread", entry.thread.base64URL, into: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        field("ephemeral", Base64URL.encode(bundle.ephemeral), into: &out)
        field("recipient", bundle.recipient.base64URL, into: &out)
        field("signature", Base64URL.encode(bundle.signature.bytes), into: &out)
        field("signer", Base64URL.encode(bundle.signer.bytes), into: &out)
        field("space", bundle.space.base64URL, into: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// The value when `type` has a hand reader (``StrictJSONReadable``) and it takes the whole
    /// text; nil when it has none or gives up. Only without `userInfo`: the hand readers check
    /// every field in full, as the types' decoders do when nothing is vouched for.
    static func strictDecode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) -> T? {
        guard let readable = type as? any StrictJSONReadable.Type else { return nil }
        var reader = StrictJSONReader(bytes)
        guard let value = readable.read(&reader), reader.atEnd() else { return nil }
        return value as? T
    }

    /// The value when the fast reader takes the text; nil when it gives up.
    static func fastDecode<T: Decodable>(
        _ type: T.Type, from bytes: [UInt8], userInfo: [CodingUserInfoKey: any Sendable]
    ) -> T? {
        guard let tree = try? JSONParser.parse(bytes) else { return nil }
        let state = ReadState(userInfo: userInfo)
        guard let value = try? state.decode(type, from: tree), !state.gaveUp else { return nil }
        return value
    }

    /// The bytes when the fast writer writes `value` exactly as `JSONEncoder` would; else nil.
    static func fastEncode<T: Encodable>(_ value: T) -> [UInt8]? {
        let state = WriteState()
        let root = WriteNode()
        guard (try? state.encode(value, into: root)) != nil, !state.gaveUp else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(256)
        guard root.write(into: &out) else { return nil }
        return out
    }

    /// Foundation's types that `JSONDecoder` and `JSONEncoder` treat specially (and the floating
    /// point types, whose text is not this reader's to match): left to Foundation.
    static func isSpecial(_ type: Any.Type) -> Bool {
        type == Data.self || type == Date.self || type == URL.self || type == Decimal.self
            || type == Double.self || type == Float.self
    }
}

/// Why the fast path stopped: the body goes to Foundation.
struct WireJSONGaveUp: Error {}

// MARK: Reading

/// Shared by every container of one decode: `gaveUp` is set by every failure, so a type that
/// catches one (`try?`) still sends the body to `JSONDecoder`.
final class ReadState {
    let userInfo: [CodingUserInfoKey: Any]
    var gaveUp = false

    init(userInfo: [CodingUserInfoKey: any Sendable]) {
        self.userInfo = userInfo
    }

    func fail() -> WireJSONGaveUp {
        gaveUp = true
        return WireJSONGaveUp()
    }

    func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        switch value {
        case .string(let text) where type == String.self: return text as! T
        case .bool(let flag) where type == Bool.self: return flag as! T
        default: break
        }
        if WireJSON.isSpecial(type) { throw fail() }
        return try T(from: TreeDecoder(value: value, state: self))
    }

    func string(_ value: JSONValue) throws -> String {
        guard case .string(let text) = value else { throw fail() }
        return text
    }

    func bool(_ value: JSONValue) throws -> Bool {
        guard case .bool(let flag) = value else { throw fail() }
        return flag
    }

    /// An integer written plainly (`0`, `-12`, `345`), in range; anything else gives up.
    func integer<I: FixedWidthInteger>(_ value: JSONValue, as: I.Type) throws -> I {
        guard case .number(let number) = value else { throw fail() }
        let text = number.text
        let digits = text.utf8.drop { $0 == UInt8(ascii: "-") }
        guard digits.count == text.utf8.count || (I.isSigned && digits.count == text.utf8.count - 1),
            !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            digits.count == 1 || digits.first != UInt8(ascii: "0"), text != "-0",
            let result = I(text)
        else { throw fail() }
        return result
    }
}

struct TreeDecoder: Decoder {
    let value: JSONValue
    let state: ReadState

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { state.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else { throw state.fail() }
        // `JSONDecoder` decides which of a repeated key's values counts.
        let members = object.members
        for i in members.indices.dropFirst() {
            let key = members[i].key
            for j in 0..<i where members[j].key == key { throw state.fail() }
        }
        return KeyedDecodingContainer(KeyedTreeReader<Key>(object: object, state: state))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw state.fail() }
        return UnkeyedTreeReader(elements: elements, state: state)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleTreeReader(value: value, state: state)
    }
}

struct KeyedTreeReader<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: JSONObject
    let state: ReadState

    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { object.members.compactMap { Key(stringValue: $0.key) } }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func value(_ key: Key) throws -> JSONValue {
        guard let value = object[key.stringValue] else { throw state.fail() }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try state.bool(value(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try state.string(value(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { throw state.fail() }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw state.fail() }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try state.integer(value(key), as: type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try state.integer(value(key), as: type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
        try state.integer(value(key), as: type)
    }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
        try state.integer(value(key), as: type)
    }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        try state.integer(value(key), as: type)
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try state.integer(value(key), as: type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
        try state.integer(value(key), as: type)
    }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try state.integer(value(key), as: type)
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try state.integer(value(key), as: type)
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try state.integer(value(key), as: type)
    }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try state.decode(type, from: value(key))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try TreeDecoder(value: value(key), state: state).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try TreeDecoder(value: value(key), state: state).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { throw state.fail() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw state.fail() }
}

struct UnkeyedTreeReader: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let state: ReadState
    var currentIndex = 0

    init(elements: [JSONValue], state: ReadState) {
        self.elements = elements
        self.state = state
    }

    var codingPath: [any CodingKey] { [] }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next() throws -> JSONValue {
        guard currentIndex < elements.count else { throw state.fail() }
        defer { currentIndex += 1 }
        return elements[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard currentIndex < elements.count else { throw state.fail() }
        guard elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try state.bool(next()) }
    mutating func decode(_ type: String.Type) throws -> String { try state.string(next()) }
    mutating func decode(_ type: Double.Type) throws -> Double { throw state.fail() }
    mutating func decode(_ type: Float.Type) throws -> Float { throw state.fail() }
    mutating func decode(_ type: Int.Type) throws -> Int { try state.integer(next(), as: type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try state.integer(next(), as: type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try state.integer(next(), as: type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try state.integer(next(), as: type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try state.integer(next(), as: type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try state.integer(next(), as: type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try state.integer(next(), as: type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try state.integer(next(), as: type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try state.integer(next(), as: type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try state.integer(next(), as: type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try state.decode(type, from: next()) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try TreeDecoder(value: next(), state: state).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try TreeDecoder(value: next(), state: state).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { throw state.fail() }
}

struct SingleTreeReader: SingleValueDecodingContainer {
    let value: JSONValue
    let state: ReadState

    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try state.bool(value) }
    func decode(_ type: String.Type) throws -> String { try state.string(value) }
    func decode(_ type: Double.Type) throws -> Double { throw state.fail() }
    func decode(_ type: Float.Type) throws -> Float { throw state.fail() }
    func decode(_ type: Int.Type) throws -> Int { try state.integer(value, as: type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try state.integer(value, as: type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try state.integer(value, as: type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try state.integer(value, as: type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try state.integer(value, as: type) }
    func decode(_ type: UInt.Type) throws -> UInt { try state.integer(value, as: type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try state.integer(value, as: type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try state.integer(value, as: type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try state.integer(value, as: type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try state.integer(value, as: type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try state.decode(type, from: value) }
}

// MARK: Writing

/// One value being written: containers handed out earlier fill it in later, so it is a reference.
final class WriteNode {
    enum Content {
        case unset
        case null
        case literal(String)
        case string(String)
        case array([WriteNode])
        /// Keys in the order first set; a key set again keeps its place and takes the new value,
        /// as `JSONEncoder`'s dictionary does.
        case object(keys: [String], values: [WriteNode])
    }

    var content = Content.unset

    /// Writes the value; false when something in it was never given a value (`JSONEncoder`
    /// writes `{}` there: left to it).
    func write(into out: inout [UInt8]) -> Bool {
        switch content {
        case .unset: return false
        case .null: out += "null".utf8
        case .literal(let text):
            var text = text
            text.withUTF8 { out.append(contentsOf: $0) }
        case .string(let text): Self.writeString(text, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                guard element.write(into: &out) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        case .object(let keys, let values):
            out.append(UInt8(ascii: "{"))
            let order = keys.indices.sorted { keys[$0].utf8.lexicographicallyPrecedes(keys[$1].utf8) }
            for (index, member) in order.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(keys[member], into: &out)
                out.append(UInt8(ascii: ":"))
                guard values[member].write(into: &out) else { return false }
            }
            out.append(UInt8(ascii: "}"))
        }
        return true
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// `JSONEncoder`'s escapes: quote, backslash, `\b \f \n \r \t`, other control characters
    /// as `\u00xx`; everything else (slashes too) as it is.
    static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var run = 0
            for i in 0..<bytes.count {
                let b = bytes[i]
                guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
                if run < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i])) }
                run = i + 1
                out.append(UInt8(ascii: "\\"))
                switch b {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(b)
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                default:
                    out += "u00".utf8
                    out.append(hexDigits[Int(b >> 4)])
                    out.append(hexDigits[Int(b & 0xF)])
                }
            }
            if run < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run...])) }
        }
        out.append(UInt8(ascii: "\""))
    }

    func set(_ key: String, _ node: WriteNode, state: WriteState) throws {
        switch content {
        case .object(var keys, var values):
            content = .unset
            if let index = keys.firstIndex(of: key) {
                values[index] = node
            } else {
                keys.append(key)
                values.append(node)
            }
            content = .object(keys: keys, values: values)
        default: throw state.fail()
        }
    }

    func append(_ node: WriteNode, state: WriteState) throws {
        guard case .array(var elements) = content else { throw state.fail() }
        content = .unset
        elements.append(node)
        content = .array(elements)
    }
}

final class WriteState {
    var gaveUp = false

    func fail() -> WireJSONGaveUp {
        gaveUp = true
        return WireJSONGaveUp()
    }

    func encode<T: Encodable>(_ value: T, into node: WriteNode) throws {
        switch value {
        case let text as String: node.content = .string(text)
        case let flag as Bool: node.content = .literal(flag ? "true" : "false")
        default:
            if WireJSON.isSpecial(T.self) { throw fail() }
            try value.encode(to: TreeEncoder(node: node, state: self))
        }
    }

    func node<T: Encodable>(_ value: T) throws -> WriteNode {
        let node = WriteNode()
        try encode(value, into: node)
        return node
    }

    static func literal(_ text: String) -> WriteNode {
        let node = WriteNode()
        node.content = .literal(text)
        return node
    }

    static func string(_ text: String) -> WriteNode {
        let node = WriteNode()
        node.content = .string(text)
        return node
    }
}

struct TreeEncoder: Encoder {
    let node: WriteNode
    let state: WriteState

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        switch node.content {
        case .unset: node.content = .object(keys: [], values: [])
        case .object: break
        default: state.gaveUp = true
        }
        return KeyedEncodingContainer(KeyedTreeWriter<Key>(node: node, state: state))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        switch node.content {
        case .unset: node.content = .array([])
        case .array: break
        default: state.gaveUp = true
        }
        return UnkeyedTreeWriter(node: node, state: state)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleTreeWriter(node: node, state: state)
    }
}

struct KeyedTreeWriter<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: WriteNode
    let state: WriteState

    var codingPath: [any CodingKey] { [] }

    private func put(_ child: WriteNode, _ key: Key) throws {
        try node.set(key.stringValue, child, state: state)
    }

    mutating func encodeNil(forKey key: Key) throws {
        let child = WriteNode()
        child.content = .null
        try put(child, key)
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        try put(WriteState.literal(value ? "true" : "false"), key)
    }
    mutating func encode(_ value: String, forKey key: Key) throws { try put(WriteState.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { throw state.fail() }
    mutating func encode(_ value: Float, forKey key: Key) throws { throw state.fail() }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        try put(WriteState.literal(String(value)), key)
    }
    mutating func encode(_ value: Int8, forKey key: Key) throws {
        try put(WriteState.literal(String(value)), key)
    }
    mutating func encode(_ value: Int16, forKey key: Key) throws {
        try put(WriteState.literal(String(value)), key)
    }
    mutating func encode(_ value: Int32, forKey key: Key) throws {
        try put(WriteState.literal(String(value)), key)
    }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        try put(WriteState.literal(String(value)), key)
    }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        try put(WriteState.literal(String(value)), key)
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws {
        try put(WriteState.literal(String(value)), key)
    }
    mutating func encode(_ value: UInt16, forKey key: Key) throws {
        try put(WriteState.literal(String(value)), key)
    }
    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        try put(WriteState.literal(String(value)), key)
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        try put(WriteState.literal(String(value)), key)
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try put(state.node(value), key) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = WriteNode()
        if (try? put(child, key)) == nil { state.gaveUp = true }
        return TreeEncoder(node: child, state: state).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = WriteNode()
        if (try? put(child, key)) == nil { state.gaveUp = true }
        return TreeEncoder(node: child, state: state).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        state.gaveUp = true
        return TreeEncoder(node: WriteNode(), state: state)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        state.gaveUp = true
        return TreeEncoder(node: WriteNode(), state: state)
    }
}

struct UnkeyedTreeWriter: UnkeyedEncodingContainer {
    let node: WriteNode
    let state: WriteState

    var codingPath: [any CodingKey] { [] }
    var count: Int {
        if case .array(let elements) = node.content { return elements.count }
        return 0
    }

    private func add(_ child: WriteNode) throws { try node.append(child, state: state) }

    mutating func encodeNil() throws {
        let child = WriteNode()
        child.content = .null
        try add(child)
    }
    mutating func encode(_ value: Bool) throws { try add(WriteState.literal(value ? "true" : "false")) }
    mutating func encode(_ value: String) throws { try add(WriteState.string(value)) }
    mutating func encode(_ value: Double) throws { throw state.fail() }
    mutating func encode(_ value: Float) throws { throw state.fail() }
    mutating func encode(_ value: Int) throws { try add(WriteState.literal(String(value))) }
    mutating func encode(_ value: Int8) throws { try add(WriteState.literal(String(value))) }
    mutating func encode(_ value: Int16) throws { try add(WriteState.literal(String(value))) }
    mutating func encode(_ value: Int32) throws { try add(WriteState.literal(String(value))) }
    mutating func encode(_ value: Int64) throws { try add(WriteState.literal(String(value))) }
    mutating func encode(_ value: UInt) throws { try add(WriteState.literal(String(value))) }
    mutating func encode(_ value: UInt8) throws { try add(WriteState.literal(String(value))) }
    mutating func encode(_ value: UInt16) throws { try add(WriteState.literal(String(value))) }
    mutating func encode(_ value: UInt32) throws { try add(WriteState.literal(String(value))) }
    mutating func encode(_ value: UInt64) throws { try add(WriteState.literal(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws { try add(state.node(value)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = WriteNode()
        if (try? add(child)) == nil { state.gaveUp = true }
        return TreeEncoder(node: child, state: state).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = WriteNode()
        if (try? add(child)) == nil { state.gaveUp = true }
        return TreeEncoder(node: child, state: state).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        state.gaveUp = true
        return TreeEncoder(node: WriteNode(), state: state)
    }
}

struct SingleTreeWriter: SingleValueEncodingContainer {
    let node: WriteNode
    let state: WriteState

    var codingPath: [any CodingKey] { [] }

    /// A single value is set once, on a value nothing else has written.
    private func set(_ content: WriteNode.Content) throws {
        guard case .unset = node.content else { throw state.fail() }
        node.content = content
    }

    mutating func encodeNil() throws { try set(.null) }
    mutating func encode(_ value: Bool) throws { try set(.literal(value ? "true" : "false")) }
    mutating func encode(_ value: String) throws { try set(.string(value)) }
    mutating func encode(_ value: Double) throws { throw state.fail() }
    mutating func encode(_ value: Float) throws { throw state.fail() }
    mutating func encode(_ value: Int) throws { try set(.literal(String(value))) }
    mutating func encode(_ value: Int8) throws { try set(.literal(String(value))) }
    mutating func encode(_ value: Int16) throws { try set(.literal(String(value))) }
    mutating func encode(_ value: Int32) throws { try set(.literal(String(value))) }
    mutating func encode(_ value: Int64) throws { try set(.literal(String(value))) }
    mutating func encode(_ value: UInt) throws { try set(.literal(String(value))) }
    mutating func encode(_ value: UInt8) throws { try set(.literal(String(value))) }
    mutating func encode(_ value: UInt16) throws { try set(.literal(String(value))) }
    mutating func encode(_ value: UInt32) throws { try set(.literal(String(value))) }
    mutating func encode(_ value: UInt64) throws { try set(.literal(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        guard case .unset = node.content else { throw state.fail() }
        try state.encode(value, into: node)
    }
}
