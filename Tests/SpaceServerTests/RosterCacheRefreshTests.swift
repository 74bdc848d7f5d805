import Foundation
import SpaceModel
import Testing

@testable import ClientCore

/// ``RosterCache/refresh(_:)`` shares one request among concurrent callers, and never answers a
/// caller with a read that started before its call: a member added before a refresh is seen by
/// it, however many other refreshes are in flight.
@Suite struct RosterCacheRefreshTests {
    @Test func concurrentRefreshesShareRequestsAndNoneAnswersWithAnOlderRead() throws {
        let running = try HTTPServerTests.Running()
        let (session, _, _, _) = try running.space()
        let rosters = RosterCache()
        _ = try rosters.refresh(session)
        let eventReads = {
            running.log.lines.withLock { lines in
                lines.filter { $0.contains(#""GET""#) && $0.contains(#"/events""#) }.count
            }
        }

        /// Eight threads refreshing 20 times each, and on until `meanwhile` is done (at most 400
        /// times each), so refreshes are in flight all the while it runs.
        func hammer(_ meanwhile: () throws -> Void) rethrows -> (calls: Int, failures: Int) {
            let calls = Shared(0)
            let failures = Shared(0)
            let done = Shared(false)
            let group = DispatchGroup()
            for _ in 0..<8 {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    for n in 0..<400 where n < 20 || !done.load() {
                        if (try? rosters.refresh(session)) == nil { failures.add(1) }
                        calls.add(1)
                    }
                }
            }
            defer {
                done.store(true)
                group.wait()
            }
            try meanwhile()
            done.store(true)
            group.wait()
            return (calls.load(), failures.load())
        }

        // Nothing else asks the server: fewer reads reach it than refreshes are made.
        let readsBefore = eventReads()
        let shared = hammer {}
        let reads = eventReads() - readsBefore
        #expect(shared.failures == 0)
        #expect(reads < shared.calls, "\(reads) reads for \(shared.calls) refreshes")

        // Members are added one after another meanwhile; a refresh that starts after each
        // addition was taken must list it, whatever other refreshes are in flight.
        var stale = 0
        let fresh = try hammer {
            for n in 0..<10 {
                let added = try session.addMember(keys: DeviceIdentity.generate().publicKeys, name: "M\(n)")
                if try rosters.refresh(session).roster.members[added.id] == nil { stale += 1 }
            }
        }
        #expect(fresh.failures == 0)
        #expect(stale == 0, "refreshes answered with a read older than the call")
        // And the cache ends where the server's chain is.
        let events = try session.client.events(session.saved.space)
        #expect(rosters.verified?.roster.head == (try session.verifiedRoster(events)).head)
    }
}

/// A small thread-safe counter or flag for the test's threads.
private final class Shared<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func load() -> Value { lock.withLock { value } }
    func store(_ new: Value) { lock.withLock { value = new } }
}

extension Shared where Value == Int {
    fileprivate func add(_ n: Int) { lock.withLock { value += n } }
}
