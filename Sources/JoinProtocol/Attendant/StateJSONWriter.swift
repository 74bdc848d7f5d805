import Mailbox

/// Writes a saved state as JSON straight into bytes, member by member, in the shape the
/// synthesized `Codable` of the same types has (`JSONDecoder` reads it back as that value, so a
/// file written this way opens in a build that only knows `Codable`, and the other way round).
///
/// Why not `JSONEncoder`: the bot seals and writes an invite's ``InviteAttendant`` at (nearly)
/// every step of every join, and Foundation's encoder was about a seventh of the bot's CPU.
/// Strings go through ``JSONWriter/writeString(_:into:)`` (one escaping rule for all JSON written
/// here).
public struct StateJSONWriter {
    /// The JSON so far. The caller zeroes it when it held a secret.
    public var bytes: [UInt8] = []
    /// Whether the object or array being written has no member yet (no comma before the next).
    private var first = true

    public init(capacity: Int = 1024) { bytes.reserveCapacity(capacity) }

    // MARK: Members of an object

    /// Starts member `key`; its value follows.
    public mutating func key(_ key: String) {
        separate()
        JSONWriter.writeString(key, into: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func string(_ key: String, _ value: String) {
        self.key(key)
        JSONWriter.writeString(value, into: &bytes)
    }

    public mutating func integer(_ key: String, _ value: some BinaryInteger) {
        self.key(key)
        integer(value)
    }

    public mutating func bool(_ key: String, _ value: Bool) {
        self.key(key)
        bool(value)
    }

    /// `"key":{"value":"…"}`: the shape of the mailbox identifiers (``Mailbox/Side``, …).
    public mutating func wrapped(_ key: String, _ value: String) {
        self.key(key)
        wrapped(value)
    }

    /// `"key":{…}`, its members written by `body`.
    public mutating func object(_ key: String, _ body: (inout StateJSONWriter) -> Void) {
        self.key(key)
        object(body)
    }

    /// `"key":[…]`, its elements written by `body` (each after ``element()``).
    public mutating func array(_ key: String, _ body: (inout StateJSONWriter) -> Void) {
        self.key(key)
        array(body)
    }

    /// `"key":` and JSON written elsewhere, as it is.
    public mutating func raw(_ key: String, _ json: some Sequence<UInt8>) {
        self.key(key)
        bytes.append(contentsOf: json)
    }

    // MARK: Values (an array's element after ``element()``, or a member's after ``key(_:)``)

    /// Starts the next element of an array.
    public mutating func element() { separate() }

    public mutating func string(_ value: String) { JSONWriter.writeString(value, into: &bytes) }

    public mutating func integer(_ value: some BinaryInteger) { bytes.append(contentsOf: String(value).utf8) }

    public mutating func bool(_ value: Bool) { bytes.append(contentsOf: (value ? "true" : "false").utf8) }

    public mutating func wrapped(_ value: String) {
        object { $0.string("value", value) }
    }

    public mutating func object(_ body: (inout StateJSONWriter) -> Void) {
        bytes.append(UInt8(ascii: "{"))
        nested(body)
        bytes.append(UInt8(ascii: "}"))
    }

    public mutating func array(_ body: (inout StateJSONWriter) -> Void) {
        bytes.append(UInt8(ascii: "["))
        nested(body)
        bytes.append(UInt8(ascii: "]"))
    }

    private mutating func nested(_ body: (inout StateJSONWriter) -> Void) {
        let outer = first
        first = true
        body(&self)
        first = outer
    }

    private mutating func separate() {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
    }
}
