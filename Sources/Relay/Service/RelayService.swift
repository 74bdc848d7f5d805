import Foundation

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
    /// the process should exit so a restart resumes from the last commit. Runs on the storage
    /// thread; calling ``RelayService/shutdown()`` from here is allowed.
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
/// Guarantee: a frame is handed to the sink only after the storage writes it depends on are
/// durable (``RelayOutput/dependsOn``: its own event's writes, or the last writes of what it
/// reveals), and each connection's frames go out in the order of the events that made them.
/// Writes are queued to the storage in event order and committed in batches (group commit).
/// A frame that depends on nothing uncommitted (a `pong`, or `claimed` for a nameplate whose
/// creation is already durable) does not wait for unrelated commits of other connections.
///
/// Thread-safe: any thread may call in. The core runs under a lock; frames are encoded and
/// handed to the sink outside it, by one thread at a time.
public final class RelayService: Sendable {
    private struct Waiting {
        let dependsOn: UInt64
        let action: RelayAction
    }

    private struct State {
        var core: RelayCore
        /// Per connection, actions waiting for a commit (in order).
        var waiting: [ConnectionID: [Waiting]] = [:]
        /// Actions free to go, in order.
        var ready: [RelayAction] = []
        /// Every event up to this one has its writes committed.
        var durableThrough: UInt64 = 0
        var draining = false
        var failure: RelayStorageError?
    }

    private let state: Locked<State>
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
        self.state = Locked(State(core: core))
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
                case .connectionOpened(let id, _), .received(_, let id): s.ready.append(.close(id))
                case .connectionClosed, .tick: break
                }
                return
            }
            let output = s.core.handle(event, now: now)
            if !output.writes.isEmpty {
                // Queued under the lock so the storage sees writes in event order.
                let number = output.event
                storage.enqueue(output.writes) { [self] error in committed(number, error: error) }
            }
            for action in output.actions {
                let id = action.connection
                if s.waiting[id] == nil, output.dependsOn <= s.durableThrough {
                    s.ready.append(action)
                } else {
                    s.waiting[id, default: []].append(Waiting(dependsOn: output.dependsOn, action: action))
                }
            }
        }
        drain()
    }

    private func committed(_ event: UInt64, error: RelayStorageError?) {
        let failed: RelayStorageError? = state.withLock { s in
            guard s.failure == nil else { return nil }
            if let error {
                // Nothing that may depend on the lost writes is revealed: drop every waiting
                // frame and close every connection.
                s.failure = error
                s.waiting = [:]
                s.ready.append(contentsOf: s.core.connectionIDs.map { .close($0) })
                return error
            }
            // Storage completes in order, so everything up to `event` is durable now.
            s.durableThrough = max(s.durableThrough, event)
            var released: [(ConnectionID, Int)] = []
            for (id, queue) in s.waiting {
                let count = queue.prefix { $0.dependsOn <= s.durableThrough }.count
                guard count > 0 else { continue }
                s.ready.append(contentsOf: queue.prefix(count).map(\.action))
                released.append((id, count))
            }
            // Mutated after the loop: changing the dictionary while iterating it would copy it.
            for (id, count) in released {
                if s.waiting[id]?.count == count {
                    s.waiting[id] = nil
                } else {
                    s.waiting[id]?.removeFirst(count)
                }
            }
            return nil
        }
        drain()
        // After the closes are handed over, so the glue sees them before it stops.
        if let failed { sink.storageFailed(failed) }
    }

    /// Hands ready frames to the sink in order. One thread drains at a time; others leave
    /// their work in the queue for it.
    private func drain() {
        let mine = state.withLock { s in
            if s.draining || s.ready.isEmpty { return false }
            s.draining = true
            return true
        }
        guard mine else { return }
        while true {
            let actions: [RelayAction]? = state.withLock { s in
                if s.ready.isEmpty {
                    s.draining = false
                    return nil
                }
                let actions = s.ready
                s.ready = []
                return actions
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

extension RelayAction {
    /// The connection this action is for.
    public var connection: ConnectionID {
        switch self {
        case .send(_, let id), .close(let id): return id
        }
    }
}

extension RelayCore {
    /// The connections the core knows, for shutting everything down.
    var connectionIDs: [ConnectionID] { connections.keys.sorted() }
}
