import Foundation
import Net
import Synchronization
import TestSupport
import Testing

@testable import Relay

/// `RelayServer` in process, for what the executable cannot easily show: a storage failure
/// reported by `/healthz`, and the log lines.
@Suite struct RelayServerTests {
    /// Loads nothing and fails every commit (a full disk, say), and never recovers.
    final class FailingStorage: RelayStorage {
        func load() throws(RelayStorageError) -> RelaySnapshot { .empty }
        func ping() -> RelayStorageError? { RelayStorageError(.write, "disk full") }
        func enqueue(_ writes: [StorageOp], completion: @escaping @Sendable (RelayStorageError?) -> Void) {
            DispatchQueue.global().async { completion(RelayStorageError(.write, "disk full")) }
        }
        func close() {}
    }

    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test func storageFailureTurnsHealthRedAndClosesConnections() throws {
        var config = RelayServerConfiguration(
            listenAddresses: [SocketAddress(numericHost: "127.0.0.1", port: 0)!], databasePath: "unused")
        config.metricsAddress = SocketAddress(numericHost: "127.0.0.1", port: 0)
        let lines = Lines()
        let server = try RelayServer(
            configuration: config, storage: FailingStorage(), log: RelayLog { lines.append($0) })
        let failed = Mutex<RelayStorageError?>(nil)
        server.onStorageFailure { error in failed.withLock { $0 = error } }
        try server.start()
        defer { server.shutdown(timeout: .seconds(2)) }
        let metrics = try #require(server.metricsURL)
        #expect(try HTTPClient.send(.get, url: metrics + "/healthz").status.code == 200)

        let url = try #require(server.webSocketURLs.first)
        let client = try WireClient(url)
        try client.send(["type": "bind", "appid": "example.com/failing", "side": "ffffffffff"])
        try client.send(["type": "allocate"])
        // The allocation's write fails: nothing that depends on it is revealed; the relay closes.
        _ = try client.socket.waitUntilClosed(timeout: .seconds(10))
        #expect(eventually { failed.withLock { $0 } != nil })
        let health = try HTTPClient.send(.get, url: metrics + "/healthz")
        #expect(health.status.code == 503)
        #expect(health.bodyText.contains("storage_unavailable"))
        let text = try HTTPClient.send(.get, url: metrics + "/metrics").bodyText
        #expect(text.contains("eleven_relay_storage_failed 1\n"))
        #expect(
            lines.all.contains {
                $0.contains("\"event\":\"storage_failed\"") && $0.contains("\"code\":\"write\"")
            })
        // New connections are refused too.
        let late = try WebSocketClient.connect(url: url, timeout: .seconds(5))
        _ = try late.waitUntilClosed(timeout: .seconds(10))
    }

    @Test func logLinesAreJSONObjects() throws {
        let lines = Lines()
        let log = RelayLog { lines.append($0) }
        log.log(
            .warning, "example", [("count", .int(3)), ("quote", .string("a \"b\"\n")), ("ok", .bool(true))])
        let line = try #require(lines.all.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["event"] as? String == "example")
        #expect(object["level"] as? String == "warning")
        #expect(object["count"] as? Int == 3)
        #expect(object["quote"] as? String == "a \"b\"\n")
        #expect((object["time"] as? String)?.hasSuffix("Z") == true)
    }

    @Test(arguments: [
        ("127.0.0.1:4000", "127.0.0.1:4000"), ("[::1]:4001", "[::1]:4001"), (":4002", "0.0.0.0:4002"),
        ("localhost:4003", "127.0.0.1:4003"),
    ])
    func listenAddresses(text: String, expected: String) {
        #expect(RelayServerConfiguration.parseAddress(text)?.description == expected)
    }

    @Test(arguments: [
        "4000", "127.0.0.1", "host:port", "::1:4000", "[::1]4000", "1.2.3.4:70000", "example.com:80",
    ])
    func badListenAddresses(text: String) {
        #expect(RelayServerConfiguration.parseAddress(text) == nil)
    }
}
