import Testing

@testable import Mailbox
@testable import Relay

/// The mailbox protocol's one codec (`Mailbox`), both directions: what a client writes the relay
/// reads back as the same message, what the relay writes a client reads back as the same
/// message, and what is malformed gets the relay's answer byte for byte.
@Suite("Mailbox message codec")
struct MailboxMessageCodecTests {
    /// One message of every client kind, with and without its optional fields.
    static let clientMessages: [ClientMessage] = [
        .ping(.number(JSONNumber(7))),
        .ping(.object(JSONObject(["nested": .array([.null, .bool(true), "x"])]))),
        .bind(
            appID: "lothar.com/wormhole/text-or-file-xfer", side: "82c9d4bf7a",
            clientVersion: ["python", "0.24.0"]),
        .bind(appID: "a", side: "s", clientVersion: nil),
        .list,
        .allocate,
        .claim(Nameplate("42")),
        // Not digits: a client may send it; the relay reads it and then refuses it.
        .claim(Nameplate("abc")),
        .release(Nameplate("42")),
        .release(nil),
        .open(MailboxID("mkdckphwuanem")),
        .add(phase: .pake, body: "7b22706f"),
        // Relayed verbatim: the relay never reads a body as hex.
        .add(phase: "0", body: "NOT hex \u{1} é"),
        .close(mailbox: MailboxID("mkdckphwuanem"), mood: "happy"),
        .close(mailbox: nil, mood: nil),
        .close(mailbox: nil, mood: "a mood the relay does not know"),
        .submitPermission(method: "hashcash", stamp: "1:16:251202:r::a:b"),
        .submitPermission(method: "hashcash", stamp: nil),
    ]

    @Test("every client message the relay reads back as written")
    func clientRoundTrip() throws {
        for message in Self.clientMessages {
            let frame = try ClientMessage.decode(message.encoded).get()
            #expect(frame.kind == message.kind, "\(message)")
            #expect(frame.message == .success(message), "\(message.encoded)")
            #expect(frame.id == .null)
        }
        #expect(Set(Self.clientMessages.map(\.kind)) == Set(ClientMessage.Kind.allCases))
    }

    @Test("both spellings of submit-permission are read; clients write the plural")
    func submitPermissionSpellings() throws {
        let singular = try ClientMessage.decode(#"{"type":"submit-permission","method":"hashcash"}"#).get()
        #expect(singular.kind == .submitPermission)
        #expect(singular.message == .success(.submitPermission(method: "hashcash", stamp: nil)))
        #expect(
            ClientMessage.submitPermission(method: "hashcash", stamp: nil).encoded
                == #"{"method":"hashcash","type":"submit-permissions"}"#)
    }

    /// One message of every server kind, and every field of the welcome.
    static let serverMessages: [ServerMessage] = [
        .welcome(Welcome()),
        .welcome(
            Welcome(
                motd: "hi", currentCLIVersion: "0.24.0", error: "stop",
                yourAddress: ClientAddress(family: .ipv6, host: "2001:db8::1", port: 5),
                permissionRequired: JSONObject([
                    "hashcash": .object(JSONObject(["bits": .number(JSONNumber(6)), "resource": "r"]))
                ]))),
        .welcome(Welcome(yourAddress: ClientAddress(family: .ipv4, host: "192.0.2.1", port: 40000))),
        .ack(id: "8cc4"),
        .ack(id: .null),
        .pong(.number(JSONNumber(12))),
        .nameplates([]),
        .nameplates([Nameplate("1"), Nameplate("23")]),
        .allocated(Nameplate("7")),
        .claimed(MailboxID("mkdckphwuanem")),
        .released,
        .message(
            StoredMessage(
                side: "82c9d4bf7a", phase: .pake, body: "7b22",
                serverRX: RelayInstant(secondsSince1970: 1_764_433_206.25),
                messageID: "7f82")),
        .message(
            StoredMessage(
                side: "s", phase: "0", body: "", serverRX: RelayInstant(secondsSince1970: 1_764_433_206),
                messageID: .null)),
        .closed,
        .error(.crowded, orig: .object(JSONObject(["type": "claim", "nameplate": "4"]))),
        .error(.notJSON(JSONParseError(offset: 0, reason: "unexpected character")), orig: .null),
        .unknown(type: "a-newer-servers-message"),
    ]

    @Test("every server message a client reads back as written")
    func serverRoundTrip() throws {
        let tx = RelayInstant(secondsSince1970: 1_764_433_206.5)
        for message in Self.serverMessages {
            #expect(try ServerMessage(decoding: message.encoded(serverTX: tx)) == message, "\(message)")
        }
    }

    /// A sample of every error the relay sends. The switch has no default, so a new code does
    /// not compile until it has a sample here.
    static func sample(_ code: RelayError.Code) -> RelayError {
        switch code {
        case .missingType: .missingType
        case .pingRequiresPing: .pingRequiresPing
        case .alreadyBound: .alreadyBound
        case .bindRequiresAppID: .bindRequiresAppID
        case .bindRequiresSide: .bindRequiresSide
        case .mustBindFirst: .mustBindFirst
        case .alreadyAllocated: .alreadyAllocated
        case .claimRequiresNameplate: .claimRequiresNameplate
        case .onlyOneClaim: .onlyOneClaim
        case .crowded: .crowded
        case .reclaimed: .reclaimed
        case .onlyOneRelease: .onlyOneRelease
        case .releaseNameplateMismatch: .releaseNameplateMismatch
        case .releaseWithoutClaim: .releaseWithoutClaim
        case .onlyOneOpen: .onlyOneOpen
        case .openRequiresMailbox: .openRequiresMailbox
        case .mustOpenBeforeAdding: .mustOpenBeforeAdding
        case .missingPhase: .missingPhase
        case .missingBody: .missingBody
        case .onlyOneClose: .onlyOneClose
        case .closeMailboxMismatch: .closeMailboxMismatch
        case .closeWithoutOpen: .closeWithoutOpen
        case .unknownType: .unknownType
        case .notJSON: .notJSON(JSONParseError(offset: 3, reason: "expected ',' or '}'"))
        case .notObject: .notObject
        case .wrongFieldType: .wrongType("side", expected: "a string", got: .number(JSONNumber(1)))
        case .fieldTooLong: .fieldTooLong("appid", limit: 1024)
        case .invalidNameplate: .invalidNameplate
        case .mailboxGone: .mailboxGone
        case .noFreeNameplate: .noFreeNameplate
        case .messageTooLarge: .messageTooLarge(limit: 65536)
        case .mailboxMessageLimit: .mailboxMessageLimit(64)
        case .mailboxByteLimit: .mailboxByteLimit(1_048_576)
        case .storageFull: .storageFull
        case .nameplateLimit: .nameplateLimit(100)
        case .allocationRateLimited: .allocationRateLimited
        case .claimRateLimited: .claimRateLimited
        case .connectionRateLimited: .connectionRateLimited
        case .tooManyConnections: .tooManyConnections
        case .tooManyErrors: .tooManyErrors
        case .storageUnavailable: .storageUnavailable
        case .permissionRequired: .permissionRequired
        case .permissionMethodUnsupported: .permissionMethodUnsupported
        case .permissionInvalid: .permissionInvalid("stamp is too old")
        case .permissionReused: .permissionReused
        case .permissionAlreadyGranted: .permissionAlreadyGranted
        case .unrecognized: RelayError(.unrecognized, "a text of some other server")
        }
    }

    @Test("a client finds every error's code again from its text alone")
    func errorCodesRoundTrip() throws {
        for code in RelayError.Code.allCases {
            let error = Self.sample(code)
            #expect(error.code == code)
            #expect(RelayError(received: error.message) == error, "\(error)")
            let reply = ServerMessage.error(error, orig: .null).encoded(
                serverTX: RelayInstant(secondsSince1970: 1))
            #expect(try ServerMessage(decoding: reply) == .error(error, orig: .null))
        }
        // The second text of `permission_method_unsupported` (a submission without a method).
        #expect(
            RelayError(received: RelayError.permissionRequiresMethod.message) == .permissionRequiresMethod)
        #expect(!RelayError.relayCodes.contains(.unrecognized))
        #expect(RelayError.relayCodes.count == RelayError.Code.allCases.count - 1)
    }

    /// What malformed or out-of-order input gets on the wire, exactly: the texts the relay sent
    /// before the codec moved to `Mailbox` (the deployed server's strings where it has one), and
    /// whether the command was acknowledged first (a payload that is no command is not).
    @Test(
        "malformed input gets the relay's error, byte for byte",
        arguments: [
            (
                #"{"type":"list",}"#,
                #"{"type":"error","error":"message is not valid JSON (expected a member name at byte 15)","orig":null,"server_tx":1700000000.0}"#
            ),
            (
                "not json",
                #"{"type":"error","error":"message is not valid JSON (invalid literal at byte 0)","orig":null,"server_tx":1700000000.0}"#
            ),
            (
                "[1,2]",
                #"{"type":"error","error":"message must be a JSON object","orig":[1,2],"server_tx":1700000000.0}"#
            ),
            (
                #"{"appid":"x"}"#,
                #"{"type":"error","error":"missing 'type'","orig":{"appid":"x"},"server_tx":1700000000.0}"#
            ),
            (
                #"{"type":"ping","id":1}"#,
                #"{"type":"error","error":"ping requires 'ping'","orig":{"type":"ping","id":1},"server_tx":1700000000.0}"#
            ),
            (
                #"{"type":"frobnicate"}"#,
                #"{"type":"error","error":"unknown type","orig":{"type":"frobnicate"},"server_tx":1700000000.0}"#
            ),
            (
                #"{"type":7}"#,
                #"{"type":"error","error":"unknown type","orig":{"type":7},"server_tx":1700000000.0}"#
            ),
            (
                #"{"type":"bind","appid":"a"}"#,
                #"{"type":"error","error":"already bound","orig":{"type":"bind","appid":"a"},"server_tx":1700000000.0}"#
            ),
            (
                #"{"type":"claim"}"#,
                #"{"type":"error","error":"claim requires 'nameplate'","orig":{"type":"claim"},"server_tx":1700000000.0}"#
            ),
            (
                #"{"type":"claim","nameplate":7}"#,
                #"{"type":"error","error":"'nameplate' must be a string, not a number","orig":{"type":"claim","nameplate":7},"server_tx":1700000000.0}"#
            ),
            (
                #"{"type":"claim","nameplate":"12a"}"#,
                #"{"type":"error","error":"nameplate must be 1 to 40 digits (0-9)","orig":{"type":"claim","nameplate":"12a"},"server_tx":1700000000.0}"#
            ),
            (
                #"{"type":"release","nameplate":[]}"#,
                #"{"type":"error","error":"'nameplate' must be a string, not an array","orig":{"type":"release","nameplate":[]},"server_tx":1700000000.0}"#
            ),
            (
                #"{"type":"open"}"#,
                #"{"type":"error","error":"open requires 'mailbox'","orig":{"type":"open"},"server_tx":1700000000.0}"#
            ),
            (
                #"{"type":"add","phase":"0","body":"00"}"#,
                #"{"type":"error","error":"must open mailbox before adding","orig":{"type":"add","phase":"0","body":"00"},"server_tx":1700000000.0}"#
            ),
            (
                #"{"type":"close","mood":true}"#,
                #"{"type":"error","error":"'mood' must be a string, not a boolean","orig":{"type":"close","mood":true},"server_tx":1700000000.0}"#
            ),
            (
                #"{"type":"submit-permission","method":"hashcash"}"#,
                #"{"type":"error","error":"unknown type","orig":{"type":"submit-permission","method":"hashcash"},"server_tx":1700000000.0}"#
            ),
        ])
    func malformed(_ payload: String, _ reply: String) {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        let replies = h.send(1, payload)
        let tx = RelayInstant(secondsSince1970: 1_700_000_000)
        #expect(replies.last?.encoded(serverTX: tx) == reply)
        // A payload that is a command (an object with a `type`) is acknowledged first.
        let isCommand = (try? JSONParser.parse(payload))?.objectValue?["type"] != nil
        #expect(replies.count == (isCommand ? 2 : 1))
        if isCommand {
            #expect(replies.first == .ack(id: (try? JSONParser.parse(payload))?.objectValue?["id"] ?? .null))
        }
    }

    @Test("before bind, every command but ping, bind and submit-permission must bind first")
    func unbound() {
        for kind in ClientMessage.Kind.allCases where ![.ping, .bind, .submitPermission].contains(kind) {
            var h = CoreHarness()
            _ = h.connect(1)
            let replies = h.send(1, #"{"type":"\#(kind.rawValue)"}"#)
            #expect(replies.last?.errorText == "must bind first", "\(kind)")
        }
        var h = CoreHarness()
        _ = h.connect(1)
        #expect(h.send(1, #"{"type":"frobnicate"}"#).last?.errorText == "must bind first")
    }
}
