/// One client → server message of protocol v1. Clients write it with ``encoded``; the relay
/// reads it with ``decode(_:maximumFieldBytes:)``.
public enum ClientMessage: Sendable, Equatable {
    /// `ping`: any value, echoed in `pong`.
    case ping(JSONValue)
    /// `bind`. `client_version` is read only when it is a list of strings; the relay does not
    /// keep it (it would only fingerprint users).
    case bind(appID: AppID, side: Side, clientVersion: [String]?)
    case list
    case allocate
    /// `claim`: the nameplate as sent, not yet checked for digits (the relay checks that after
    /// its once-per-connection rule, as the deployed server does).
    case claim(Nameplate)
    /// `release`, with or without the nameplate.
    case release(Nameplate?)
    case open(MailboxID)
    /// `add`: the body is the text on the wire (hex by convention), kept and relayed verbatim.
    case add(phase: Phase, body: String)
    /// `close`: the mood is any text to the relay (it counts the ones it knows, ``Mood``).
    case close(mailbox: MailboxID?, mood: String?)
    /// `submit-permission` (also read as `submit-permissions`, the spelling clients send).
    case submitPermission(method: String, stamp: String?)

    /// Which command a message is, known from its `type` before its fields are read.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        case ping, bind, list, allocate, claim, release, open, add, close
        case submitPermission = "submit-permissions"

        /// The kind `type` names; nil for any other value (which need not be a string).
        public init?(type: JSONValue) {
            guard case .string(let text) = type else { return nil }
            if let kind = Kind(rawValue: text) {
                self = kind
            } else if text == "submit-permission" {
                self = .submitPermission
            } else {
                return nil
            }
        }
    }

    public var kind: Kind {
        switch self {
        case .ping: .ping
        case .bind: .bind
        case .list: .list
        case .allocate: .allocate
        case .claim: .claim
        case .release: .release
        case .open: .open
        case .add: .add
        case .close: .close
        case .submitPermission: .submitPermission
        }
    }

    /// The JSON object sent: members in key order, as every Eleven client has sent them.
    public var jsonObject: JSONObject { jsonObject(acks: true) }

    /// The JSON object sent; with `acks` false a `bind` carries ``acksKey`` set to false, which
    /// asks an Eleven relay to send no `ack` on this connection, and with `echo` false an `add`
    /// carries ``echoKey`` set to false, which asks it for no copy of this message back (other
    /// servers ignore both keys).
    public func jsonObject(acks: Bool, echo: Bool = true) -> JSONObject {
        var members: [(String, JSONValue)] = [("type", .string(kind.rawValue))]
        switch self {
        case .ping(let value):
            members.append(("ping", value))
        case .bind(let appID, let side, let version):
            members.append(("appid", .string(appID.value)))
            if let version { members.append(("client_version", .array(version.map { .string($0) }))) }
            members.append(("side", .string(side.value)))
            if !acks { members.append((Self.acksKey, .bool(false))) }
        case .list, .allocate:
            break
        case .claim(let nameplate):
            members.append(("nameplate", .string(nameplate.value)))
        case .release(let nameplate):
            if let nameplate { members.append(("nameplate", .string(nameplate.value))) }
        case .open(let mailbox):
            members.append(("mailbox", .string(mailbox.value)))
        case .add(let phase, let body):
            members.append(("body", .string(body)))
            members.append(("phase", .string(phase.value)))
            if !echo { members.append((Self.echoKey, .bool(false))) }
        case .close(let mailbox, let mood):
            if let mailbox { members.append(("mailbox", .string(mailbox.value))) }
            if let mood { members.append(("mood", .string(mood))) }
        case .submitPermission(let method, let stamp):
            members.append(("method", .string(method)))
            if let stamp { members.append(("stamp", .string(stamp))) }
        }
        members.sort { $0.0 < $1.0 }
        return JSONObject(members.map { JSONObject.Member(key: $0.0, value: $0.1) })
    }

    /// The text of the WebSocket frame.
    public var encoded: String { JSONWriter.string(.object(jsonObject)) }

    /// The text of the WebSocket frame; with `acks` false, a `bind` asks for no `ack`s, with
    /// `echo` false an `add` for no copy back (``jsonObject(acks:echo:)``).
    public func encoded(acks: Bool, echo: Bool = true) -> String {
        JSONWriter.string(.object(jsonObject(acks: acks, echo: echo)))
    }

    /// The `bind` key of Eleven's one extension to protocol v1: `"x-eleven-acks": false` asks
    /// the relay to send no `ack` on the connection from that `bind` on (the `bind`'s own
    /// included), every other reply unchanged. An `ack` only says a command arrived, before it
    /// is processed; Eleven's clients never wait for one (what they need confirmed has its own
    /// reply: `claimed`, `released`, a `message` echo, `closed`), and they are 19 of the 46
    /// frames a relay sends per join. The reference server ignores keys it does not know, so
    /// the same `bind` works there, acks and all; a client that reads acks just does not send
    /// the key.
    public static let acksKey = "x-eleven-acks"

    /// The `add` key of Eleven's second extension: `"x-eleven-echo": false` asks the relay not
    /// to send this message back to the connection that added it; everyone else subscribed to
    /// the mailbox gets it as before, and an `open` still replays it (on any connection, this
    /// one's own later `open` included). A client needs its own copy only as a receipt, and not
    /// for a message the peer answers: the answer is the receipt. The echoes were 9 of the 26.5
    /// frames a relay sent per join. The reference server ignores the key (it reads `phase`,
    /// `body` and `id`) and echoes, which costs our clients nothing.
    public static let echoKey = "x-eleven-echo"
}

/// A client message as a server reads it.
///
/// Decoding is split in two so the relay can answer in the deployed server's order: the
/// envelope (JSON object, `type`, `id`) is checked first (``ClientMessage/decode(_:maximumFieldBytes:)``
/// fails without one), then the command's fields, whose problem is kept in ``message`` because
/// the connection-state checks ("must bind first", "only one claim per connection", …) come
/// before some field checks.
public struct ClientFrame: Sendable, Equatable {
    /// The whole message, echoed as `orig` in an `error` reply.
    public let object: JSONObject
    /// The `id` correlation tag, `.null` when absent (echoed in `ack` and in `message`).
    public let id: JSONValue
    /// The command `type` names; nil when it names none (the relay answers `unknown type`).
    public let kind: ClientMessage.Kind?
    /// The command, or the deployed server's error for its first missing or malformed field
    /// (``RelayError/unknownType`` when ``kind`` is nil).
    public let message: Result<ClientMessage, RelayError>
    /// False for a `bind` that asks for no `ack`s (``ClientMessage/acksKey`` set to false).
    public let acks: Bool
    /// False for an `add` that asks for no copy back (``ClientMessage/echoKey`` set to false).
    public let echo: Bool

    public init(
        object: JSONObject, id: JSONValue, kind: ClientMessage.Kind?,
        message: Result<ClientMessage, RelayError>, acks: Bool = true, echo: Bool = true
    ) {
        self.object = object
        self.id = id
        self.kind = kind
        self.message = message
        self.acks = acks
        self.echo = echo
    }
}

/// A payload that could not be read as a command at all (no `ack` is sent for it).
public struct ClientMessageError: Error, Equatable, Sendable {
    public let error: RelayError
    /// What to echo as `orig`: the parsed value, or null when the payload was not JSON.
    public let orig: JSONValue
}

extension ClientMessage {
    /// Decodes one WebSocket payload.
    ///
    /// - Parameter maximumFieldBytes: longest accepted `appid`, `side`, `phase`, `mailbox`,
    ///   `mood`, `nameplate`, `method`, `stamp` (UTF-8 bytes); `body` is bounded by the message
    ///   size limit instead.
    public static func decode(_ payload: [UInt8], maximumFieldBytes: Int = 1024) -> Result<
        ClientFrame, ClientMessageError
    > {
        let value: JSONValue
        do {
            value = try JSONParser.parse(payload)
        } catch {
            return .failure(ClientMessageError(error: .notJSON(error), orig: .null))
        }
        guard case .object(let object) = value else {
            return .failure(ClientMessageError(error: .notObject, orig: value))
        }
        guard let type = object["type"] else {
            return .failure(ClientMessageError(error: .missingType, orig: value))
        }
        let kind = Kind(type: type)
        let message =
            kind.map { FieldReader(object: object, maximumBytes: maximumFieldBytes).message($0) }
            ?? .failure(.unknownType)
        let acks = kind != .bind || object[acksKey] != .bool(false)
        let echo = kind != .add || object[echoKey] != .bool(false)
        return .success(
            ClientFrame(
                object: object, id: object["id"] ?? .null, kind: kind, message: message, acks: acks,
                echo: echo))
    }

    public static func decode(_ text: String, maximumFieldBytes: Int = 1024) -> Result<
        ClientFrame, ClientMessageError
    > {
        decode(Array(text.utf8), maximumFieldBytes: maximumFieldBytes)
    }
}

/// Reads typed fields out of a command object, with the deployed server's "missing" strings.
private struct FieldReader {
    let object: JSONObject
    let maximumBytes: Int

    func message(_ kind: ClientMessage.Kind) -> Result<ClientMessage, RelayError> {
        switch kind {
        case .ping:
            guard let value = object["ping"] else { return .failure(.pingRequiresPing) }
            return .success(.ping(value))
        case .bind:
            return string("appid", missing: .bindRequiresAppID).flatMap { appID in
                string("side", missing: .bindRequiresSide).map { side in
                    .bind(appID: AppID(appID), side: Side(side), clientVersion: clientVersion())
                }
            }
        case .list: return .success(.list)
        case .allocate: return .success(.allocate)
        case .claim:
            return string("nameplate", missing: .claimRequiresNameplate).map { .claim(Nameplate($0)) }
        case .release:
            return optionalString("nameplate").map { .release($0.map { Nameplate($0) }) }
        case .open:
            return string("mailbox", missing: .openRequiresMailbox).map { .open(MailboxID($0)) }
        case .add:
            return string("phase", missing: .missingPhase).flatMap { phase in
                // The body is bounded by the whole-message limit, not the field limit.
                guard let value = object["body"] else { return .failure(.missingBody) }
                guard case .string(let body) = value else {
                    return .failure(.wrongType("body", expected: "a string", got: value))
                }
                return .success(.add(phase: Phase(phase), body: body))
            }
        case .close:
            return optionalString("mailbox").flatMap { mailbox in
                optionalString("mood").map { .close(mailbox: mailbox.map { MailboxID($0) }, mood: $0) }
            }
        case .submitPermission:
            return string("method", missing: .permissionRequiresMethod).flatMap { method in
                optionalString("stamp").map { .submitPermission(method: method, stamp: $0) }
            }
        }
    }

    /// A required string field: `missing` when absent, a type error when not a string.
    private func string(_ key: String, missing: RelayError) -> Result<String, RelayError> {
        guard let value = object[key] else { return .failure(missing) }
        guard case .string(let s) = value else {
            return .failure(.wrongType(key, expected: "a string", got: value))
        }
        guard s.utf8.count <= maximumBytes else { return .failure(.fieldTooLong(key, limit: maximumBytes)) }
        return .success(s)
    }

    /// An optional string field: nil when absent or JSON null.
    private func optionalString(_ key: String) -> Result<String?, RelayError> {
        guard let value = object[key], value != .null else { return .success(nil) }
        guard case .string(let s) = value else {
            return .failure(.wrongType(key, expected: "a string", got: value))
        }
        guard s.utf8.count <= maximumBytes else { return .failure(.fieldTooLong(key, limit: maximumBytes)) }
        return .success(s)
    }

    /// `client_version` when it is a list of strings; nil otherwise (never an error: the relay
    /// ignores it).
    private func clientVersion() -> [String]? {
        guard case .array(let items)? = object["client_version"] else { return nil }
        var version: [String] = []
        for item in items {
            guard case .string(let text) = item else { return nil }
            version.append(text)
        }
        return version
    }
}
