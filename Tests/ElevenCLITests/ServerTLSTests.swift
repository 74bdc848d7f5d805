import Foundation
import Net
import TestSupport
import Testing

/// `eleven-server --tls-cert/--tls-key`: HTTPS served directly, certificates reloaded on SIGHUP.
@Suite struct ServerTLSTests {
    @Test func httpsAndReloadOnSIGHUP() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
            try TestSupport.makeCertificateChain(in: dir, name: "a")
            try TestSupport.makeCertificateChain(in: dir, name: "b")
            func install(_ name: String) throws {
                for (from, to) in [("\(name).pem", "live.pem"), ("\(name)-key.pem", "live-key.pem")] {
                    try? FileManager.default.removeItem(atPath: path(to))
                    try FileManager.default.copyItem(atPath: path(from), toPath: path(to))
                }
            }
            try install("a")
            let server = try ElevenServerUnderTest(
                arguments: ["--tls-cert", path("live.pem"), "--tls-key", path("live-key.pem")],
                scheme: "https")
            defer { server.stop() }
            let pinnedA = TLSClientConfiguration(caFile: path("a-ca.pem"))
            let pinnedB = TLSClientConfiguration(caFile: path("b-ca.pem"))
            let health = try HTTPClient.send(.get, url: "\(server.url)/healthz", tls: pinnedA)
            #expect(health.status.code == 200)
            // The wrong CA, and plain HTTP on the TLS port, are refused.
            #expect(throws: NetError.self) {
                try HTTPClient.send(.get, url: "\(server.url)/healthz", tls: pinnedB)
            }
            #expect(throws: NetError.self) {
                try HTTPClient.send(
                    .get, url: server.url.replacingOccurrences(of: "https", with: "http") + "/healthz")
            }
            // SIGHUP: new connections get the new certificate.
            try install("b")
            kill(server.pid, SIGHUP)
            var reloaded = false
            let deadline = Date().addingTimeInterval(10)
            while !reloaded && Date() < deadline {
                reloaded =
                    (try? HTTPClient.send(.get, url: "\(server.url)/healthz", tls: pinnedB))?.status.code
                    == 200
                if !reloaded { usleep(50_000) }
            }
            #expect(reloaded)
            // A new connection (the kept-alive one made before the reload is still trusted).
            #expect(throws: NetError.self) {
                try HTTPClient.send(
                    .get, url: "\(server.url)/healthz", headers: ["Connection": "close"], tls: pinnedA)
            }
        }
    }
}
