import Foundation

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

    /// The UTF-8 JSON plaintext.
    public func encoded() -> [UInt8] {
        var object: [String: JSONText] = ["v": .int(Self.version), "type": .string(type)]
        switch self {
        case .request(let r):
            object["display_name"] = .string(r.displayName)
            object["device_label"] = .string(r.deviceLabel)
            object["public_keys"] = .string(r.publicKeys)
        case .status(let s):
            object["state"] = .string(s.state.wire)
            if let name = s.inviterName { object["inviter_name"] = .string(name) }
        case .grant(let bytes):
            // The grant's own JSON text goes in as it is (re-serialising it cost more than the
            // rest of the message); anything but one object becomes an empty one, as before.
            object["grant"] = .object(JSONText.isSingleObject(bytes) ? bytes : Array("{}".utf8))
        case .refusal(let reason, let message):
            object["reason"] = .string(reason)
            object["message"] = .string(message)
        }
        return JSONText.object(object)
    }

    /// Parses a decrypted plaintext, expecting one of `allowed` types.
    public init(decoding bytes: [UInt8], allowed: Set<String>) throws(JoinHandshakeError) {
        guard let any = try? JSONSerialization.jsonObject(with: Data(bytes)),
            let object = any as? [String: Any]
        else { throw .badMessage("not a JSON object") }
        guard let v = object["v"] as? Int else { throw .badMessage("no message version") }
        guard v == Self.version else { throw .badMessage("message version \(v) is not supported") }
        guard let type = object["type"] as? String, allowed.contains(type) else {
            throw .badMessage("an unexpected message type")
        }
        func string(_ key: String, max: Int = 256) throws(JoinHandshakeError) -> String {
            guard let s = object[key] as? String, s.utf8.count <= max else {
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
                    publicKeys: try string("public_keys", max: 1024)))
        case "status":
            self = .status(
                JoinStatus(
                    state: .init(wire: try string("state")), inviterName: object["inviter_name"] as? String))
        case "grant":
            guard let fields = object["grant"] as? [String: Any] else {
                throw .badMessage("'grant' is missing")
            }
            // The grant's text as sent (the message parsed above, so it is well-formed).
            if let text = JSONText.memberText("grant", in: bytes), JSONText.isSingleObject(Array(text)) {
                self = .grant(object: Array(text))
                return
            }
            guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
            else {
                throw .badMessage("'grant' is missing")
            }
            self = .grant(object: Array(data))
        default:
            self = .refusal(reason: try string("reason"), message: try string("message", max: 1024))
        }
    }
}

/// Who asks to join.
public struct JoinRequest: Equatable, Sendable, Codable {
    public let displayName: String
    public let deviceLabel: String
    /// The joiner's public keys in the key model's one-line text form.
    public let publicKeys: String

    public init(displayName: String, deviceLabel: String, publicKeys: String) {
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
