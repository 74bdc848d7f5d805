import Mailbox
import Testing

@testable import Relay

@Suite("Protocol messages")
struct MessageTests {
    /// The command a payload carries, or the error for its fields.
    private func message(_ text: String) throws -> Result<ClientMessage, RelayError> {
        try ClientMessage.decode(text).get().message
    }

    private func decodeError(_ text: String) -> ClientMessageError? {
        if case .failure(let error) = ClientMessage.decode(text) { return error }
        return nil
    }

    @Test("a random side is ten lowercase hex digits from one draw of the generator")
    func randomSide() {
        // A draw from the system's generator is a system call: five draws per side were five.
        struct Counting: RandomNumberGenerator {
            var draws = 0
            mutating func next() -> UInt64 {
                draws += 1
                return 0x0011_2233_44A5_F6C7
            }
        }
        var generator = Counting()
        #expect(Side.random(using: &generator) == Side("c7f6a54433"))
        #expect(generator.draws == 1)
        var system = SystemRandomNumberGenerator()
        let sides = (0..<200).map { _ in Side.random(using: &system).value }
        #expect(Set(sides).count > 190)
        #expect(sides.allSatisfy { $0.count == 10 && $0.allSatisfy { "0123456789abcdef".contains($0) } })
    }

    @Test("every command decodes")
    func commands() throws {
        #expect(try message(#"{"type":"ping","ping":7}"#) == .success(.ping(.number(JSONNumber(7)))))
        #expect(
            try message(
                #"{"type":"bind","appid":"a/b","side":"0123456789","client_version":["python","0.24.0"]}"#)
                == .success(.bind(appID: "a/b", side: "0123456789", clientVersion: ["python", "0.24.0"])))
        #expect(
            try message(#"{"type":"bind","appid":"a","side":"s","client_version":[1]}"#)
                == .success(.bind(appID: "a", side: "s", clientVersion: nil)))
        #expect(try message(#"{"type":"list"}"#) == .success(.list))
        #expect(try message(#"{"type":"allocate"}"#) == .success(.allocate))
        #expect(try message(#"{"type":"claim","nameplate":"7"}"#) == .success(.claim(Nameplate("7"))))
        #expect(try message(#"{"type":"release"}"#) == .success(.release(nil)))
        #expect(try message(#"{"type":"release","nameplate":"7"}"#) == .success(.release(Nameplate("7"))))
        #expect(
            try message(#"{"type":"open","mailbox":"mkdckphwuanem"}"#) == .success(.open("mkdckphwuanem")))
        #expect(
            try message(#"{"type":"add","phase":"pake","body":"7b7d"}"#)
                == .success(.add(phase: "pake", body: "7b7d")))
        #expect(
            try message(#"{"type":"close","mailbox":"m","mood":"happy"}"#)
                == .success(.close(mailbox: "m", mood: "happy")))
        #expect(try message(#"{"type":"close"}"#) == .success(.close(mailbox: nil, mood: nil)))
        for spelling in ["submit-permission", "submit-permissions"] {
            #expect(
                try message(#"{"type":"\#(spelling)","method":"hashcash","stamp":"1:2:3"}"#)
                    == .success(.submitPermission(method: "hashcash", stamp: "1:2:3")))
        }
        for unknown in [#"{"type":"frobnicate"}"#, #"{"type":7}"#] {
            #expect(try ClientMessage.decode(unknown).get().kind == nil)
            #expect(try message(unknown) == .failure(.unknownType))
        }
    }

    @Test("the id is kept whatever its JSON type, null when absent")
    func ids() throws {
        #expect(try ClientMessage.decode(#"{"type":"list","id":"8cc4"}"#).get().id == "8cc4")
        #expect(try ClientMessage.decode(#"{"type":"list","id":[1,{"x":2}]}"#).get().id != .null)
        #expect(try ClientMessage.decode(#"{"type":"list"}"#).get().id == .null)
    }

    @Test("missing fields get the deployed server's strings")
    func missingFields() throws {
        let cases: [(String, String)] = [
            (#"{"type":"ping"}"#, "ping requires 'ping'"),
            (#"{"type":"bind","side":"s"}"#, "bind requires 'appid'"),
            (#"{"type":"bind","appid":"a"}"#, "bind requires 'side'"),
            (#"{"type":"claim"}"#, "claim requires 'nameplate'"),
            (#"{"type":"open"}"#, "open requires 'mailbox'"),
            (#"{"type":"add","body":"00"}"#, "missing 'phase'"),
            (#"{"type":"add","phase":"0"}"#, "missing 'body'"),
            (#"{"type":"submit-permission"}"#, "permission requires 'method'"),
        ]
        for (text, expected) in cases {
            guard case .failure(let error) = try message(text) else {
                Issue.record("\(text) decoded")
                continue
            }
            #expect(error.message == expected, "\(text)")
        }
    }

    @Test(
        "wrongly typed fields are named in the error",
        arguments: [
            #"{"type":"bind","appid":1,"side":"s"}"#, #"{"type":"bind","appid":"a","side":null}"#,
            #"{"type":"claim","nameplate":7}"#, #"{"type":"release","nameplate":[]}"#,
            #"{"type":"open","mailbox":{}}"#, #"{"type":"add","phase":0,"body":"00"}"#,
            #"{"type":"add","phase":"0","body":12}"#, #"{"type":"close","mood":true}"#,
            #"{"type":"close","mailbox":5}"#,
        ])
    func wrongTypes(_ text: String) throws {
        guard case .failure(let error) = try message(text) else {
            Issue.record("\(text) decoded")
            return
        }
        #expect(error.code == .wrongFieldType)
        #expect(error.message.contains("must be a string"))
    }

    @Test("payloads that are not commands are refused with their reason")
    func envelopeErrors() {
        #expect(decodeError("not json")?.error.code == .notJSON)
        #expect(decodeError("not json")?.orig == .null)
        #expect(decodeError("[1,2]")?.error.code == .notObject)
        #expect(decodeError("[1,2]")?.orig == .array([.number(JSONNumber(1)), .number(JSONNumber(2))]))
        #expect(decodeError("\"bind\"")?.error.code == .notObject)
        #expect(decodeError(#"{"appid":"x"}"#)?.error.message == "missing 'type'")
        #expect(decodeError(#"{"appid":"x"}"#)?.orig == .object(JSONObject(["appid": "x"])))
    }

    @Test("over-long identifiers are refused")
    func fieldLength() throws {
        let long = String(repeating: "a", count: 2000)
        guard case .failure(let e) = try message(#"{"type":"bind","appid":"\#(long)","side":"s"}"#) else {
            Issue.record("expected failure")
            return
        }
        #expect(e.code == .fieldTooLong)
    }

    @Test("server messages encode exactly")
    func encoding() {
        let tx = RelayInstant(secondsSince1970: 1_764_433_206.5)
        #expect(
            ServerMessage.ack(id: "8cc4").encoded(serverTX: tx)
                == #"{"type":"ack","id":"8cc4","server_tx":1764433206.5}"#)
        #expect(
            ServerMessage.ack(id: .null).encoded(serverTX: tx)
                == #"{"type":"ack","id":null,"server_tx":1764433206.5}"#)
        #expect(
            ServerMessage.pong(.number(JSONNumber(12))).encoded(serverTX: tx)
                == #"{"type":"pong","pong":12,"server_tx":1764433206.5}"#)
        #expect(
            ServerMessage.nameplates([Nameplate(validating: "1")!, Nameplate(validating: "23")!]).encoded(
                serverTX: tx)
                == #"{"type":"nameplates","nameplates":[{"id":"1"},{"id":"23"}],"server_tx":1764433206.5}"#)
        #expect(
            ServerMessage.allocated(Nameplate(validating: "7")!).encoded(serverTX: tx)
                == #"{"type":"allocated","nameplate":"7","server_tx":1764433206.5}"#)
        #expect(
            ServerMessage.claimed("mkdckphwuanem").encoded(serverTX: tx)
                == #"{"type":"claimed","mailbox":"mkdckphwuanem","server_tx":1764433206.5}"#)
        #expect(
            ServerMessage.released.encoded(serverTX: tx) == #"{"type":"released","server_tx":1764433206.5}"#)
        #expect(ServerMessage.closed.encoded(serverTX: tx) == #"{"type":"closed","server_tx":1764433206.5}"#)
        let message = StoredMessage(
            side: "82c9d4bf7a", phase: "pake", body: "7b22",
            serverRX: RelayInstant(secondsSince1970: 1_764_433_206.25), messageID: "7f82")
        #expect(
            ServerMessage.message(message).encoded(serverTX: tx)
                == #"{"type":"message","side":"82c9d4bf7a","phase":"pake","body":"7b22","server_rx":1764433206.25,"id":"7f82","server_tx":1764433206.5}"#
        )
        #expect(
            ServerMessage.error(.crowded, orig: .object(JSONObject(["type": "claim", "nameplate": "4"])))
                .encoded(
                    serverTX: tx)
                == #"{"type":"error","error":"crowded","orig":{"type":"claim","nameplate":"4"},"server_tx":1764433206.5}"#
        )
    }

    /// `encoded` writes the frame directly; it must stay byte for byte the serialised
    /// `jsonObject`, escapes and number forms included.
    @Test("server messages encode as their JSON object")
    func encodingMatchesTheObject() {
        let message = StoredMessage(
            side: "s\"1", phase: "ph\\ase\n", body: "7b\u{1}22\"é",
            serverRX: RelayInstant(secondsSince1970: 1e20), messageID: .object(JSONObject(["n": .null])))
        let all: [ServerMessage] = [
            .welcome(
                Welcome(
                    motd: "a \"quoted\" motd",
                    yourAddress: ClientAddress(family: .ipv4, host: "1.2.3.4", port: 9))),
            .ack(id: .array([.bool(true), .string("x\ty")])), .pong(.number(JSONNumber(-3))),
            .nameplates([]), .nameplates([Nameplate(validating: "12")!]),
            .allocated(Nameplate(validating: "3")!),
            .claimed("m\"b"), .released, .message(message), .closed,
            .error(RelayError(received: "bad \"thing\"\u{7}"), orig: .string("o")),
            .unknown(type: "new\"type"),
        ]
        for tx in [0.0, 1_764_433_206.123_456, -2.5, .infinity] {
            let instant = RelayInstant(secondsSince1970: tx)
            for m in all {
                #expect(
                    m.encoded(serverTX: instant)
                        == JSONWriter.string(.object(m.jsonObject(serverTX: instant))))
                // The relay's bytes, with `server_tx` formatted once per batch, are the same text.
                #expect(
                    m.encodedBytes(serverTXText: ServerMessage.serverTXText(instant))
                        == Array(JSONWriter.string(.object(m.jsonObject(serverTX: instant))).utf8))
            }
        }
    }

    @Test("the welcome carries only what is configured")
    func welcome() {
        let tx = RelayInstant(secondsSince1970: 1.0)
        #expect(
            ServerMessage.welcome(Welcome()).encoded(serverTX: tx)
                == #"{"type":"welcome","welcome":{},"server_tx":1.0}"#)
        let full = Welcome(
            motd: "hi", currentCLIVersion: "0.24.0", error: "stop",
            yourAddress: ClientAddress(family: .ipv6, host: "::1", port: 5),
            permissionRequired: JSONObject(["hashcash": .object(JSONObject(["bits": .number(JSONNumber(6))]))]
            ))
        #expect(
            ServerMessage.welcome(full).encoded(serverTX: tx)
                == #"{"type":"welcome","welcome":{"motd":"hi","current_cli_version":"0.24.0","error":"stop","your-address":{"port":5,"ipv6":"::1"},"permission-required":{"hashcash":{"bits":6}}},"server_tx":1.0}"#
        )
    }

    @Test("every error code has a distinct, non-empty wire text")
    func errorTexts() {
        let all: [RelayError] = [
            .missingType, .pingRequiresPing, .alreadyBound, .bindRequiresAppID, .bindRequiresSide,
            .mustBindFirst,
            .alreadyAllocated, .claimRequiresNameplate, .onlyOneClaim, .crowded, .reclaimed, .onlyOneRelease,
            .releaseNameplateMismatch, .releaseWithoutClaim, .onlyOneOpen, .openRequiresMailbox,
            .mustOpenBeforeAdding, .missingPhase, .missingBody, .onlyOneClose, .closeMailboxMismatch,
            .closeWithoutOpen, .unknownType,
        ]
        #expect(Set(all.map(\.message)).count == all.count)
        #expect(RelayError.alreadyAllocated.message == "you already allocated one, don't be greedy")
    }
}

@Suite("Metrics exposition")
struct MetricsExpositionTests {
    @Test("counters, labelled counters and gauges render in Prometheus text format")
    func render() {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        h.send(1, ["type": "open", "mailbox": "m"])
        h.send(1, ["type": "add", "phase": "0", "body": "abcd"])
        h.send(1, ["type": "close", "mood": "happy"])
        h.send(1, "garbage")
        let text = MetricsExposition.render(
            metrics: h.core.metrics, gauges: h.core.gauges,
            storage: SQLiteRelayStorage.Statistics(transactions: 3, batches: 5, writes: 9))
        let lines = Set(text.split(separator: "\n").map(String.init))
        for expected in [
            "eleven_relay_messages_added_total 1", "eleven_relay_message_body_bytes_total 4",
            "eleven_relay_errors_total{reason=\"not_json\"} 1",
            "eleven_relay_errors_total{reason=\"crowded\"} 0",
            "eleven_relay_close_moods_total{mood=\"happy\"} 1",
            "eleven_relay_mailbox_results_total{result=\"lonely\"} 1",
            "eleven_relay_connections 1", "eleven_relay_mailboxes 0", "eleven_relay_storage_batches_total 5",
            "# TYPE eleven_relay_errors_total counter", "# TYPE eleven_relay_connections gauge",
        ] {
            #expect(lines.contains(expected), "missing: \(expected)")
        }
        #expect(!text.contains("abcd"), "no client data in metrics")
    }
}
