import ClientCore
import Foundation
import PAKE
import TestSupport
import Testing

/// Fault injection: joins run while the real `eleven-relay` (SQLite) is killed with SIGKILL at
/// random moments and restarted on the same port and database. Every join must either complete
/// with exactly the grant its attendant sent or fail with a clean error, no join may ever see
/// another's grant, and the database must pass SQLite's integrity check afterwards. (The clients
/// reconnect with back-off and resend whatever the relay had not echoed; the relay acknowledges
/// only what is durable, so nothing acknowledged is lost.)
@Suite(.serialized) struct RelayKillTests {
    @Test func joinsSurviveRelayKills() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let database = dir.appendingPathComponent("relay.sqlite").path
            let port = try TestSupport.freePort()
            let relay = RestartingRelay(port: port, database: database)
            try relay.start()
            defer { relay.stop() }
            let url = "ws://127.0.0.1:\(port)/v1"

            let killer = Killer(relay: relay, seed: 5, every: 100...400, maxKills: 8)
            Thread.detachNewThread { killer.run() }
            // Four workers run joins one after another until the killer is done (at most 15 each).
            let workers = 4
            let results = (0..<workers).map { _ in Handoff<[Result<Bool, JoinRunError>]>() }
            for w in 0..<workers {
                Thread.detachNewThread {
                    var outcomes: [Result<Bool, JoinRunError>] = []
                    var n = 0
                    while n < 15 && !killer.isDone {
                        let index = w * 100 + n
                        outcomes.append(Self.oneJoin(url: url, index: index).map { $0 == Self.grant(index) })
                        n += 1
                    }
                    results[w].put(outcomes)
                }
            }
            var completed = 0
            var failed: [String] = []
            for (w, box) in results.enumerated() {
                guard let outcomes = box.take(timeout: 120) else {
                    Issue.record("worker \(w) did not finish in 120 s")
                    continue
                }
                for outcome in outcomes {
                    switch outcome {
                    case .success(let right):
                        #expect(right, "a join received another join's grant")
                        completed += 1
                    case .failure(let error): failed.append(error.code)
                    }
                }
            }
            killer.stop()
            print(
                "relay kill -9: \(completed + failed.count) joins, \(killer.kills) kills, \(completed) completed, "
                    + "\(failed.count) failed cleanly \(failed)")
            #expect(killer.kills >= 4, "the relay was killed while joins ran")
            #expect(completed >= 8 && failed.count <= killer.kills, "honest joins finish across restarts")
            relay.stop()
            let check = try TestSupport.run("/usr/bin/env", ["sqlite3", database, "PRAGMA integrity_check;"])
            #expect(check.status == 0, "sqlite3 (scripts/deps --test installs it): \(check.stderr)")
            #expect(check.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
        }
    }

    static func grant(_ i: Int) -> [UInt8] { Array(#"{"join":\#(i)}"#.utf8) }

    /// One attendant and one joiner with their own code; the joiner's result.
    static func oneJoin(url: String, index: Int) -> Result<[UInt8], JoinRunError> {
        let words = ["coral-piano", "lamp-violin", "tulip-harbor"][index % 3]
        let nameplate = Handoff<Rendezvous.Nameplate?>()
        Thread.detachNewThread {
            do {
                _ = try JoinRunner.attend(
                    relayURL: url, words: words, inviterName: "Paul", announceWaiting: false,
                    timeout: .seconds(60), onNameplate: { nameplate.put($0) },
                    decide: { _, _ in .approve(grant: grant(index)) })
            } catch {
                nameplate.put(nil)
            }
        }
        guard let np = nameplate.take(timeout: 60), let np else {
            return .failure(.relay(.timedOut("the attendant got no nameplate")))
        }
        do {
            return .success(
                try JoinRunner.join(
                    relayURL: url, nameplate: np, words: words, request: JoinScenarios.request,
                    timeout: .seconds(60), progress: { _ in }))
        } catch {
            return .failure(error)
        }
    }
}

/// `eleven-relay` on a fixed port and database, restartable after a kill.
final class RestartingRelay: @unchecked Sendable {
    let port: UInt16
    let database: String
    private let lock = NSLock()
    private var current: ServerProcess?

    init(port: UInt16, database: String) {
        self.port = port
        self.database = database
    }

    func start() throws {
        let process = try ServerProcess(
            TestSupport.productPath("eleven-relay"), ["--listen", "127.0.0.1:\(port)", "--db", database],
            port: port)
        lock.withLock { current = process }
    }

    /// SIGKILL, then start again on the same port and database.
    func killAndRestart() throws {
        let victim = lock.withLock { current }
        victim?.stop(signal: SIGKILL)
        try start()
    }

    func stop() {
        let process = lock.withLock { () -> ServerProcess? in
            defer { current = nil }
            return current
        }
        process?.stop()
    }
}

/// Kills the relay at random intervals, at most `maxKills` times.
final class Killer: @unchecked Sendable {
    private let relay: RestartingRelay
    private let every: ClosedRange<Int>
    private let maxKills: Int
    private let lock = NSLock()
    private var random: SeededRandom
    private var stopped = false
    private(set) var kills = 0

    init(relay: RestartingRelay, seed: UInt64, every: ClosedRange<Int>, maxKills: Int) {
        self.relay = relay
        self.every = every
        self.maxKills = maxKills
        random = SeededRandom(seed: seed)
    }

    func run() {
        while true {
            let wait: Int = lock.withLock {
                let span = UInt32(every.upperBound - every.lowerBound + 1)
                let r = random.bytes(count: 4).withUnsafeBytes { $0.load(as: UInt32.self) }
                return every.lowerBound + Int(r % span)
            }
            usleep(UInt32(wait) * 1000)
            guard lock.withLock({ !stopped && kills < maxKills }) else { return }
            do {
                try relay.killAndRestart()
                lock.withLock { kills += 1 }
            } catch {
                Issue.record("the relay did not restart: \(error)")
                return
            }
        }
    }

    func stop() { lock.withLock { stopped = true } }

    /// Stopped, or every kill done.
    var isDone: Bool { lock.withLock { stopped || kills >= maxKills } }
}
