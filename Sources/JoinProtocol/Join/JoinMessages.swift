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
            if !r.failedAttempts.isEmpty {
                members.append(("failed_attempts", .array(r.failedAttempts.map(\.json))))
            }
            if let version = r.grantVersion {
                members.append(("grant_version", .number(JSONNumber(version))))
            }
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
        // One level deep: a grant's kilobytes are checked, never made into a tree (it goes on
        // as its text).
        guard let object = try? JSONParser.members(bytes) else { throw .badMessage("not a JSON object") }
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
                    publicKeys: JoinerKeys(text: try string("public_keys", max: 1024)),
                    failedAttempts: try JoinAttemptReport.list(object["failed_attempts"]),
                    grantVersion: object["grant_version"]?.integerValue))
        case "status":
            self = .status(
                JoinStatus(
                    state: .init(wire: try string("state")), inviterName: object["inviter_name"]?.stringValue)
            )
        case "grant":
            // The grant's text as sent (checked with the message above), the last `grant` member
            // as with every other key.
            guard let text = object.nestedText("grant"), text.first == UInt8(ascii: "{") else {
                throw .badMessage("'grant' is missing")
            }
            self = .grant(object: Array(text))
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
    /// The joiner's earlier attempts whose code went out and never checked out
    /// (``JoinAttemptReport``): told to this attendant inside the confirmed channel, which a
    /// relay cannot strip without failing this join too.
    public let failedAttempts: [JoinAttemptReport]
    /// The newest grant version the joiner reads (`grant_version`; it reads every one before it
    /// too): an attendant sends a newer, smaller grant only to a joiner that says it reads it.
    /// Nil from joiners that predate it (they read versions 1 to 3); attendants that predate it
    /// ignore the key and send version 3.
    public let grantVersion: Int?

    public init(
        displayName: String, deviceLabel: String, publicKeys: JoinerKeys,
        failedAttempts: [JoinAttemptReport] = [], grantVersion: Int? = nil
    ) {
        self.displayName = displayName
        self.deviceLabel = deviceLabel
        self.publicKeys = publicKeys
        self.failedAttempts = failedAttempts
        self.grantVersion = grantVersion
    }

    enum CodingKeys: String, CodingKey {
        case displayName, deviceLabel, publicKeys, failedAttempts, grantVersion
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        displayName = try c.decode(String.self, forKey: .displayName)
        deviceLabel = try c.decode(String.self, forKey: .deviceLabel)
        publicKeys = try c.decode(JoinerKeys.self, forKey: .publicKeys)
        // Joins saved before the reports existed have none.
        failedAttempts = try c.decodeIfPresent([JoinAttemptReport].self, forKey: .failedAttempts) ?? []
        grantVersion = try c.decodeIfPresent(Int.self, forKey: .grantVersion)
    }

    /// Without reports or a grant version, the same text as before they existed (``JoinerKeysTests``).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(displayName, forKey: .displayName)
        try c.encode(deviceLabel, forKey: .deviceLabel)
        try c.encode(publicKeys, forKey: .publicKeys)
        if !failedAttempts.isEmpty { try c.encode(failedAttempts, forKey: .failedAttempts) }
        if let grantVersion { try c.encode(grantVersion, forKey: .grantVersion) }
    }
}

/// A joiner's attempt that failed after its confirmation went out: whoever answered on that
/// nameplate could test one guess of the code against it, and the attendant that issued the code
/// may never have seen it (a relay posing as the attendant). The joiner keeps it and tells the
/// next attendant it proves a code to (`docs/join-protocol.md`, "Failed attempts a joiner saw").
public struct JoinAttemptReport: Equatable, Sendable, Codable {
    /// The relay the attempt went through, as the joiner named it.
    public let relay: String
    public let nameplate: Rendezvous.Nameplate
    /// The joiner's side in that mailbox: an attendant that counted the attempt itself saw it.
    public let side: Rendezvous.Side
    /// When the confirmation went out (Unix seconds, the joiner's clock).
    public let at: Int64
    /// How the attempt ended (a stable code: `code_mismatch`, `timed_out`, …).
    public let outcome: String

    /// At most this many go in one request (the oldest are dropped first).
    public static let maxPerRequest = 8

    /// Whether the attempt was a tested guess: the joiner heard its code did not match (an
    /// `abort`, or a confirmation that did not verify) or a protocol violation. An attempt that
    /// only got no answer (`timed_out`, `interrupted`) may be an inviter who was offline while
    /// the joiner's messages waited in the real mailbox: it is told, never counted.
    public var isTestedGuess: Bool { outcome == "code_mismatch" || outcome == "protocol_error" }

    public init(
        relay: String, nameplate: Rendezvous.Nameplate, side: Rendezvous.Side, at: Int64, outcome: String
    ) {
        self.relay = relay
        self.nameplate = nameplate
        self.side = side
        self.at = at
        self.outcome = outcome
    }

    var json: JSONValue {
        .object(
            JSONObject([
                "at": .number(JSONNumber(Int(at))), "nameplate": .string(nameplate.value),
                "outcome": .string(outcome), "relay": .string(relay), "side": .string(side.value),
            ]))
    }

    /// The reports of a request (none when absent); anything malformed fails the request.
    static func list(_ value: JSONValue?) throws(JoinHandshakeError) -> [JoinAttemptReport] {
        guard let value else { return [] }
        guard case .array(let list) = value, list.count <= maxPerRequest else {
            throw .badMessage("'failed_attempts' is malformed")
        }
        var out: [JoinAttemptReport] = []
        for item in list {
            guard let entry = item.objectValue,
                let relay = entry["relay"]?.stringValue, relay.utf8.count <= 512,
                let nameplate = entry["nameplate"]?.stringValue, (1...16).contains(nameplate.utf8.count),
                let side = entry["side"]?.stringValue, (1...64).contains(side.utf8.count),
                let at = entry["at"]?.integerValue,
                let outcome = entry["outcome"]?.stringValue, outcome.utf8.count <= 64
            else { throw .badMessage("'failed_attempts' is malformed") }
            out.append(
                JoinAttemptReport(
                    relay: relay, nameplate: Rendezvous.Nameplate(nameplate), side: Rendezvous.Side(side),
                    at: Int64(at), outcome: outcome))
        }
        return out
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
