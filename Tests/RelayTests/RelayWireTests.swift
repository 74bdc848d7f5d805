import Foundation
import Net
import TestSupport
import Testing

/// The `eleven-relay` executable over real loopback WebSockets: the protocol, bad input,
/// `/metrics`, `/healthz`, flags and signals.
@Suite(.serialized) struct RelayWireTests {
    static let app = "example.com/wire-test"

    /// A full two-sided exchange (the second side on `peerURL`, by default the same relay);
    /// returns the nameplate and mailbox.
    static func exchange(_ url: String, bodies: (String, String), peerURL: String? = nil) throws -> (
        nameplate: String, mailbox: String
    ) {
        let a = try WireClient(url)
        defer { a.close() }
        try a.send(["type": "bind", "appid": app, "side": "aaaaaaaaaa", "id": "1"])
        try a.send(["type": "allocate", "id": "2"])
        let nameplate = try #require(try a.next(type: "allocated")["nameplate"] as? String)
        try a.send(["type": "claim", "nameplate": nameplate])
        let mailbox = try #require(try a.next(type: "claimed")["mailbox"] as? String)
        try a.send(["type": "open", "mailbox": mailbox])
        try a.send(["type": "add", "phase": "pake", "body": bodies.0])

        let b = try WireClient(peerURL ?? url)
        defer { b.close() }
        try b.send(["type": "bind", "appid": app, "side": "bbbbbbbbbb"])
        try b.send(["type": "claim", "nameplate": nameplate])
        #expect(try b.next(type: "claimed")["mailbox"] as? String == mailbox)
        try b.send(["type": "open", "mailbox": mailbox])
        // Replay: B sees A's message.
        let replayed = try b.next(type: "message")
        #expect(replayed["body"] as? String == bodies.0 && replayed["side"] as? String == "aaaaaaaaaa")
        try b.send(["type": "add", "phase": "pake", "body": bodies.1])
        // Live: A sees its own echo, then B's.
        var seen: [String] = []
        while seen.count < 2 { seen.append(try #require(try a.next(type: "message")["body"] as? String)) }
        #expect(seen == [bodies.0, bodies.1])
        for client in [a, b] {
            try client.send(["type": "release", "nameplate": nameplate])
            _ = try client.next(type: "released")
            try client.send(["type": "close", "mailbox": mailbox, "mood": "happy"])
            _ = try client.next(type: "closed")
        }
        return (nameplate, mailbox)
    }

    @Test func servesTheProtocolAndTheReferencesRootPage() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let relay = try RelayProcess(databasePath: dir.path("relay.sqlite"), metrics: true)
        defer { relay.stop() }
        let root = try HTTPClient.send(.get, url: "http://127.0.0.1:\(relay.port)/")
        #expect(root.status.code == 200)
        #expect(root.bodyText == "Wormhole Relay\n")

        let welcome = try WireClient(relay.url).welcome
        #expect(welcome["type"] as? String == "welcome")
        #expect(welcome["server_tx"] is Double)
        let (nameplate, _) = try Self.exchange(relay.url, bodies: ("00aa", "00bb"))
        #expect(!nameplate.isEmpty && nameplate.allSatisfy(\.isNumber))
    }

    /// Bad input gets an `error` reply naming the problem (or a clean close for broken
    /// WebSocket framing); the connection and everyone else keep being served.
    static let badBeforeBind: [(String, String)] = [
        ("not json at all", "not valid JSON"),
        ("[1,2,3]", "must be a JSON object"),
        ("\"just a string\"", "must be a JSON object"),
        (#"{"id":"1"}"#, "missing 'type'"),
        (#"{"type":"bind","side":"s1"}"#, "bind requires 'appid'"),
        (#"{"type":"bind","appid":"x"}"#, "bind requires 'side'"),
        (#"{"type":"bind","appid":5,"side":"s1"}"#, "'appid' must be"),
        (#"{"type":"claim","nameplate":"4"}"#, "must bind first"),
        (#"{"type":"add","phase":"pake","body":"00"}"#, "must bind first"),
        (#"{"type":"frobnicate"}"#, "must bind first"),
    ]

    @Test func badInputBeforeBindIsAnsweredWithAnError() throws {
        try Self.withRelay { relay in
            for (input, expected) in Self.badBeforeBind {
                let client = try WireClient(relay.url)
                defer { client.close() }
                client.send(input)
                let reply = try client.nextReply()
                #expect(reply["type"] as? String == "error", "\(input) -> \(reply)")
                let text = reply["error"] as? String ?? ""
                #expect(text.contains(expected), "\(input) -> \(text)")
                #expect(client.isAlive(), "the connection is still served after \(input)")
            }
        }
    }

    static let badAfterBind: [(String, String)] = [
        (#"{"type":"frobnicate"}"#, "unknown type"),
        (#"{"type":"claim"}"#, "claim requires 'nameplate'"),
        (#"{"type":"claim","nameplate":12}"#, "'nameplate' must be"),
        (#"{"type":"claim","nameplate":"seven"}"#, "nameplate must be 1 to"),
        (#"{"type":"open"}"#, "open requires 'mailbox'"),
        (#"{"type":"open","mailbox":7}"#, "'mailbox' must be"),
        (#"{"type":17}"#, "unknown type"),
        (#"{"type":"add","phase":"pake","body":"00"}"#, "must open mailbox before adding"),
        (#"{"type":"release"}"#, "release without nameplate must follow claim"),
        (#"{"type":"close"}"#, "close without mailbox must follow open"),
        (#"{"type":"bind","appid":"x","side":"again"}"#, "already bound"),
        (#"{"type":"ping"}"#, "ping requires 'ping'"),
    ]

    @Test func badInputAfterBindIsAnsweredWithAnError() throws {
        try Self.withRelay { relay in
            for (input, expected) in Self.badAfterBind {
                let client = try WireClient(relay.url)
                defer { client.close() }
                try client.send(["type": "bind", "appid": Self.app, "side": "cccccccccc"])
                client.send(input)
                let reply = try client.nextReply()
                #expect(reply["type"] as? String == "error", "\(input) -> \(reply)")
                let text = reply["error"] as? String ?? ""
                #expect(text.contains(expected), "\(input) -> \(text)")
                #expect(client.isAlive(), "the connection is still served after \(input)")
            }
        }
    }

    @Test func binaryGarbageAndBinaryJSON() throws {
        try Self.withRelay { relay in
            let client = try WireClient(relay.url)
            defer { client.close() }
            client.socket.send(binary: [0xFF, 0x00, 0xFE, 0x01, 0x80])
            let reply = try client.nextReply()
            #expect(reply["type"] as? String == "error")
            #expect((reply["error"] as? String ?? "").contains("not valid JSON"))
            // The reference decodes binary frames too: a JSON ping in a binary frame works.
            client.socket.send(binary: Array(#"{"type":"ping","ping":3}"#.utf8))
            #expect(try client.next(type: "pong")["pong"] as? Int == 3)
        }
    }

    @Test func aThirdSideIsCrowdedOut() throws {
        try Self.withRelay { relay in
            let a = try WireClient(relay.url)
            let b = try WireClient(relay.url)
            let c = try WireClient(relay.url)
            defer { for client in [a, b, c] { client.close() } }
            try a.send(["type": "bind", "appid": Self.app, "side": "side-one"])
            try a.send(["type": "allocate"])
            let nameplate = try #require(try a.next(type: "allocated")["nameplate"] as? String)
            try a.send(["type": "claim", "nameplate": nameplate])
            _ = try a.next(type: "claimed")
            try b.send(["type": "bind", "appid": Self.app, "side": "side-two"])
            try b.send(["type": "claim", "nameplate": nameplate])
            _ = try b.next(type: "claimed")
            try c.send(["type": "bind", "appid": Self.app, "side": "side-three"])
            try c.send(["type": "claim", "nameplate": nameplate])
            let reply = try c.nextReply()
            #expect(reply["type"] as? String == "error")
            #expect(reply["error"] as? String == "crowded")
            #expect(a.isAlive() && b.isAlive())
        }
    }

    @Test func aBrokenWebSocketFrameClosesOnlyThatConnection() throws {
        try Self.withRelay { relay in
            let bystander = try WireClient(relay.url)
            defer { bystander.close() }
            // A raw TCP client completes the upgrade, then sends an unmasked frame (a protocol
            // violation for a client): the relay closes it.
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            #expect(fd >= 0)
            defer { close(fd) }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = relay.port.bigEndian
            addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            let connected = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            #expect(connected == 0)
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let upgrade =
                "GET /v1 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            _ = upgrade.withCString { write(fd, $0, strlen($0)) }
            let garbage: [UInt8] = [0x81, 0x05] + Array("hello".utf8)
            _ = garbage.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                received += buffer[..<n]
            }
            let text = String(decoding: received, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 101"))
            // A close frame (0x88) with 1002 follows the welcome.
            #expect(received.contains(0x88))
            #expect(bystander.isAlive())
        }
    }

    /// Per-address limits count the address a trusted proxy names, and only a trusted one.
    @Test func trustedProxyHeadersNameTheClient() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let trusting = try RelayProcess(
            databasePath: dir.path("trusting.sqlite"),
            arguments: ["--trusted-proxy", "127.0.0.0/8", "--max-nameplates-per-address", "1"])
        defer { trusting.stop() }
        let untrusting = try RelayProcess(
            databasePath: dir.path("untrusting.sqlite"), arguments: ["--max-nameplates-per-address", "1"])
        defer { untrusting.stop() }
        func address(_ relay: RelayProcess, forwardedFor: String) throws -> String? {
            let client = try WireClient(relay.url, headers: ["X-Forwarded-For": forwardedFor])
            defer { client.close() }
            let welcome = client.welcome["welcome"] as? [String: Any]
            return (welcome?["your-address"] as? [String: Any])?["ipv4"] as? String
        }
        #expect(try address(trusting, forwardedFor: "203.0.113.5") == "203.0.113.5")
        #expect(try address(untrusting, forwardedFor: "203.0.113.5") == "127.0.0.1")

        func allocate(_ relay: RelayProcess, forwardedFor: String) throws -> [String: Any] {
            let client = try WireClient(relay.url, headers: ["X-Forwarded-For": forwardedFor])
            try client.send(["type": "bind", "appid": Self.app, "side": "s-\(UUID().uuidString.prefix(6))"])
            try client.send(["type": "allocate"])
            return try client.nextReply()
        }
        #expect(try allocate(trusting, forwardedFor: "203.0.113.5")["type"] as? String == "allocated")
        let second = try allocate(trusting, forwardedFor: "203.0.113.5")
        #expect((second["error"] as? String ?? "").contains("too many open nameplates from your address"))
        #expect(try allocate(trusting, forwardedFor: "198.51.100.9")["type"] as? String == "allocated")
    }

    @Test func metricsAndHealth() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let relay = try RelayProcess(databasePath: dir.path("relay.sqlite"), metrics: true)
        defer { relay.stop() }
        let base = try #require(relay.metricsURL)
        let health = try HTTPClient.send(.get, url: base + "/healthz")
        #expect(health.status.code == 200)
        #expect(health.bodyText.contains("\"ok\""))

        _ = try Self.exchange(relay.url, bodies: ("aa11", "bb22"))
        let bad = try WireClient(relay.url)
        bad.send("nope")
        _ = try bad.nextReply()
        bad.close()

        let metrics = try HTTPClient.send(.get, url: base + "/metrics")
        #expect(metrics.status.code == 200)
        let text = metrics.bodyText
        for line in [
            "eleven_relay_nameplates_allocated_total 1",
            "eleven_relay_messages_added_total 2",
            "eleven_relay_close_moods_total{mood=\"happy\"} 2",
            "eleven_relay_errors_total{reason=\"not_json\"} 1",
            "eleven_relay_mailbox_results_total{result=\"happy\"} 1",
            "eleven_relay_net_websockets_opened_total 3",
            "eleven_relay_storage_failed 0",
        ] {
            #expect(text.contains(line + "\n"), "missing \(line)")
        }
        #expect(text.contains("# TYPE eleven_relay_reply_latency_seconds histogram"))
        #expect(!text.contains("eleven_relay_reply_latency_seconds_count 0\n"))
        // The WebSocket port does not serve metrics.
        let elsewhere = try HTTPClient.send(.get, url: "http://127.0.0.1:\(relay.port)/metrics")
        #expect(elsewhere.status.code == 404)
    }

    /// A connection whose `bind` says `"x-eleven-acks": false` hears every reply but no `ack`
    /// (each frame it reads is the reply itself), a stock one beside it keeps them, and the
    /// reply-latency histogram still counts every command of both.
    @Test func aBindAskingForNoAcksGetsEveryReplyButTheAcks() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let relay = try RelayProcess(databasePath: dir.path("relay.sqlite"), metrics: true)
        defer { relay.stop() }
        let quiet = try WireClient(relay.url)
        defer { quiet.close() }
        try quiet.send(["type": "bind", "appid": Self.app, "side": "aaaaaaaaaa", "x-eleven-acks": false])
        try quiet.send(["type": "allocate"])
        let allocated = try quiet.next()
        #expect(allocated["type"] as? String == "allocated")
        let nameplate = try #require(allocated["nameplate"] as? String)
        try quiet.send(["type": "claim", "nameplate": nameplate])
        let claimed = try quiet.next()
        #expect(claimed["type"] as? String == "claimed")
        let mailbox = try #require(claimed["mailbox"] as? String)
        try quiet.send(["type": "open", "mailbox": mailbox])
        try quiet.send(["type": "add", "phase": "pake", "body": "00aa"])
        let echo = try quiet.next()
        #expect(echo["type"] as? String == "message" && echo["body"] as? String == "00aa")

        let stock = try WireClient(relay.url)
        defer { stock.close() }
        try stock.send(["type": "bind", "appid": Self.app, "side": "bbbbbbbbbb", "id": "1"])
        #expect(try stock.next()["type"] as? String == "ack")
        try stock.send(["type": "claim", "nameplate": nameplate, "id": "2"])
        #expect(try stock.next()["id"] as? String == "2")
        #expect(try stock.next()["mailbox"] as? String == mailbox)

        try quiet.send(["type": "release", "nameplate": nameplate])
        #expect(try quiet.next()["type"] as? String == "released")
        try quiet.send(["type": "close", "mailbox": mailbox, "mood": "happy"])
        #expect(try quiet.next()["type"] as? String == "closed")
        // Seven commands on the quiet connection, two on the stock one.
        #expect(eventually { relay.metric("eleven_relay_reply_latency_seconds_count") == 9 })
    }

    @Test func anAddAskingForNoEchoReachesThePeerAndItsSenderHearsTheNextReply() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let relay = try RelayProcess(databasePath: dir.path("relay.sqlite"))
        defer { relay.stop() }
        let quiet = try WireClient(relay.url)
        defer { quiet.close() }
        try quiet.send(["type": "bind", "appid": Self.app, "side": "aaaaaaaaaa", "x-eleven-acks": false])
        try quiet.send(["type": "allocate"])
        let nameplate = try #require(try quiet.next()["nameplate"] as? String)
        try quiet.send(["type": "claim", "nameplate": nameplate])
        let mailbox = try #require(try quiet.next()["mailbox"] as? String)
        try quiet.send(["type": "open", "mailbox": mailbox])
        try quiet.send(["type": "add", "phase": "pake", "body": "00aa", "x-eleven-echo": false])
        try quiet.send(["type": "release", "nameplate": nameplate])
        // No copy of the message: the next frame is the release's answer.
        #expect(try quiet.next()["type"] as? String == "released")

        let stock = try WireClient(relay.url)
        defer { stock.close() }
        try stock.send(["type": "bind", "appid": Self.app, "side": "bbbbbbbbbb"])
        try stock.send(["type": "open", "mailbox": mailbox])
        let replayed = try stock.next(type: "message")
        #expect(replayed["body"] as? String == "00aa" && replayed["side"] as? String == "aaaaaaaaaa")
        // A stock add is echoed to its sender and reaches the quiet side.
        try stock.send(["type": "add", "phase": "pake", "body": "00bb"])
        #expect(try stock.next(type: "message")["body"] as? String == "00bb")
        #expect(try quiet.next()["body"] as? String == "00bb")
        try quiet.send(["type": "add", "phase": "version", "body": "00cc", "x-eleven-echo": false])
        #expect(try stock.next(type: "message")["body"] as? String == "00cc")
        try quiet.send(["type": "close", "mailbox": mailbox, "mood": "happy"])
        #expect(try quiet.next()["type"] as? String == "closed")
    }

    @Test func sigtermClosesConnectionsWith1001AndExitsZero() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let relay = try RelayProcess(databasePath: dir.path("relay.sqlite"))
        let client = try WireClient(relay.url)
        try client.send(["type": "bind", "appid": Self.app, "side": "dddddddddd"])
        try client.send(["type": "allocate"])
        let nameplate = try #require(try client.next(type: "allocated")["nameplate"] as? String)
        kill(relay.pid, SIGTERM)
        let (code, _) = try client.socket.waitUntilClosed(timeout: .seconds(10))
        #expect(code == .goingAway)
        #expect(eventually(timeout: 30) { !relay.server.isRunning })
        let ended = relay.stop()
        #expect(!ended.signalled)
        #expect(ended.status == 0)
        #expect(relay.log.contains("\"event\":\"stopped\""))

        // The nameplate survived: a restarted relay on the same file resumes it.
        let again = try RelayProcess(databasePath: relay.databasePath)
        defer { again.stop() }
        let other = try WireClient(again.url)
        defer { other.close() }
        try other.send(["type": "bind", "appid": Self.app, "side": "eeeeeeeeee"])
        try other.send(["type": "claim", "nameplate": nameplate])
        #expect(try other.next(type: "claimed")["mailbox"] is String)
    }

    @Test func flagsReachTheRelay() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let relay = try RelayProcess(
            databasePath: dir.path("relay.sqlite"),
            arguments: ["--motd", "hello from the flag", "--max-message-bytes", "200", "--allow-list"],
            environment: ["ELEVEN_RELAY_PERMISSION": "hashcash:4:test-resource"])
        defer { relay.stop() }
        let client = try WireClient(relay.url)
        defer { client.close() }
        let welcome = try #require(client.welcome["welcome"] as? [String: Any])
        #expect(welcome["motd"] as? String == "hello from the flag")
        let permission = try #require(welcome["permission-required"] as? [String: Any])
        let hashcash = try #require(permission["hashcash"] as? [String: Any])
        #expect(hashcash["bits"] as? Int == 4 && hashcash["resource"] as? String == "test-resource")
        try client.send(["type": "ping", "ping": 1, "pad": String(repeating: "x", count: 300)])
        let reply = try client.nextReply()
        #expect((reply["error"] as? String ?? "").contains("message too large (limit 200 bytes)"))
    }

    @Test(arguments: [
        ["--listen", "nonsense"], ["--max-message-bytes", "0"], ["--permission", "sha:3"],
        ["--expiry", "no-equals"], ["--tls-cert", "/x.pem"], ["--sync", "sometimes"], ["--frobnicate"],
        ["--connection-rate", "fast"], ["--nameplate-reuse-delay", "soon"],
        ["--nameplate-reuse-delay", "-5m"],
    ])
    func badFlagsAreUsageErrors(arguments: [String]) throws {
        let result = try TestSupport.run(
            RelayProcess.executable, arguments + ["--db", "/nonexistent/x"], timeout: 20)
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains("usage: eleven-relay"))
    }

    @Test func helpDocumentsEveryFlag() throws {
        let result = try TestSupport.run(RelayProcess.executable, ["--help"], timeout: 20)
        #expect(result.status == 0)
        for flag in [
            "--listen", "--db", "--tls-cert", "--tls-key", "--trusted-proxy", "--metrics-listen", "--motd",
            "--allow-list", "--permission", "--expiry", "--default-expiry", "--max-message-bytes",
            "--max-mailbox-messages", "--max-mailbox-bytes", "--max-nameplates-per-address",
            "--max-connections",
            "--connection-rate", "--allocation-rate", "--claim-rate",
        ] {
            #expect(result.stdout.contains(flag), "help must document \(flag)")
        }
    }

    /// Runs `body` against a fresh relay process, stopped by process id afterwards.
    static func withRelay(_ body: (RelayProcess) throws -> Void) throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let relay = try RelayProcess(databasePath: dir.path("relay.sqlite"))
        defer { relay.stop() }
        try body(relay)
        // Whatever happened, the relay kept serving and did not crash.
        #expect(relay.server.isRunning)
        #expect(try WireClient(relay.url).isAlive())
    }
}
