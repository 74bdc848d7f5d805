import Foundation
import Net
import TestSupport
import Testing

/// `wss://` served directly, and certificates reloaded on SIGHUP without dropping connections.
@Suite(.serialized) struct RelayTLSTests {
    /// A throw-away CA and a leaf for 127.0.0.1 signed by it (TestSupport).
    static func makeChain(_ dir: ScratchDirectory, _ name: String) throws {
        try TestSupport.makeCertificateChain(in: dir.url, name: name)
    }

    static func install(_ dir: ScratchDirectory, _ name: String) throws {
        for (from, to) in [("\(name).pem", "live.pem"), ("\(name)-key.pem", "live-key.pem")] {
            try? FileManager.default.removeItem(atPath: dir.path(to))
            try FileManager.default.copyItem(atPath: dir.path(from), toPath: dir.path(to))
        }
    }

    @Test func wssAndReloadOnSIGHUP() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        try Self.makeChain(dir, "a")
        try Self.makeChain(dir, "b")
        try Self.install(dir, "a")
        let relay = try RelayProcess(
            databasePath: dir.path("relay.sqlite"),
            arguments: ["--tls-cert", dir.path("live.pem"), "--tls-key", dir.path("live-key.pem")])
        defer { relay.stop() }
        let url = "wss://127.0.0.1:\(relay.port)/v1"
        #expect(relay.log.contains("eleven-relay listening on \(url)"))
        let caA = TLSClientConfiguration(caFile: dir.path("a-ca.pem"))
        let caB = TLSClientConfiguration(caFile: dir.path("b-ca.pem"))
        let before = try WireClient(url, tls: caA)
        defer { before.close() }
        #expect(before.welcome["type"] as? String == "welcome")
        #expect(throws: NetError.self) { try WireClient(url, tls: caB) }

        try Self.install(dir, "b")
        kill(relay.pid, SIGHUP)
        #expect(
            eventually { (try? WireClient(url, tls: caB)) != nil }, "new connections use the new certificate")
        #expect(throws: NetError.self) { try WireClient(url, tls: caA) }
        #expect(before.isAlive(), "a connection made before the reload is unaffected")
        #expect(relay.server.isRunning)
        // The log line comes through a pipe that a loaded machine drains late.
        try relay.server.waitFor("\"event\":\"certificates_reloaded\"")
    }
}
