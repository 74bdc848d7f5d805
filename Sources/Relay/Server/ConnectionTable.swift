import Foundation
import Net
import Support

/// The glue's side of the seam: maps ``ConnectionID``s to open WebSockets and implements
/// ``RelayConnectionSink`` on top of them.
///
/// Ordering: the relay hands frames over in order from whichever thread drains (a loop thread
/// or the storage thread). Every send and close is queued through the socket's loop with
/// `execute`, never performed directly even when already on that loop, so a frame handed over
/// later can never overtake one queued earlier from another thread.
final class ConnectionTable: RelayConnectionSink {
    private struct Entry {
        let socket: WebSocket
        let arrivals: Arrivals
    }

    /// Arrival times of a connection's client frames not yet answered, for the reply-latency
    /// histogram. Touched only on the connection's event loop: stamped as frames arrive (the
    /// message handler runs there) and taken as their answers are written (``deliver(_:)``'s
    /// task runs there too), so it needs no lock; the table's lock, taken for every frame,
    /// was shared by both loops and the storage thread.
    final class Arrivals: @unchecked Sendable {
        private var times: [UInt64] = []
        private var first = 0
        /// The last answer was an `ack`: an `error` right after it answers the same frame.
        private var afterAck = false

        /// A client frame arrived.
        func stamp() {
            // Bounded: a client that floods without reading does not grow this.
            guard times.count - first < 64 else { return }
            if first > 0, first == times.count {
                times.removeAll(keepingCapacity: true)
                first = 0
            }
            times.append(ConnectionTable.monotonicNanos())
        }

        /// The arrival of the frame an outgoing item answers, if it answers one. Every
        /// answered client frame gets one `ack` (typed commands, possibly followed by an
        /// `error` for the same frame) or one `answered` mark where the client asked for no
        /// acks (likewise), or, for frames without a type, one `error`.
        func answer(_ item: RelayDelivery) -> UInt64? {
            let kind: RelayFrameKind
            switch item {
            case .frame(_, let k, _): kind = k
            case .answered: kind = .ack
            case .close: return nil
            }
            let answers = kind == .ack || (kind == .error && !afterAck)
            afterAck = kind == .ack
            guard answers, first < times.count else { return nil }
            first += 1
            return times[first - 1]
        }
    }

    private let entries = Locked<[ConnectionID: Entry]>([:])
    let latency = LatencyHistogram()
    private let failureHandler = Locked<(@Sendable (RelayStorageError) -> Void)?>(nil)
    private let recoveryHandler = Locked<(@Sendable () -> Void)?>(nil)

    /// Adds a connection; stamp its client frames' arrivals on the returned ``Arrivals``, on
    /// the connection's loop.
    @discardableResult
    func add(_ id: ConnectionID, _ socket: WebSocket) -> Arrivals {
        let arrivals = Arrivals()
        entries.withLock { $0[id] = Entry(socket: socket, arrivals: arrivals) }
        return arrivals
    }

    func remove(_ id: ConnectionID) {
        _ = entries.withLock { $0.removeValue(forKey: id) }
    }

    var count: Int { entries.withLock { $0.count } }

    func setFailureHandler(_ handler: @escaping @Sendable (RelayStorageError) -> Void) {
        failureHandler.withLock { $0 = handler }
    }

    func setRecoveryHandler(_ handler: @escaping @Sendable () -> Void) {
        recoveryHandler.withLock { $0 = handler }
    }

    // MARK: RelayConnectionSink

    func send(text: String, to connection: ConnectionID) {
        let kind: RelayFrameKind =
            text.utf8.starts(with: Self.ackPrefix)
            ? .ack : text.utf8.starts(with: Self.errorPrefix) ? .error : .other
        deliver([.frame(Array(text.utf8), kind, to: connection)])
    }

    /// One pass under the table's lock for the whole batch, then one `execute` per event loop
    /// carrying every frame, close and answered mark of the batch for that loop's connections,
    /// in order: the loop sends each connection's frames together at the end of its turn, and
    /// times the answers as it writes them.
    func deliver(_ batch: [RelayDelivery]) {
        var perLoop: [(loop: EventLoop, items: [(Entry, RelayDelivery)])] = []
        entries.withLock { table in
            for item in batch {
                let connection: ConnectionID
                switch item {
                case .frame(_, _, let id), .close(let id), .answered(let id): connection = id
                }
                guard let entry = table[connection] else { continue }
                if let i = perLoop.firstIndex(where: { $0.loop === entry.socket.loop }) {
                    perLoop[i].items.append((entry, item))
                } else {
                    perLoop.append((entry.socket.loop, [(entry, item)]))
                }
            }
        }
        let latency = self.latency
        for (loop, items) in perLoop {
            loop.execute {
                var answered: [UInt64] = []
                for (entry, item) in items {
                    if let arrived = entry.arrivals.answer(item) { answered.append(arrived) }
                    switch item {
                    case .frame(let bytes, _, _): entry.socket.send(utf8Text: bytes)
                    case .close: entry.socket.close(code: .normal, reason: "")
                    case .answered: break
                    }
                }
                if !answered.isEmpty { latency.observe(since: answered, now: Self.monotonicNanos()) }
            }
        }
    }

    func close(_ connection: ConnectionID) {
        deliver([.close(connection)])
    }

    func storageFailed(_ error: RelayStorageError) {
        let handler = failureHandler.withLock { $0 }
        handler?(error)
    }

    func storageRecovered() {
        let handler = recoveryHandler.withLock { $0 }
        handler?()
    }

    private static let ackPrefix = Array(#"{"type":"ack""#.utf8)
    private static let errorPrefix = Array(#"{"type":"error""#.utf8)

    static func monotonicNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}

/// A Prometheus histogram of seconds from a client frame's arrival to the relay's answer
/// (its `ack` or `error`, which goes out together with every reply the frame caused, once the
/// writes they depend on are committed).
final class LatencyHistogram: Sendable {
    static let bounds: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
    ]

    private struct Counts {
        var buckets = [Int](repeating: 0, count: LatencyHistogram.bounds.count + 1)
        var sum = 0.0
        var count = 0
    }

    private let counts = Locked(Counts())

    /// One observation per arrival time: `now` minus it. One lock for all of them.
    func observe(since arrivals: [UInt64], now: UInt64) {
        counts.withLock { c in
            for arrived in arrivals {
                let seconds = Double(now &- arrived) / 1e9
                let index = Self.bounds.firstIndex { seconds <= $0 } ?? Self.bounds.count
                c.buckets[index] += 1
                c.sum += seconds
                c.count += 1
            }
        }
    }

    /// The histogram in the Prometheus text format.
    func render(name: String, help: String) -> String {
        let c = counts.withLock { $0 }
        var out = "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        var cumulative = 0
        for (i, bound) in Self.bounds.enumerated() {
            cumulative += c.buckets[i]
            out += "\(name)_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        out += "\(name)_bucket{le=\"+Inf\"} \(c.count)\n"
        out += "\(name)_sum \(c.sum)\n\(name)_count \(c.count)\n"
        return out
    }
}
