import Mailbox

/// One server → client message. ``encoded(serverTX:)`` adds `type` and `server_tx`, stamped by
/// the caller just before the frame is written.
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
        case .released, .closed:
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

    /// The text of the WebSocket frame.
    public func encoded(serverTX: RelayInstant) -> String {
        JSONWriter.string(.object(jsonObject(serverTX: serverTX)))
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
