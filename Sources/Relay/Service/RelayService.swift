import Foundation
import Synchronization

/// What the network glue implements so the relay can talk to connections. Calls arrive in
/// order from whichever thread is delivering (a caller of ``RelayService`` or the storage
/// thread after a commit); implementations must be thread-safe (typically: hand the frame to
/// the connection's event loop) and must not block.
public protocol RelayConnectionSink: Sendable {
    /// Send one WebSocket text frame.
    func send(text: String, to connection: ConnectionID)
    /// Close the connection once the frames sent before are written. The glue still reports
    /// the closure with ``RelayService/connectionClosed(id:)``.
    func close(_ connection: ConnectionID)
    /// Storage failed: the relay has stopped serving (every connection is being closed) and
    /// the process should exit so a restart resumes from the last commit.
    func storageFailed(_ error: RelayStorageError)
}

extension RelayConnectionSink {
    public func storageFailed(_ error: RelayStorageError) {}
}

/// The source of `server_tx`/`server_rx` times.
public protocol RelayClock: Sendable {
    func now() -> RelayInstant
}

/// Wall-clock time.
public struct SystemRelayClock: RelayClock {
    public init() {}
    public func now() -> RelayInstant { RelayInstant(secondsSince1970: Date().timeIntervalSince1970) }
}

/// The relay as the network glue sees it: owns the pure ``RelayCore`` and a ``RelayStorage``,
/// and turns connection events into frames through a ``RelayConnectionSink``.
///
/// Guarantee: a frame is handed to the sink only after every storage write of its own event
/// and of every earlier event is durable. Writes are queued to the storage in event order;
/// replies wait in an ordered queue until their commit completes (the storage batches the
/// commits); events without writes still wait behind earlier ones, so per-connection order is
/// the order of events.
///
/// Thread-safe: any thread may call in. The core runs under a lock; frames are encoded and
/// handed to the sink outside it.
public final class RelayService: Sendable {
    private struct Entry {
        let token: UInt64
        var ready: Bool
        var actions: [RelayAction]
    }

    private struct State {
        var core: RelayCore
        var queue: [Entry] = []
        var head = 0
        var firstToken: UInt64 = 0
        var nextToken: UInt64 = 0
        var draining = false
        var failure: RelayStorageError?
    }

    private let state: Mutex<State>
    private let storage: any RelayStorage
    private let sink: any RelayConnectionSink
    private let clock: any RelayClock

    /// Loads the stored state and starts serving it.
    public init(
        config: RelayConfig, storage: any RelayStorage, sink: any RelayConnectionSink,
        clock: any RelayClock = SystemRelayClock(),
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) throws(RelayStorageError) {
        let snapshot = try storage.load()
        let core = RelayCore(config: config, snapshot: snapshot, now: clock.now(), random: random)
        self.state = Mutex(State(core: core))
        self.storage = storage
        self.sink = sink
        self.clock = clock
    }

    // MARK: - Events from the glue

    /// A WebSocket connection is open (handshake done): the welcome is sent.
    public func connectionOpened(id: ConnectionID, remote: ClientAddress?) {
        process(.connectionOpened(id, address: remote))
    }

    /// One text frame arrived.
    public func received(text: String, from id: ConnectionID) {
        process(.received(Array(text.utf8), from: id))
    }

    /// One binary frame arrived (the reference decodes those too).
    public func received(bytes: [UInt8], from id: ConnectionID) {
        process(.received(bytes, from: id))
    }

    /// The connection is gone.
    public func connectionClosed(id: ConnectionID) {
        process(.connectionClosed(id))
    }

    /// Call every `config.expiry.checkIntervalSeconds`.
    public func tick() {
        process(.tick)
    }

    public var metrics: RelayMetrics { state.withLock { $0.core.metrics } }
    public var gauges: RelayGauges { state.withLock { $0.core.gauges } }
    public var config: RelayConfig { state.withLock { $0.core.config } }
    /// Set once a commit failed; the relay no longer serves.
    public var failure: RelayStorageError? { state.withLock { $0.failure } }

    /// Waits for queued writes and closes the storage. Call after the last event.
    public func shutdown() {
        storage.close()
    }

    // MARK: - Ordering

    private func process(_ event: RelayEvent) {
        let now = clock.now()
        state.withLock { s in
            if s.failure != nil {
                // Not serving any more: refuse anything new.
                switch event {
                case .connectionOpened(let id, _), .received(_, let id):
                    s.queue.append(Entry(token: s.nextToken, ready: true, actions: [.close(id)]))
                    s.nextToken += 1
                case .connectionClosed, .tick:
                    break
                }
                return
            }
            let output = s.core.handle(event, now: now)
            guard !output.isEmpty else { return }
            let token = s.nextToken
            s.nextToken += 1
            s.queue.append(Entry(token: token, ready: output.writes.isEmpty, actions: output.actions))
            if !output.writes.isEmpty {
                // Queued under the lock so the storage sees writes in event order.
                storage.enqueue(output.writes) { [self] error in committed(token, error: error) }
            }
        }
        drain()
    }

    private func committed(_ token: UInt64, error: RelayStorageError?) {
        let failed: RelayStorageError? = state.withLock { s in
            guard s.failure == nil else { return nil }
            if let error {
                // Nothing after the lost writes may be revealed: drop every pending reply and
                // close every connection.
                s.failure = error
                let live = s.core.connectionIDs
                s.queue.removeSubrange(s.head...)
                s.queue.append(Entry(token: s.nextToken, ready: true, actions: live.map { .close($0) }))
                s.nextToken += 1
                return error
            }
            // `firstToken` is the token of `queue[0]`.
            guard token >= s.firstToken else { return nil }
            let index = Int(token - s.firstToken)
            if s.queue.indices.contains(index), s.queue[index].token == token {
                s.queue[index].ready = true
            }
            return nil
        }
        if let failed { sink.storageFailed(failed) }
        drain()
    }

    /// Hands ready frames to the sink in order. One thread drains at a time; others leave
    /// their work in the queue for it.
    private func drain() {
        let mine = state.withLock { s in
            if s.draining { return false }
            s.draining = true
            return true
        }
        guard mine else { return }
        while true {
            let actions: [RelayAction]? = state.withLock { s in
                var ready: [RelayAction] = []
                while s.head < s.queue.count, s.queue[s.head].ready {
                    ready.append(contentsOf: s.queue[s.head].actions)
                    s.head += 1
                }
                if s.head > 256, s.head * 2 > s.queue.count {
                    s.firstToken = s.head < s.queue.count ? s.queue[s.head].token : s.nextToken
                    s.queue.removeSubrange(..<s.head)
                    s.head = 0
                } else if s.head == s.queue.count, s.head > 0 {
                    s.firstToken = s.nextToken
                    s.queue.removeAll(keepingCapacity: true)
                    s.head = 0
                }
                if ready.isEmpty {
                    s.draining = false
                    return nil
                }
                return ready
            }
            guard let actions else { return }
            perform(actions)
        }
    }

    private func perform(_ actions: [RelayAction]) {
        let serverTX = clock.now()
        for action in actions {
            switch action {
            case .send(let message, let id): sink.send(text: message.encoded(serverTX: serverTX), to: id)
            case .close(let id): sink.close(id)
            }
        }
    }
}

extension RelayCore {
    /// The connections the core knows, for shutting everything down.
    var connectionIDs: [ConnectionID] { connections.keys.sorted() }
}
