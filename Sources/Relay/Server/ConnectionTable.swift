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
        /// Arrival times of client frames not yet answered (for the reply-latency histogram).
        var pending: [UInt64] = []
        /// The last frame sent was an `ack`: an `error` right after it answers the same frame.
        var afterAck = false
    }

    private let entries = Locked<[ConnectionID: Entry]>([:])
    let latency = LatencyHistogram()
    private let failureHandler = Locked<(@Sendable (RelayStorageError) -> Void)?>(nil)
    private let recoveryHandler = Locked<(@Sendable () -> Void)?>(nil)

    func add(_ id: ConnectionID, _ socket: WebSocket) {
        entries.withLock { $0[id] = Entry(socket: socket) }
    }

    func remove(_ id: ConnectionID) {
        _ = entries.withLock { $0.removeValue(forKey: id) }
    }

    var count: Int { entries.withLock { $0.count } }

    /// A client frame arrived on `id`.
    func stamp(_ id: ConnectionID) {
        let now = Self.monotonicNanos()
        entries.withLock { table in
            // Bounded: a client that floods without reading does not grow this.
            if let n = table[id]?.pending.count, n < 64 { table[id]?.pending.append(now) }
        }
    }

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
    /// carrying every frame and close of the batch for that loop's connections, in order: the
    /// loop sends each connection's frames together at the end of its turn.
    func deliver(_ batch: [RelayDelivery]) {
        var perLoop: [(loop: EventLoop, items: [(WebSocket, RelayDelivery)])] = []
        var answered: [UInt64] = []
        func add(_ socket: WebSocket, _ item: RelayDelivery) {
            if let i = perLoop.firstIndex(where: { $0.loop === socket.loop }) {
                perLoop[i].items.append((socket, item))
            } else {
                perLoop.append((socket.loop, [(socket, item)]))
            }
        }
        entries.withLock { table in
            for item in batch {
                switch item {
                case .frame(_, let kind, let connection):
                    guard var entry = table[connection] else { continue }
                    // Every answered client frame gets one `ack` (typed commands, possibly
                    // followed by an `error` for the same frame) or, for frames without a
                    // type, one `error`.
                    let answers = kind == .ack || (kind == .error && !entry.afterAck)
                    entry.afterAck = kind == .ack
                    if answers, !entry.pending.isEmpty { answered.append(entry.pending.removeFirst()) }
                    table[connection] = entry
                    add(entry.socket, item)
                case .close(let connection):
                    guard let socket = table[connection]?.socket else { continue }
                    add(socket, item)
                }
            }
        }
        if !answered.isEmpty {
            let now = Self.monotonicNanos()
            for arrived in answered { latency.observe(nanoseconds: now &- arrived) }
        }
        for (loop, items) in perLoop {
            loop.execute {
                for (socket, item) in items {
                    switch item {
                    case .frame(let bytes, _, _): socket.send(utf8Text: bytes)
                    case .close: socket.close(code: .normal, reason: "")
                    }
                }
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

    func observe(nanoseconds: UInt64) {
        let seconds = Double(nanoseconds) / 1e9
        let index = Self.bounds.firstIndex { seconds <= $0 } ?? Self.bounds.count
        counts.withLock { c in
            c.buckets[index] += 1
            c.sum += seconds
            c.count += 1
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
