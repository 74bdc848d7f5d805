/// One server → client message of protocol v1. The relay writes it with
/// ``encoded(serverTX:)``, which adds `type` and `server_tx`, stamped just before the frame is
/// written; clients read it with ``init(decoding:)``.
///
/// Field sets follow the deployed server (0.8.0), not its older docs: only `ack` carries the
/// command's `id`; only `message` carries `server_rx` (and the `id` of the original `add`).
public enum ServerMessage: Sendable, Equatable {
    case welcome(Welcome)
    case ack(id: JSONValue)
    case pong(JSONValue)
    case nameplates([Nameplate])
    case allocated(Nameplate)
    case claimed(MailboxID)
    case released
    case message(StoredMessage)
    case closed
    case error(RelayError, orig: JSONValue)
    /// Any other `type` (a newer server's): clients ignore it. The relay never sends one.
    case unknown(type: String)

    /// The `type` string on the wire.
    public var type: String {
        switch self {
        case .welcome: return "welcome"
        case .ack: return "ack"
        case .pong: return "pong"
        case .nameplates: return "nameplates"
        case .allocated: return "allocated"
        case .claimed: return "claimed"
        case .released: return "released"
        case .message: return "message"
        case .closed: return "closed"
        case .error: return "error"
        case .unknown(let type): return type
        }
    }

    /// The JSON object sent on the wire.
    public func jsonObject(serverTX: RelayInstant) -> JSONObject {
        var o = JSONObject()
        o.append("type", .string(type))
        switch self {
        case .welcome(let welcome):
            o.append("welcome", .object(welcome.jsonObject))
        case .ack(let id):
            o.append("id", id)
        case .pong(let value):
            o.append("pong", value)
        case .nameplates(let names):
            let list = names.map { JSONValue.object(JSONObject(["id": .string($0.value)])) }
            o.append("nameplates", .array(list))
        case .allocated(let nameplate):
            o.append("nameplate", .string(nameplate.value))
        case .claimed(let mailbox):
            o.append("mailbox", .string(mailbox.value))
        case .released, .closed, .unknown:
            break
        case .message(let m):
            o.append("side", .string(m.side.value))
            o.append("phase", .string(m.phase.value))
            o.append("body", .string(m.body))
            o.append("server_rx", .number(JSONNumber(m.serverRX.secondsSince1970)))
            o.append("id", m.messageID)
        case .error(let error, let orig):
            o.append("error", .string(error.message))
            o.append("orig", orig)
        }
        o.append("server_tx", .number(JSONNumber(serverTX.secondsSince1970)))
        return o
    }

    /// The text of the WebSocket frame: the bytes of ``jsonObject(serverTX:)``, written
    /// straight into one buffer (the relay encodes every frame it sends; building the object
    /// first cost an array of members and a boxed value per field).
    public func encoded(serverTX: RelayInstant) -> String {
        String(decoding: encodedBytes(serverTXText: Self.serverTXText(serverTX)), as: UTF8.self)
    }

    /// `server_tx`'s JSON text for a time, as ``encoded(serverTX:)`` writes it.
    public static func serverTXText(_ serverTX: RelayInstant) -> String {
        JSONNumber(serverTX.secondsSince1970).text
    }

    /// The frame's UTF-8 bytes, as ``encoded(serverTX:)`` writes them, with `server_tx` already
    /// formatted (``serverTXText(_:)``): the relay stamps every frame of a batch with one time and
    /// hands the bytes to the socket as they are, with no `String` made and validated between.
    public func encodedBytes(serverTXText: String) -> [UInt8] {
        var out: [UInt8] = []
        if case .message(let m) = self {
            out.reserveCapacity(m.body.utf8.count + m.side.value.utf8.count + m.phase.value.utf8.count + 128)
        } else {
            out.reserveCapacity(96)
        }
        out.append(contentsOf: #"{"type":"#.utf8)
        JSONWriter.writeString(type, into: &out)
        func field(_ key: StaticString, _ value: JSONValue) {
            Self.key(key, into: &out)
            JSONWriter.write(value, into: &out)
        }
        func text(_ key: StaticString, _ value: String) {
            Self.key(key, into: &out)
            JSONWriter.writeString(value, into: &out)
        }
        switch self {
        case .welcome(let welcome): field("welcome", .object(welcome.jsonObject))
        case .ack(let id): field("id", id)
        case .pong(let value): field("pong", value)
        case .nameplates(let names):
            field("nameplates", .array(names.map { .object(JSONObject(["id": .string($0.value)])) }))
        case .allocated(let nameplate): text("nameplate", nameplate.value)
        case .claimed(let mailbox): text("mailbox", mailbox.value)
        case .released, .closed, .unknown: break
        case .message(let m):
            text("side", m.side.value)
            text("phase", m.phase.value)
            text("body", m.body)
            Self.key("server_rx", into: &out)
            out.append(contentsOf: (m.serverRXText ?? JSONNumber(m.serverRX.secondsSince1970).text).utf8)
            field("id", m.messageID)
        case .error(let error, let orig):
            text("error", error.message)
            field("orig", orig)
        }
        Self.key("server_tx", into: &out)
        out.append(contentsOf: serverTXText.utf8)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `,"key":` for a key that needs no escaping.
    private static func key(_ key: StaticString, into out: inout [UInt8]) {
        out.append(UInt8(ascii: ","))
        out.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }
}

/// The body of the `welcome` message; every key is optional.
public struct Welcome: Sendable, Equatable {
    /// Shown by clients, which then continue.
    public var motd: String?
    /// Deprecated nag for the Python CLI (`--advertise-version`).
    public var currentCLIVersion: String?
    /// Clients show it and stop (also used to turn away a connection over a limit).
    public var error: String?
    /// The client's own address as the relay sees it (server ≥ 0.8.0 sends it).
    public var yourAddress: ClientAddress?
    /// Admission methods the client must satisfy before `bind`, e.g. `{"hashcash": {…}}`.
    public var permissionRequired: JSONObject?

    public init(
        motd: String? = nil, currentCLIVersion: String? = nil, error: String? = nil,
        yourAddress: ClientAddress? = nil, permissionRequired: JSONObject? = nil
    ) {
        self.motd = motd
        self.currentCLIVersion = currentCLIVersion
        self.error = error
        self.yourAddress = yourAddress
        self.permissionRequired = permissionRequired
    }

    public var jsonObject: JSONObject {
        var o = JSONObject()
        if let motd { o.append("motd", .string(motd)) }
        if let currentCLIVersion { o.append("current_cli_version", .string(currentCLIVersion)) }
        if let error { o.append("error", .string(error)) }
        if let yourAddress {
            var a = JSONObject()
            a.append("port", .number(JSONNumber(yourAddress.port)))
            switch yourAddress.family {
            case .ipv4: a.append("ipv4", .string(yourAddress.host))
            case .ipv6: a.append("ipv6", .string(yourAddress.host))
            }
            o.append("your-address", .object(a))
        }
        if let permissionRequired { o.append("permission-required", .object(permissionRequired)) }
        return o
    }
}

/// A message in a mailbox, relayed verbatim: what the relay stores and sends as `message`.
public struct StoredMessage: Sendable, Equatable {
    public let side: Side
    public let phase: Phase
    /// The client's (hex, encrypted) body, exactly as added.
    public let body: String
    public let serverRX: RelayInstant
    /// The `id` of the `add` that brought it (null when the client sent none).
    public let messageID: JSONValue
    /// `server_rx`'s JSON text, when formatted ahead (``formattingServerRX()``): the relay
    /// formats it once per message, where every copy sent (the echo, the peer's, each replay)
    /// formatted it again. Not part of equality: it is `serverRX`, written out.
    public private(set) var serverRXText: String?

    public init(side: Side, phase: Phase, body: String, serverRX: RelayInstant, messageID: JSONValue) {
        self.side = side
        self.phase = phase
        self.body = body
        self.serverRX = serverRX
        self.messageID = messageID
    }

    /// The same message with ``serverRXText`` formatted, for a relay that will send it.
    public func formattingServerRX() -> StoredMessage {
        var copy = self
        copy.serverRXText = JSONNumber(serverRX.secondsSince1970).text
        return copy
    }

    public static func == (a: StoredMessage, b: StoredMessage) -> Bool {
        a.side == b.side && a.phase == b.phase && a.body == b.body && a.serverRX == b.serverRX
            && a.messageID == b.messageID
    }
}

/// Why a frame from a server is not a message a client can act on.
public enum ServerMessageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not JSON, not an object, or no string `type`.
    case notAMessage
    /// A message of a known `type` without a field it cannot do without.
    case missingField(type: String, field: String)

    public var description: String {
        switch self {
        case .notAMessage: "the relay sent something that is not a mailbox message"
        case .missingField(let type, let field): "the relay's '\(type)' message has no '\(field)'"
        }
    }
}

extension ServerMessage {
    /// Decodes one frame from a server. Lenient where the deployed server and its older
    /// versions differ (every welcome key, a nameplate entry that is not `{"id": "…"}`, a
    /// `server_rx` that is absent or out of range reads as 0); strict only about the fields a
    /// client acts on.
    public init(decoding text: String) throws(ServerMessageError) {
        guard case .object(let object)? = try? JSONParser.parse(text), let type = object["type"]?.stringValue
        else { throw .notAMessage }
        func string(_ key: String) throws(ServerMessageError) -> String {
            guard let value = object[key]?.stringValue else { throw .missingField(type: type, field: key) }
            return value
        }
        switch type {
        case "welcome": self = .welcome(Welcome(decoding: object["welcome"]?.objectValue ?? JSONObject()))
        case "ack": self = .ack(id: object["id"] ?? .null)
        case "pong": self = .pong(object["pong"] ?? .null)
        case "nameplates":
            var list: [Nameplate] = []
            if case .array(let entries)? = object["nameplates"] {
                for entry in entries {
                    if let id = entry.objectValue?["id"]?.stringValue { list.append(Nameplate(id)) }
                }
            }
            self = .nameplates(list)
        case "allocated": self = .allocated(Nameplate(try string("nameplate")))
        case "claimed": self = .claimed(MailboxID(try string("mailbox")))
        case "released": self = .released
        case "message":
            let side = Side(try string("side"))
            let phase = Phase(try string("phase"))
            let body = try string("body")
            let serverRX: Double
            if case .number(let number)? = object["server_rx"], let seconds = number.doubleValue,
                seconds.isFinite
            {
                serverRX = seconds
            } else {
                serverRX = 0
            }
            self = .message(
                StoredMessage(
                    side: side, phase: phase, body: body, serverRX: RelayInstant(secondsSince1970: serverRX),
                    messageID: object["id"] ?? .null))
        case "closed": self = .closed
        case "error":
            self = .error(
                RelayError(received: object["error"]?.stringValue ?? "unspecified error"),
                orig: object["orig"] ?? .null)
        default: self = .unknown(type: type)
        }
    }
}

extension Welcome {
    /// The welcome object as a server sent it; a key of the wrong type reads as absent.
    public init(decoding object: JSONObject) {
        self.init(
            motd: object["motd"]?.stringValue, currentCLIVersion: object["current_cli_version"]?.stringValue,
            error: object["error"]?.stringValue,
            permissionRequired: object["permission-required"]?.objectValue)
        if let address = object["your-address"]?.objectValue, let port = address["port"]?.integerValue {
            if let host = address["ipv4"]?.stringValue {
                yourAddress = ClientAddress(family: .ipv4, host: host, port: port)
            } else if let host = address["ipv6"]?.stringValue {
                yourAddress = ClientAddress(family: .ipv6, host: host, port: port)
            }
        }
    }
}
