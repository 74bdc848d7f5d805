import Mailbox

/// The application messages of a join after the code is confirmed (`docs/join-protocol.md`).
/// Every message is a JSON object with `"v": 1` and a `"type"`; anything else fails clearly.
public enum JoinMessage: Equatable, Sendable {
    /// Joiner → attendant: who is asking. Public keys as the key model's text form.
    case request(JoinRequest)
    /// Attendant → joiner: progress while a person decides.
    case status(JoinStatus)
    /// Attendant → joiner: everything needed to open the space, as a JSON object's UTF-8 bytes
    /// (its shape belongs to the space layer, not to this one).
    case grant(object: [UInt8])
    /// Attendant → joiner: a refusal with a reason code and human text.
    case refusal(reason: String, message: String)

    static let version = 1

    var type: String {
        switch self {
        case .request: "request"
        case .status: "status"
        case .grant: "grant"
        case .refusal: "refusal"
        }
    }

    /// The UTF-8 JSON plaintext, written by the mailbox protocol's one codec (`Mailbox`'s
    /// ``JSONWriter``), members in key order as every Eleven client has sent them.
    public func encoded() -> [UInt8] {
        var members: [(String, JSONValue)] = [
            ("type", .string(type)), ("v", .number(JSONNumber(Self.version))),
        ]
        switch self {
        case .request(let r):
            members += [
                ("display_name", .string(r.displayName)), ("device_label", .string(r.deviceLabel)),
                ("public_keys", .string(r.publicKeys.text)),
            ]
        case .status(let s):
            members.append(("state", .string(s.state.wire)))
            if let name = s.inviterName { members.append(("inviter_name", .string(name))) }
        case .grant(let bytes):
            // The grant's own JSON text goes in as it is (the space layer wrote it; parsing it
            // only to write it again cost more than the rest of the message); anything but one
            // object becomes an empty one.
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count + 32)
            out.append(contentsOf: #"{"grant":"#.utf8)
            out.append(contentsOf: JSONText.isSingleObject(bytes) ? bytes : Array("{}".utf8))
            for (key, value) in members {
                out.append(UInt8(ascii: ","))
                JSONWriter.writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                JSONWriter.write(value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
            return out
        case .refusal(let reason, let message):
            members += [("reason", .string(reason)), ("message", .string(message))]
        }
        members.sort { $0.0 < $1.0 }
        var out: [UInt8] = []
        out.reserveCapacity(128)
        JSONWriter.write(
            .object(JSONObject(members.map { JSONObject.Member(key: $0.0, value: $0.1) })), into: &out)
        return out
    }

    /// Parses a decrypted plaintext, expecting one of `allowed` types, with the same codec.
    public init(decoding bytes: [UInt8], allowed: Set<String>) throws(JoinHandshakeError) {
        guard case .object(let object)? = try? JSONParser.parse(bytes) else {
            throw .badMessage("not a JSON object")
        }
        guard let v = object["v"]?.integerValue else { throw .badMessage("no message version") }
        guard v == Self.version else { throw .badMessage("message version \(v) is not supported") }
        guard let type = object["type"]?.stringValue, allowed.contains(type) else {
            throw .badMessage("an unexpected message type")
        }
        func string(_ key: String, max: Int = 256) throws(JoinHandshakeError) -> String {
            guard let s = object[key]?.stringValue, s.utf8.count <= max else {
                throw .badMessage("'\(key)' is missing or too long")
            }
            return s
        }
        switch type {
        case "request":
            self = .request(
                JoinRequest(
                    displayName: try string("display_name", max: 128),
                    deviceLabel: try string("device_label", max: 128),
                    publicKeys: JoinerKeys(text: try string("public_keys", max: 1024))))
        case "status":
            self = .status(
                JoinStatus(
                    state: .init(wire: try string("state")), inviterName: object["inviter_name"]?.stringValue)
            )
        case "grant":
            guard case .object(let fields)? = object["grant"] else { throw .badMessage("'grant' is missing") }
            // The grant's text as sent (the message parsed above, so it is well-formed); written
            // again only when its key was spelled with escapes.
            if let text = JSONText.memberText("grant", in: bytes), JSONText.isSingleObject(Array(text)) {
                self = .grant(object: Array(text))
                return
            }
            var out: [UInt8] = []
            JSONWriter.write(.object(fields), into: &out)
            self = .grant(object: out)
        default:
            self = .refusal(reason: try string("reason"), message: try string("message", max: 1024))
        }
    }
}

/// Who asks to join.
public struct JoinRequest: Equatable, Sendable, Codable {
    public let displayName: String
    public let deviceLabel: String
    /// The joiner's public keys (sent and stored in the key model's one-line text form).
    public let publicKeys: JoinerKeys

    public init(displayName: String, deviceLabel: String, publicKeys: JoinerKeys) {
        self.displayName = displayName
        self.deviceLabel = deviceLabel
        self.publicKeys = publicKeys
    }
}

/// Progress the attendant reports while a person decides.
public struct JoinStatus: Equatable, Sendable {
    /// What the attendant is doing, as a type; a state this client does not know (a newer
    /// attendant's) is kept as its text and shown as nothing.
    public enum State: Equatable, Sendable {
        case waitingForApproval
        case other(String)

        init(wire: String) {
            self = wire == "waiting_for_approval" ? .waitingForApproval : .other(wire)
        }

        var wire: String {
            switch self {
            case .waitingForApproval: "waiting_for_approval"
            case .other(let text): text
            }
        }
    }

    public let state: State
    public let inviterName: String?

    public init(state: State, inviterName: String?) {
        self.state = state
        self.inviterName = inviterName
    }

    public static func waitingForApproval(inviter: String?) -> JoinStatus {
        JoinStatus(state: .waitingForApproval, inviterName: inviter)
    }
}
