import ClientCore
import Foundation
import SpaceModel
import Support
import TestSupport
import Testing

/// Fault injection: members post messages while the real `eleven-server` is killed with SIGKILL
/// at random moments and restarted on the same port and database. Every message whose post was
/// acknowledged must be there afterwards, nothing may appear that was never sent, and the
/// database must pass SQLite's integrity check.
@Suite(.serialized) struct ServerKillTests {
    @Test func acknowledgedMessagesSurviveServerKills() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let database = dir.appendingPathComponent("server.sqlite").path
            let port = try TestSupport.freePort()
            let server = RestartingServer(
                TestSupport.productPath("eleven-server"),
                ["--listen", "127.0.0.1:\(port)", "--db", database, "--quiet"], port: port)
            try server.start()
            defer { server.stop() }

            let identity = DeviceIdentity.generate()
            let saved = try SpaceSession.createSpace(
                name: "Family", server: "http://127.0.0.1:\(port)", identity: identity, ownerName: "Paul")
            let opened = try SpaceSession(saved: saved, identity: identity).open(thread: nil)

            let killer = RandomKiller(server: server, seed: 9, every: 100...400, maxKills: 6)
            Thread.detachNewThread { killer.run() }
            let workers = 3
            let acknowledged = (0..<workers).map { _ in Handoff<(sent: [String], failures: Int)>() }
            for w in 0..<workers {
                Thread.detachNewThread {
                    var sent: [String] = []
                    var failures = 0
                    var n = 0
                    // Bounded: at most 400 posts per worker, stopping once every kill is done and
                    // the worker has had 20 posts acknowledged (a slow machine may fit every kill
                    // into a few posts).
                    while n < 400 && (!killer.isDone || sent.count < 20) {
                        let text = "worker \(w) message \(n)"
                        n += 1
                        guard let session = try? SpaceSession(saved: saved, identity: identity) else {
                            failures += 1
                            continue
                        }
                        do {
                            try session.send(text, to: opened.thread.id, keys: opened.keys)
                            sent.append(text)
                        } catch {
                            failures += 1
                            usleep(20_000)
                        }
                    }
                    acknowledged[w].put((sent, failures))
                }
            }
            var sent: [String] = []
            var failures = 0
            for box in acknowledged {
                let result = try #require(box.take(timeout: 120), "a worker did not finish")
                sent += result.sent
                failures += result.failures
            }
            killer.stop()
            #expect(killer.restartFailure == nil, "the server restarts: \(killer.restartFailure ?? "")")

            let session = try SpaceSession(saved: saved, identity: identity)
            let read = try session.read(opened.thread.id, roster: opened.roster, keys: opened.keys)
            let stored = read.messages.map(\.text)
            let missing = Set(sent).subtracting(stored)
            let invented = Set(stored).subtracting(
                (0..<workers).flatMap { w in
                    (0..<400).map { "worker \(w) message \($0)" }
                })
            print(
                "space server kill -9: \(killer.kills) kills, \(sent.count) posts acknowledged, "
                    + "\(failures) refused while down, \(stored.count) stored, \(missing.count) lost")
            #expect(killer.kills >= 3, "the server was killed while members posted")
            #expect(missing.isEmpty, "acknowledged messages lost: \(missing.sorted().prefix(5))")
            #expect(invented.isEmpty, "messages nobody sent: \(invented.sorted().prefix(5))")
            #expect(read.rejected == 0)
            #expect(Set(stored).count == stored.count, "a message was stored twice")
            #expect(sent.count > 50, "the load ran")

            server.stop()
            let check = try TestSupport.run("/usr/bin/env", ["sqlite3", database, "PRAGMA integrity_check;"])
            #expect(check.status == 0, "sqlite3 (scripts/deps --test installs it): \(check.stderr)")
            #expect(check.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
        }
    }
}
