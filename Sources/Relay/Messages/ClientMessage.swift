import Mailbox

/// One client → server message, decoded.
///
/// Decoding is split in two so the relay can answer in the deployed server's order: the
/// envelope (JSON object, `type`, `id`) is checked first, then the command's fields, whose
/// problems are kept as `Result` failures because the connection-state checks ("must bind
/// first", "only one claim per connection", …) come before some field checks.
public struct ClientMessage: Sendable, Equatable {
    /// The whole message, echoed as `orig` in an `error` reply.
    public let object: JSONObject
    /// The `id` correlation tag, `.null` when absent (echoed in `ack` and in `message`).
    public let id: JSONValue
    public let command: ClientCommand

    /// Decodes one WebSocket payload.
    ///
    /// - Parameter maximumFieldBytes: longest accepted `appid`, `side`, `phase`, `mailbox`,
    ///   `mood` (UTF-8 bytes); `body` is bounded by the message size limit instead.
    public static func decode(
        _ payload: some Sequence<UInt8>, maximumFieldBytes: Int = 1024
    ) -> Result<ClientMessage, ClientMessageError> {
        let value: JSONValue
        do {
            value = try JSONParser.parse(Array(payload))
        } catch {
            return .failure(ClientMessageError(error: .notJSON(error), orig: .null))
        }
        guard case .object(let object) = value else {
            return .failure(ClientMessageError(error: .notObject, orig: value))
        }
        guard let type = object["type"] else {
            return .failure(ClientMessageError(error: .missingType, orig: value))
        }
        let fields = FieldReader(object: object, maximumBytes: maximumFieldBytes)
        let command: ClientCommand
        switch type.stringValue {
        case "ping": command = .ping(fields.ping())
        case "bind": command = .bind(fields.bind())
        case "list": command = .list
        case "allocate": command = .allocate
        case "claim": command = .claim(fields.claim())
        case "release": command = .release(fields.release())
        case "open": command = .open(fields.open())
        case "add": command = .add(fields.add())
        case "close": command = .close(fields.close())
        case "submit-permission", "submit-permissions": command = .submitPermission(fields.permission())
        default: command = .unknown(type)
        }
        return .success(ClientMessage(object: object, id: object["id"] ?? .null, command: command))
    }

    public static func decode(_ text: String, maximumFieldBytes: Int = 1024) -> Result<
        ClientMessage, ClientMessageError
    > {
        decode(text.utf8, maximumFieldBytes: maximumFieldBytes)
    }
}

/// A payload that could not be read as a command at all (no `ack` is sent for it).
public struct ClientMessageError: Error, Equatable, Sendable {
    public let error: RelayError
    /// What to echo as `orig`: the parsed value, or null when the payload was not JSON.
    public let orig: JSONValue
}

/// The commands of protocol v1, with their fields decoded.
public enum ClientCommand: Sendable, Equatable {
    /// `ping`: the value to echo in `pong`.
    case ping(Result<JSONValue, RelayError>)
    case bind(Result<BindRequest, RelayError>)
    case list
    case allocate
    /// `claim`: the nameplate text, not yet checked for digits (that check comes after the
    /// once-per-connection rule, as in the deployed server).
    case claim(Result<String, RelayError>)
    /// `release`: the optional nameplate text.
    case release(Result<String?, RelayError>)
    case open(Result<MailboxID, RelayError>)
    case add(Result<AddRequest, RelayError>)
    case close(Result<CloseRequest, RelayError>)
    /// `submit-permission` or `submit-permissions` (both spellings are in use).
    case submitPermission(Result<PermissionSubmission, RelayError>)
    /// Any other `type` value (which need not even be a string).
    case unknown(JSONValue)
}

public struct BindRequest: Sendable, Equatable {
    public let appID: AppID
    public let side: Side
}

public struct AddRequest: Sendable, Equatable {
    public let phase: Phase
    /// Hex by convention; stored and relayed verbatim, never interpreted.
    public let body: String
}

public struct CloseRequest: Sendable, Equatable {
    public let mailbox: MailboxID?
    public let mood: String?
}

public struct PermissionSubmission: Sendable, Equatable {
    public let method: String
    public let stamp: String?
}

/// Reads typed fields out of a command object, with the deployed server's "missing" strings.
private struct FieldReader {
    let object: JSONObject
    let maximumBytes: Int

    /// A required string field: `missing` when absent, a type error when not a string.
    func string(_ key: String, missing: RelayError) -> Result<String, RelayError> {
        guard let value = object[key] else { return .failure(missing) }
        guard case .string(let s) = value else {
            return .failure(.wrongType(key, expected: "a string", got: value))
        }
        guard s.utf8.count <= maximumBytes else { return .failure(.fieldTooLong(key, limit: maximumBytes)) }
        return .success(s)
    }

    /// An optional string field: nil when absent or JSON null.
    func optionalString(_ key: String) -> Result<String?, RelayError> {
        guard let value = object[key], value != .null else { return .success(nil) }
        guard case .string(let s) = value else {
            return .failure(.wrongType(key, expected: "a string", got: value))
        }
        guard s.utf8.count <= maximumBytes else { return .failure(.fieldTooLong(key, limit: maximumBytes)) }
        return .success(s)
    }

    func ping() -> Result<JSONValue, RelayError> {
        guard let value = object["ping"] else { return .failure(.pingRequiresPing) }
        return .success(value)
    }

    func bind() -> Result<BindRequest, RelayError> {
        string("appid", missing: .bindRequiresAppID).flatMap { appID in
            string("side", missing: .bindRequiresSide).map { side in
                BindRequest(appID: AppID(appID), side: Side(side))
            }
        }
    }

    func claim() -> Result<String, RelayError> {
        string("nameplate", missing: .claimRequiresNameplate)
    }

    func release() -> Result<String?, RelayError> { optionalString("nameplate") }

    func open() -> Result<MailboxID, RelayError> {
        string("mailbox", missing: .openRequiresMailbox).map { MailboxID($0) }
    }

    func add() -> Result<AddRequest, RelayError> {
        string("phase", missing: .missingPhase).flatMap { phase in
            // The body is bounded by the whole-message limit, not the field limit.
            guard let value = object["body"] else { return .failure(.missingBody) }
            guard case .string(let body) = value else {
                return .failure(.wrongType("body", expected: "a string", got: value))
            }
            return .success(AddRequest(phase: Phase(phase), body: body))
        }
    }

    func close() -> Result<CloseRequest, RelayError> {
        optionalString("mailbox").flatMap { mailbox in
            optionalString("mood").map { mood in
                CloseRequest(mailbox: mailbox.map { MailboxID($0) }, mood: mood)
            }
        }
    }

    func permission() -> Result<PermissionSubmission, RelayError> {
        string("method", missing: RelayError(.permissionMethodUnsupported, "permission requires 'method'"))
            .flatMap { method in
                optionalString("stamp").map { PermissionSubmission(method: method, stamp: $0) }
            }
    }
}
