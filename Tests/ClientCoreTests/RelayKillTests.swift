import ClientCore
import Foundation
import JoinProtocol
import PAKE
import SpaceModel
import Support
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
            let relay = RestartingServer(
                TestSupport.productPath("eleven-relay"), ["--listen", "127.0.0.1:\(port)", "--db", database],
                port: port)
            try relay.start()
            defer { relay.stop() }
            let url = "ws://127.0.0.1:\(port)/v1"

            let killer = RandomKiller(server: relay, seed: 5, every: 100...400, maxKills: 8)
            Thread.detachNewThread { killer.run() }
            // Four workers run joins one after another until the killer is done and each has
            // completed two (at most 15 each): on a slow machine the kills can all fall within a
            // worker's first join or two.
            let workers = 4
            let results = (0..<workers).map { _ in Handoff<[Result<Bool, JoinRunError>]>() }
            for w in 0..<workers {
                Thread.detachNewThread {
                    var outcomes: [Result<Bool, JoinRunError>] = []
                    var n = 0
                    var done = 0
                    while n < 15 && (!killer.isDone || done < 2) {
                        let index = w * 100 + n
                        let outcome = Self.oneJoin(url: url, index: index).map { $0 == Self.grant(index) }
                        if case .success = outcome { done += 1 }
                        outcomes.append(outcome)
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
            #expect(killer.restartFailure == nil, "the relay restarts: \(killer.restartFailure ?? "")")
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
