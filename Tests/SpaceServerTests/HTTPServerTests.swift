import ClientCore
import Foundation
import Net
import SpaceModel
import SpaceServer
import Support
import Synchronization
import TestSupport
import Testing

/// The HTTP layer of the space server on a real loopback socket: routing, long-polls, limits,
/// logs, shutdown.
@Suite struct HTTPServerTests {
    final class LogLines: Sendable {
        let lines = Mutex<[String]>([])
    }

    final class Running: Sendable {
        let server: SpaceHTTPServer
        let log = LogLines()
        let databasePath: String
        var url: String { server.baseURL }

        init(
            maximumBodyBytes: Int = 1 << 20, maximumEventsPerRequest: Int = 100,
            maximumNotesPerRequest: Int = 100, storesBundlesWithMembers: Bool = true,
            checksThreadCount: Bool = true, clock: any WallClock = SystemClock()
        ) throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "space-http-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            databasePath = directory.appendingPathComponent("db.sqlite").path
            var configuration = SpaceHTTPConfiguration(databasePath: databasePath)
            configuration.listenAddresses = [SocketAddress(numericHost: "127.0.0.1", port: 0)!]
            configuration.api.maximumBodyBytes = maximumBodyBytes
            configuration.api.maximumEventsPerRequest = maximumEventsPerRequest
            configuration.api.maximumNotesPerRequest = maximumNotesPerRequest
            configuration.api.storesBundlesWithMembers = storesBundlesWithMembers
            configuration.api.checksThreadCount = checksThreadCount
            configuration.maximumWaitSeconds = 30
            configuration.clock = clock
            let log = self.log
            configuration.log = ServerLog { line in log.lines.withLock { $0.append(line) } }
            server = try SpaceHTTPServer(configuration: configuration)
            try server.start()
        }

        /// A space with its owner's session and the default thread.
        func space() throws -> (SpaceSession, ThreadID, [ThreadID: ThreadKey], Roster) {
            let identity = DeviceIdentity.generate()
            let saved = try SpaceSession.createSpace(name: "Family", server: url, identity: identity)
            let session = try SpaceSession(saved: saved, identity: identity)
            let opened = try session.open(thread: nil)
            return (session, opened.thread.id, opened.keys, opened.roster)
        }

        deinit { server.shutdown() }
    }

    @Test func healthAndRouting() throws {
        let running = try Running()
        let health = try HTTPClient.send(.get, url: running.url + "/healthz")
        #expect(health.status.code == 200)
        #expect(health.bodyText == #"{"ok":true}"#)
        let unknown = try HTTPClient.send(.get, url: running.url + "/api/nothing/here")
        #expect(unknown.status.code == 404)
        #expect(unknown.bodyText.contains(#""error":"unknown_route""#))
        let method = try HTTPClient.send(.put, url: running.url + "/api/spaces")
        #expect(method.status.code == 405)
    }

    @Test func longPollWakesOnNewMessage() throws {
        let running = try Running()
        let (session, thread, keys, roster) = try running.space()
        let started = Date()
        let poller = OnThread {
            try session.read(thread, since: 0, wait: 20, roster: roster, keys: keys).messages.map(\.text)
        }
        // Wait until the poll is parked on the server, then post.
        let deadline = Date().addingTimeInterval(10)
        while running.server.waitingClients == 0 && Date() < deadline { usleep(10_000) }
        #expect(running.server.waitingClients == 1)
        try session.send("wake up", to: thread, keys: keys)
        #expect(try poller.value() == ["wake up"])
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(running.server.waitingClients == 0)
    }

    @Test func longPollTimesOutEmptyAndRefusesBadWaits() throws {
        let running = try Running()
        let (session, thread, _, _) = try running.space()
        let started = Date()
        let page = try session.client.messages(session.saved.space, thread: thread, since: 0, wait: 1)
        #expect(page.messages.isEmpty)
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed >= 0.9 && elapsed < 5)
        #expect(throws: SpaceClientError.self) {
            try session.client.messages(session.saved.space, thread: thread, wait: 999)
        }
        do {
            _ = try session.client.messages(session.saved.space, thread: thread, wait: 999)
        } catch {
            #expect(error.code == "invalid_query")
        }
    }

    @Test func shutdownAnswersWaitingPolls() throws {
        let running = try Running()
        let (session, thread, _, _) = try running.space()
        let poller = OnThread {
            try session.client.messages(session.saved.space, thread: thread, wait: 25).messages.count
        }
        let deadline = Date().addingTimeInterval(10)
        while running.server.waitingClients == 0 && Date() < deadline { usleep(10_000) }
        let started = Date()
        running.server.shutdown()
        #expect(try poller.value() == 0)
        #expect(Date().timeIntervalSince(started) < 4)
    }

    @Test func oversizeBodyRefusedFromItsLength() throws {
        let running = try Running(maximumBodyBytes: 1024)
        let response = try HTTPClient.send(
            .post, url: running.url + "/api/spaces", headers: ["Content-Type": "application/json"],
            body: Array(repeating: UInt8(ascii: " "), count: 4096))
        #expect(response.status.code == 413)
    }

    @Test func logsHoldNoTokensKeysOrBodies() throws {
        let running = try Running()
        let (session, thread, keys, _) = try running.space()
        try session.send("a secret plan", to: thread, keys: keys)
        _ = try session.client.messages(session.saved.space, thread: thread)
        let log = running.log.lines.withLock { $0 }.joined(separator: "\n")
        #expect(log.contains(#""event":"request""#))
        for secret in [
            session.saved.deviceToken, session.saved.adminToken ?? "?", "a secret plan", "Bearer",
            session.identity.publicKeys.signing.description,
        ] {
            #expect(!log.contains(secret))
        }
    }

    @Test func unreachableServerSaysSoPlainly() throws {
        let port = try TestSupport.freePort()
        let client = try SpaceClient(server: "http://127.0.0.1:\(port)")
        do {
            _ = try client.spaceInfo(.random())
            Issue.record("expected a failure")
        } catch {
            #expect(error.kind == .unreachable)
            #expect(error.code == "connection_refused")
            #expect(error.message == "can't reach http://127.0.0.1:\(port): connection refused")
        }
        #expect(throws: SpaceClientError.self) { try SpaceClient(server: "ftp://x") }
        #expect(throws: SpaceClientError.self) { try SpaceClient(server: "http://x/some/path") }
    }
}

/// Runs blocking work on its own thread (not the shared task pool, which blocking calls starve).
final class OnThread<T: Sendable>: Sendable {
    private let result = Mutex<Result<T, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () throws -> T) {
        Thread.detachNewThread { [self] in
            let outcome = Result { try body() }
            result.withLock { $0 = outcome }
            done.signal()
        }
    }

    /// Waits (at most 30 s) for the result.
    func value() throws -> T {
        guard done.wait(timeout: .now() + 30) == .success else {
            throw SpaceClientError(.unreachable, code: "test_timeout", message: "no result in 30 s")
        }
        return try result.withLock { $0! }.get()
    }
}
