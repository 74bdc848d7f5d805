import Foundation
import SpaceModel

/// One read shared by concurrent callers: one request is in flight at a time, and everyone who
/// calls while it is asked takes the next one's answer, so the server sees one read per
/// request's duration instead of one per caller, and nobody gets an answer from a request that
/// started before their call (it may not show what they just did).
final class SharedRequest<Value>: @unchecked Sendable {
    private let flights = NSCondition()
    /// Requests started and finished (one in flight at a time, so they finish in order), and
    /// the latest one's outcome.
    private var started: UInt64 = 0
    private var finished: UInt64 = 0
    private var fetching = false
    private var last: Result<Value, SpaceClientError>?

    /// The answer of a `fetch` that started after this call: this caller's own, or a
    /// concurrent caller's.
    func run(_ fetch: () throws(SpaceClientError) -> Value) throws(SpaceClientError) -> Value {
        flights.lock()
        let arrival = started
        while finished <= arrival {
            if !fetching {
                fetching = true
                started += 1
                let generation = started
                flights.unlock()
                let outcome = Result { () throws(SpaceClientError) in try fetch() }
                flights.lock()
                fetching = false
                finished = generation
                last = outcome
                flights.broadcast()
                flights.unlock()
                return try outcome.get()
            }
            flights.wait()
        }
        // A request that started after this call has finished (the latest one, the freshest).
        let outcome = last
        flights.unlock()
        guard let outcome else { return try fetch() }
        return try outcome.get()
    }
}
