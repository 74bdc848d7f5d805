import Foundation
import Net
import TestSupport
import Testing

/// A throw-away CA and leaf certificates made with the `openssl` CLI in a temp dir.
struct TestPKI {
    let dir: URL

    init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("net-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    func openssl(_ args: [String]) throws {
        let result = try TestSupport.run("/usr/bin/openssl", args, timeout: 30)
        if result.status != 0 {
            throw NetError(.invalidState, "openssl \(args.first ?? ""): \(result.stderr)")
        }
    }

    /// Makes `<name>-ca.pem` and a leaf `<name>.pem`/`<name>-key.pem` signed by it.
    func makeChain(_ name: String, san: String = "DNS:localhost,IP:127.0.0.1") throws {
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path("\(name)-ca-key.pem"), "-out", path("\(name)-ca.pem"), "-days", "2",
            "-subj", "/CN=\(name) test CA",
        ])
        try openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path("\(name)-key.pem"), "-out", path("\(name).csr"), "-subj", "/CN=\(name) leaf",
        ])
        try "subjectAltName=\(san)\n".write(toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
        try openssl([
            "x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(name)-ca.pem"), "-CAkey",
            path("\(name)-ca-key.pem"), "-CAcreateserial", "-out", path("\(name).pem"), "-days", "2",
            "-extfile", path("\(name).ext"),
        ])
    }

    func remove() { try? FileManager.default.removeItem(at: dir) }
}

@Suite("TLS")
struct TLSTests {
    func tlsServer(_ pki: TestPKI, _ name: String) throws -> Server {
        try makeEchoServer { config in
            config.tls = TLSServerConfiguration(
                certificateChainFile: pki.path("\(name).pem"), privateKeyFile: pki.path("\(name)-key.pem"))
        }
    }

    @Test func wssAndHTTPSWithPinnedCA() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try pki.makeChain("a")
        let server = try tlsServer(pki, "a")
        defer { server.shutdown() }
        let pinned = TLSClientConfiguration(caFile: pki.path("a-ca.pem"))
        let response = try HTTPClient.send(.get, url: "https://127.0.0.1:\(server.port)/hello", tls: pinned)
        #expect(response.bodyText == #"{"hello":"world"}"#)
        let byName = try HTTPClient.send(.get, url: "https://localhost:\(server.port)/hello", tls: pinned)
        #expect(byName.status.code == 200)
        let ws = try WebSocketClient.connect(url: "wss://127.0.0.1:\(server.port)/echo", tls: pinned)
        let big = (0..<150_000).map { UInt8(truncatingIfNeeded: $0) }
        ws.send(binary: big)
        #expect(try ws.receive(timeout: .seconds(5)) == .binary(big))
        ws.send(text: "tls ✓")
        #expect(try ws.receive(timeout: .seconds(5)) == .text("tls ✓"))
        ws.close()
        #expect(try ws.waitUntilClosed(timeout: .seconds(5)).code == .normal)
    }

    @Test func verificationFailures() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try pki.makeChain("a")
        try pki.makeChain("other", san: "DNS:other.example")
        let server = try tlsServer(pki, "a")
        defer { server.shutdown() }
        // Self-made CA is not in the system store.
        do {
            _ = try HTTPClient.send(.get, url: "https://127.0.0.1:\(server.port)/hello", timeout: .seconds(5))
            Issue.record("accepted a certificate outside the system store")
        } catch {
            #expect(error.code == .tlsError, "\(error)")
        }
        // Wrong pinned CA.
        #expect(throws: NetError.self) {
            try HTTPClient.send(
                .get, url: "https://127.0.0.1:\(server.port)/hello",
                tls: TLSClientConfiguration(caFile: pki.path("other-ca.pem")),
                timeout: .seconds(5))
        }
        // Right CA, wrong name.
        let wrongName = try makeEchoServer { config in
            config.tls = TLSServerConfiguration(
                certificateChainFile: pki.path("other.pem"), privateKeyFile: pki.path("other-key.pem"))
        }
        defer { wrongName.shutdown() }
        #expect(throws: NetError.self) {
            try WebSocketClient.connect(
                url: "wss://127.0.0.1:\(wrongName.port)/echo",
                tls: TLSClientConfiguration(caFile: pki.path("other-ca.pem")),
                timeout: .seconds(5))
        }
        // Plain text to a TLS port: the server drops it, still serves TLS.
        let raw = try RawClient(port: server.port)
        raw.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(raw.read(timeout: 3).eof)
        #expect(eventually { server.statistics.tlsHandshakeFailures >= 3 }, "\(server.statistics)")
        let ok = try HTTPClient.send(
            .get, url: "https://127.0.0.1:\(server.port)/hello",
            tls: TLSClientConfiguration(caFile: pki.path("a-ca.pem")))
        #expect(ok.status.code == 200)
    }

    @Test func opensslSClientInterop() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try pki.makeChain("a")
        let server = try tlsServer(pki, "a")
        defer { server.shutdown() }
        for version in ["-tls1_2", "-tls1_3"] {
            let result = try TestSupport.run(
                "/usr/bin/openssl",
                [
                    "s_client", "-connect", "127.0.0.1:\(server.port)", "-CAfile", pki.path("a-ca.pem"),
                    "-verify_return_error", "-servername", "localhost", "-quiet", version,
                ],
                stdin: Data("GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8),
                timeout: 20)
            #expect(
                result.stdout.contains(#"{"hello":"world"}"#), "\(version): \(result.stdout) \(result.stderr)"
            )
        }
        // TLS 1.1 is refused.
        let old = try TestSupport.run(
            "/usr/bin/openssl",
            ["s_client", "-connect", "127.0.0.1:\(server.port)", "-tls1_1", "-quiet"],
            stdin: Data(), timeout: 20)
        #expect(!old.stdout.contains("hello"))
        #expect(old.status != 0)
    }

    @Test func reloadCertificates() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try pki.makeChain("a")
        try pki.makeChain("b")
        // The server reads fixed paths; swap the files under it, then reload.
        let live = pki.path("live.pem")
        let liveKey = pki.path("live-key.pem")
        try FileManager.default.copyItem(atPath: pki.path("a.pem"), toPath: live)
        try FileManager.default.copyItem(atPath: pki.path("a-key.pem"), toPath: liveKey)
        let server = try makeEchoServer { config in
            config.tls = TLSServerConfiguration(certificateChainFile: live, privateKeyFile: liveKey)
        }
        defer { server.shutdown() }
        let caA = TLSClientConfiguration(caFile: pki.path("a-ca.pem"))
        let caB = TLSClientConfiguration(caFile: pki.path("b-ca.pem"))
        let before = try WebSocketClient.connect(url: "wss://127.0.0.1:\(server.port)/echo", tls: caA)

        // Bad files: reload fails and the old certificate stays.
        try "garbage".write(toFile: live, atomically: true, encoding: .utf8)
        #expect(throws: NetError.self) { try server.reloadCertificates() }
        #expect(
            try HTTPClient.send(.get, url: "https://127.0.0.1:\(server.port)/hello", tls: caA).status.code
                == 200)

        try FileManager.default.removeItem(atPath: live)
        try FileManager.default.removeItem(atPath: liveKey)
        try FileManager.default.copyItem(atPath: pki.path("b.pem"), toPath: live)
        try FileManager.default.copyItem(atPath: pki.path("b-key.pem"), toPath: liveKey)
        try server.reloadCertificates()

        #expect(
            try HTTPClient.send(.get, url: "https://127.0.0.1:\(server.port)/hello", tls: caB).status.code
                == 200)
        // A new connection (not the kept-alive one made before the reload, still trusted).
        #expect(throws: NetError.self) {
            try HTTPClient.send(
                .get, url: "https://127.0.0.1:\(server.port)/hello", headers: ["Connection": "close"],
                tls: caA, timeout: .seconds(5))
        }
        // The connection made before the reload is unaffected.
        before.send(text: "still up")
        #expect(try before.receive(timeout: .seconds(5)) == .text("still up"))
        before.close()
    }

    @Test func tlsHandshakeDeadline() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try pki.makeChain("a")
        let server = try makeEchoServer { config in
            config.tls = TLSServerConfiguration(
                certificateChainFile: pki.path("a.pem"), privateKeyFile: pki.path("a-key.pem"))
            config.limits.handshakeTimeout = .milliseconds(300)
        }
        defer { server.shutdown() }
        let stalled = try RawClient(port: server.port)
        stalled.send([0x16, 0x03, 0x01])  // the start of a ClientHello, then nothing
        #expect(stalled.read(timeout: 3).eof)
    }
}

@Suite("Signals")
struct SignalTests {
    @Test func watcherRunsOnSignal() throws {
        let hits = Mutex_Box(0)
        let watcher = SignalWatcher(signal: SIGUSR2) { hits.set(hits.get() + 1) }
        defer { watcher.cancel() }
        usleep(50_000)
        kill(getpid(), SIGUSR2)
        #expect(eventually { hits.get() == 1 })
    }
}
