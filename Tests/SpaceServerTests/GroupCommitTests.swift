import ClientCore
import Foundation
import SpaceModel
import Synchronization
import TestSupport
import Testing

@testable import SpaceServer

/// Requests from many threads at once are committed in batches (`SpaceAPI.handle`): each gets its
/// own answer, a refused one leaves nothing behind even when it had written before failing, and
/// everything answered as stored is in the database file.
@Suite struct GroupCommitTests {
    @Test func concurrentRequestsAreAnsweredSeparatelyAndKeptOrUndoneEach() async throws {
        try await TestSupport.offPool {
            let harness = try APIHarness()
            var space = try TestSpace.create(harness)
            let ann = try space.add("Ann")
            let owner = space.owner
            var threads: [(ThreadID, ThreadKey)] = []
            for _ in 0..<3 { threads.append(try space.createThread(by: owner, for: [owner])) }
            threads.sort { $0.0 < $1.0 }
            let target = "\(space.base)/threads/\(threads[0].0)/messages"
            // Wraps for Ann of every thread; the last (stored after the others) is signed by
            // someone else, so the request fails after writing the first two.
            var wraps = threads.dropLast().map {
                owner.identity.wrap($0.1, for: ann.record, in: space.space, thread: $0.0)
            }
            wraps.append(
                ann.identity.wrap(threads[2].1, for: ann.record, in: space.space, thread: threads[2].0))
            let wrapBody = Array(
                try JSONSerialization.data(withJSONObject: try harness.plain(["wraps": wraps])))

            let workers = 8
            let perWorker = 10
            // Every request made beforehand; the workers share only the API.
            let headers = ["Authorization": "Bearer \(owner.token)"]
            var requests: [[APIRequest]] = []
            for worker in 0..<workers {
                var mine: [APIRequest] = []
                for n in 0..<perWorker {
                    let message = owner.identity.encrypt(
                        Array("w\(worker) m\(n)".utf8), with: threads[0].1, in: space.space,
                        thread: threads[0].0, as: owner.id)
                    let body = try JSONSerialization.data(
                        withJSONObject: try harness.plain(["message": message]))
                    mine.append(
                        APIRequest(
                            method: "POST", target: target, headers: headers, body: Array(body),
                            remoteAddress: "127.0.0.1"))
                    if n % 5 == 0 {
                        mine.append(
                            APIRequest(
                                method: "POST", target: "\(space.base)/wraps", headers: headers,
                                body: wrapBody,
                                remoteAddress: "127.0.0.1"))
                    }
                }
                requests.append(mine)
            }
            let api = harness.api
            let all = requests
            let batchesBefore = api.batchCount
            let statuses = Mutex<[Int: Int]>([:])
            // One thread per worker (not `concurrentPerform`, which runs no more threads than
            // there are cores: on two cores a batch would never find anyone waiting).
            let finished = DispatchGroup()
            for worker in 0..<workers {
                finished.enter()
                Thread.detachNewThread {
                    for request in all[worker] {
                        let status = api.handle(request).status
                        statuses.withLock { $0[status, default: 0] += 1 }
                    }
                    finished.leave()
                }
            }
            #expect(finished.wait(timeout: .now() + 120) == .success, "the workers finish")
            #expect(statuses.withLock { $0 } == [201: workers * perWorker, 403: workers * 2])
            // Requests that waited were committed together.
            #expect(api.batchCount - batchesBefore < all.joined().count)
            // Nothing of the refused wrap requests was kept.
            let own = try harness.send("GET", "\(space.base)/wraps", token: ann.token)
            #expect(own.status == 200)
            #expect(own.array("wraps").isEmpty)
            // Every acknowledged message is in the file, as another connection reads it.
            let reopened = try SpaceAPI(databasePath: harness.databasePath)
            let list = reopened.handle(
                APIRequest(
                    method: "GET", target: target + "?limit=500",
                    headers: ["Authorization": "Bearer \(owner.token)"], body: [], remoteAddress: "127.0.0.1")
            )
            #expect(list.status == 200)
            let json = try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any]
            #expect((json?["messages"] as? [Any])?.count == workers * perWorker)
        }
    }

    /// `handle(_:answer:)` (the HTTP server's path) never blocks its caller: requests queued
    /// while a batch runs are handled together on the batch thread, each answered once, after
    /// the commit, and kept.
    @Test func queuedRequestsAreAnsweredByTheBatchThread() async throws {
        try await TestSupport.offPool {
            let harness = try APIHarness()
            let space = try TestSpace.create(harness)
            let owner = space.owner
            let (thread, key) = try space.createThread(by: owner, for: [owner])
            let target = "\(space.base)/threads/\(thread)/messages"
            let count = 40
            var requests: [APIRequest] = []
            for n in 0..<count {
                let message = owner.identity.encrypt(
                    Array("m\(n)".utf8), with: key, in: space.space, thread: thread, as: owner.id)
                let body = try JSONSerialization.data(withJSONObject: try harness.plain(["message": message]))
                requests.append(
                    APIRequest(
                        method: "POST", target: target, headers: ["Authorization": "Bearer \(owner.token)"],
                        body: Array(body), remoteAddress: "127.0.0.1"))
            }
            let api = harness.api
            let batchesBefore = api.batchCount
            let statuses = Mutex<[Int]>([])
            let answered = DispatchSemaphore(value: 0)
            let caller = pthread_self()
            let answeredOnCaller = Mutex(false)
            // Queued while the service is held: no batch can run, yet every call returns.
            api.state.withLock { _ in
                for request in requests {
                    api.handle(request) { response in
                        if pthread_equal(pthread_self(), caller) != 0 {
                            answeredOnCaller.withLock { $0 = true }
                        }
                        statuses.withLock { $0.append(response.status) }
                        answered.signal()
                    }
                }
                #expect(statuses.withLock { $0.isEmpty })
            }
            for _ in 0..<count {
                #expect(answered.wait(timeout: .now() + 60) == .success, "every request is answered")
            }
            #expect(statuses.withLock { $0 } == Array(repeating: 201, count: count))
            #expect(!answeredOnCaller.withLock { $0 })
            // At most the batch taken before the lock was free, and all the rest together.
            #expect(api.batchCount - batchesBefore <= 2)
            let reopened = try SpaceAPI(databasePath: harness.databasePath)
            let list = reopened.handle(
                APIRequest(
                    method: "GET", target: target + "?limit=500",
                    headers: ["Authorization": "Bearer \(owner.token)"], body: [], remoteAddress: "127.0.0.1")
            )
            let json = try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any]
            #expect((json?["messages"] as? [Any])?.count == count)
        }
    }
}
