import ClientCore
import Foundation
import JoinProtocol
import PAKE
import Testing

/// Interrupted joins at rest: sealed, private, replaced in place, removed when done.
@Suite struct PendingJoinStoreTests {
    @Test func roundTripsSealedAndPrivate() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("eleven-joins-\(UUID())")
        defer { try? FileManager.default.removeItem(at: base) }
        let store = PendingJoinStore(
            directory: StateDirectory(path: base.appendingPathComponent("home").path))
        #expect(try store.load().isEmpty)
        var random = SeededRandom(seed: [7])
        var join = PendingJoin(
            relay: "ws://127.0.0.1:1/v1", nameplate: Rendezvous.Nameplate("42"), words: "coral-piano",
            request: JoinRequest(
                displayName: "Sam", deviceLabel: "laptop", publicKeys: JoinerKeys(text: "keys")),
            createdAt: 1,
            deadline: 2, using: &random)
        try store.put(join)
        join.received.append(PendingJoin.Received(phase: .pake, body: [1, 2, 3]))
        join.sent.append(.pake)
        try store.put(join)
        let loaded = try store.load()
        #expect(loaded.count == 1)
        #expect(loaded.first?.words == "coral-piano" && loaded.first?.received.count == 1)
        #expect(loaded.first?.sent == [.pake] && loaded.first?.machine.side == join.machine.side)
        #expect(!"\(join)".contains("coral"))
        let sealed = try Data(contentsOf: URL(fileURLWithPath: store.directory.file("joins.sealed")))
        #expect(sealed.range(of: Data("coral-piano".utf8)) == nil)
        let mode = try FileManager.default.attributesOfItem(atPath: store.directory.file("joins.key"))
        #expect(mode[.posixPermissions] as? Int == 0o600)
        try store.remove(join.id)
        #expect(try store.load().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: store.directory.file("joins.sealed")))
        // A damaged file is a clear error, not a crash.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: store.directory.file("joins.sealed")))
        #expect(throws: LocalStateError.self) { try store.load() }
    }

    /// Failed attempts a joiner keeps for the next attendant (issue #20 item 5): reported only
    /// once finished, the newest at most ``JoinAttemptReport/maxPerRequest``, and an old saved
    /// request without them still opens.
    @Test func failedAttemptsAreReportedOnceFinished() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("eleven-failed-\(UUID())")
        defer { try? FileManager.default.removeItem(at: base) }
        let store = FailedJoinAttemptStore(
            directory: StateDirectory(path: base.appendingPathComponent("home").path))
        var random = SeededRandom(seed: [8])
        let joins = (0..<10).map { n in
            PendingJoin(
                relay: "ws://127.0.0.1:1/v1", nameplate: Rendezvous.Nameplate("\(n + 1)"),
                words: "coral-piano",
                request: JoinRequest(
                    displayName: "Sam", deviceLabel: "laptop", publicKeys: JoinerKeys(text: "keys")),
                createdAt: 1,
                deadline: 2, using: &random)
        }
        try store.update { $0.append(FailedJoinAttempt(joins[0], at: 100)) }
        #expect(try store.reports().isEmpty, "a join that may still be resumed is not reported")
        try store.update { $0[0].outcome = "code_mismatch" }
        let report = try store.reports()
        #expect(
            report.count == 1 && report[0].nameplate.value == "1" && report[0].side == joins[0].machine.side)
        #expect(report[0].at == 100 && report[0].isTestedGuess)
        try store.update { all in
            for join in joins.dropFirst() {
                var attempt = FailedJoinAttempt(join, at: 200)
                attempt.outcome = "timed_out"
                all.append(attempt)
            }
        }
        let reports = try store.reports()
        #expect(reports.count == JoinAttemptReport.maxPerRequest)
        #expect(reports.last?.nameplate.value == "10" && reports.last?.isTestedGuess == false)
        let sealed = try Data(contentsOf: URL(fileURLWithPath: store.directory.file("failed-joins.sealed")))
        #expect(sealed.range(of: Data("ws://127.0.0.1".utf8)) == nil)
        try store.update { $0.removeAll() }
        #expect(!FileManager.default.fileExists(atPath: store.directory.file("failed-joins.sealed")))
        // A request saved before the reports existed decodes with none.
        let old = #"{"displayName":"Sam","deviceLabel":"laptop","publicKeys":"keys"}"#
        #expect(try JSONDecoder().decode(JoinRequest.self, from: Data(old.utf8)).failedAttempts.isEmpty)
    }
}
