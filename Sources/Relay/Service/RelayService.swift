import Foundation
import Mailbox
import Support

/// What the network glue implements so the relay can talk to connections. Calls arrive in
/// order from whichever thread is delivering (a caller of ``RelayService`` or the storage
/// thread after a commit); implementations must be thread-safe (typically: hand the frame to
/// the connection's event loop) and must not block.
public protocol RelayConnectionSink: Sendable {
    /// Send one WebSocket text frame.
    func send(text: String, to connection: ConnectionID)
    /// Send the frames and closes of one batch, in order (by default one ``send(text:to:)`` or
    /// ``close(_:)`` each).
    func deliver(_ batch: [RelayDelivery])
    /// Close the connection once the frames sent before are written. The glue still reports
    /// the closure with ``RelayService/connectionClosed(id:)``.
    func close(_ connection: ConnectionID)
    /// Storage failed: every connection is being closed and the relay answers with errors
    /// until the storage is back (it probes it and reloads by itself). Runs on a storage
    /// thread; calling ``RelayService/shutdown()`` from here is allowed.
    func storageFailed(_ error: RelayStorageError)
    /// The storage is back and the relay serves again from the reloaded state.
    func storageRecovered()
}

extension RelayConnectionSink {
    public func storageFailed(_ error: RelayStorageError) {}
    public func storageRecovered() {}

    /// Hands over every frame and close of one batch, in order: ``send(text:to:)`` and
    /// ``close(_:)`` for each. A glue that hands a batch to its connections' threads at once
    /// (``ConnectionTable``) overrides it.
    public func deliver(_ batch: [RelayDelivery]) {
        for item in batch {
            switch item {
            case .frame(let bytes, _, let id): send(text: String(decoding: bytes, as: UTF8.self), to: id)
            case .close(let id): close(id)
            case .answered: break
            }
        }
    }
}

/// One thing a ``RelayService`` hands its sink (``RelayConnectionSink/deliver(_:)``).
public enum RelayDelivery: Sendable, Equatable {
    /// A text frame: the message's JSON as UTF-8, and which kind of message it is.
    case frame([UInt8], RelayFrameKind, to: ConnectionID)
    /// Close the connection once the frames before are written.
    case close(ConnectionID)
    /// A command answered without a frame (the connection asked for no `ack`s): nothing to
    /// send, only a mark for a glue that times its answers.
    case answered(ConnectionID)
}

/// What a frame answers, for a glue that times the relay's answers: every typed command gets
/// an `ack` (or an ``RelayDelivery/answered(_:)`` mark where it asked for no acks), a frame
/// without a type an `error`.
public enum RelayFrameKind: Sendable, Equatable {
    case ack, error, other

    init(_ message: ServerMessage) {
        switch message {
        case .ack: self = .ack
        case .error: self = .error
        default: self = .other
        }
    }
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
/// When a commit fails (the database went away), nothing that depended on it is revealed:
/// every connection is closed (clients reconnect and resume), and until the storage answers
/// again new connections get a welcome with an `error` and frames get a `storage_unavailable`
/// error. The service probes the storage every second and, once it answers, reloads the state
/// (an *epoch*) and serves again; the process never exits for it.
///
/// With a shared store (several nodes) it also follows the other nodes' changes
/// (``RelayChangeFollower``) and passes the core's nameplate requests to the store, handing an
/// answer to the core only once the feed has been applied up to it.
///
/// Thread-safe: any thread may call in. The core runs under a lock; frames are encoded and
/// handed to the sink outside it, by one thread at a time.
public final class RelayService: RelayChangeFollower {
    private struct Waiting {
        let dependsOn: UInt64
        let action: RelayAction
    }

    private struct State {
        var core: RelayCore
        /// Incremented on every reload: completions of an earlier epoch are ignored.
        var epoch: UInt64 = 0
        /// Per connection, actions waiting for a commit (in order).
        var waiting: [ConnectionID: [Waiting]] = [:]
        /// Actions free to go, in order.
        var ready: [RelayAction] = []
        /// Every event up to this one has its writes committed.
        var durableThrough: UInt64 = 0
        var draining = false
        var failure: RelayStorageError?
        var stopped = false
        /// The shared store's change feed is applied up to here.
        var feedPosition: Int64 = 0
        /// This node's own committed feed entries after `feedPosition` (applied already; they
        /// count once every entry before them is).
        var ownPositions: Set<Int64> = []
        /// Nameplate answers waiting for the feed to reach their position.
        var grants: [(reservation: NameplateReservation, connection: ConnectionID)] = []
        var recoveries = 0
    }

    private let state: Locked<State>
    private let storage: any RelayStorage
    private let sink: any RelayConnectionSink
    /// The source of `server_tx`/`server_rx` times and of the core's `now`.
    private let clock: any WallClock

    /// Loads the stored state and starts serving it.
    public init(
        config: RelayConfig, storage: any RelayStorage, sink: any RelayConnectionSink,
        clock: any WallClock = SystemClock(),
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) throws(RelayStorageError) {
        let (snapshot, position) = try storage.loadForServing()
        let core = RelayCore(
            config: config, snapshot: snapshot, now: RelayInstant(secondsSince1970: clock.now()),
            random: random, shared: storage.isShared)
        self.state = Locked(State(core: core, feedPosition: position))
        self.storage = storage
        self.sink = sink
        self.clock = clock
        if storage.isShared { storage.follow(self) }
    }

    /// The clock's time as the relay's messages carry it.
    private func instant() -> RelayInstant { RelayInstant(secondsSince1970: clock.now()) }

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

    /// A message over the size limit arrived and was dropped unread (`size` bytes).
    public func receivedOversized(size: Int, from id: ConnectionID) {
        process(.oversized(size, from: id))
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
    /// Set while the storage is unavailable (the relay answers with errors until it is back).
    public var failure: RelayStorageError? { state.withLock { $0.failure } }
    /// How many times the relay reloaded its state after the storage came back.
    public var recoveries: Int { state.withLock { $0.recoveries } }
    /// The shared store's change-feed position applied so far (0 on a single node).
    public var feedPosition: Int64 { state.withLock { $0.feedPosition } }

    /// Waits for queued writes and closes the storage. Call after the last event.
    public func shutdown() {
        state.withLock { $0.stopped = true }
        storage.close()
    }

    // MARK: - Ordering

    private func process(_ event: RelayEvent) {
        let now = instant()
        var leader = true
        if case .tick = event { leader = storage.isExpiryLeader }
        state.withLock { s in
            if s.failure != nil || s.stopped {
                refuse(event, &s)
                return
            }
            s.core.expiresMailboxes = leader
            handle(s.core.handle(event, now: now), &s)
        }
        drain()
    }

    /// While the storage is unavailable: turn away what arrives, with an error the client
    /// shows.
    private func refuse(_ event: RelayEvent, _ s: inout State) {
        switch event {
        case .connectionOpened(let id, _):
            s.ready.append(.send(.welcome(Welcome(error: RelayError.storageUnavailable.message)), to: id))
            s.ready.append(.close(id))
        case .received(_, let id), .oversized(_, let id):
            s.ready.append(.send(.error(.storageUnavailable, orig: .null), to: id))
            s.ready.append(.close(id))
        case .connectionClosed, .tick, .replicated, .nameplateGranted:
            break
        }
    }

    /// Queues the core's writes and requests, and its actions behind the commits they need.
    private func handle(_ output: RelayOutput, _ s: inout State) {
        let epoch = s.epoch
        if !output.writes.isEmpty {
            // Queued under the lock so the storage sees writes in event order.
            let number = output.event
            storage.enqueue(output.writes) { [self] error in committed(number, epoch: epoch, error: error) }
        }
        for request in output.requests {
            storage.reserveNameplate(request.nameplate) { [self] result in
                reserved(result, for: request.connection, epoch: epoch)
            }
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

    private func committed(_ event: UInt64, epoch: UInt64, error: RelayStorageError?) {
        if let error {
            fail(error, epoch: epoch)
            return
        }
        state.withLock { s in
            guard s.failure == nil, s.epoch == epoch else { return }
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
        }
        // Once for all the completions of the commit: its frames go to the sink in one batch.
        CommitBatch.afterBatch(self) { self.drain() }
    }

    /// The storage lost writes (or the feed): reveal nothing that may depend on them, close
    /// every connection, and probe the storage until the state can be reloaded.
    private func fail(_ error: RelayStorageError, epoch: UInt64) {
        let first: Bool = state.withLock { s in
            guard s.failure == nil, s.epoch == epoch, !s.stopped else { return false }
            s.failure = error
            s.waiting = [:]
            s.grants = []
            s.ready.append(contentsOf: s.core.connectionIDs.map { .close($0) })
            return true
        }
        guard first else { return }
        drain()
        // After the closes are handed over, so the glue sees them before anything else.
        sink.storageFailed(error)
        scheduleRecovery()
    }

    private func scheduleRecovery() {
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(1)) { [weak self] in
            self?.recover()
        }
    }

    /// Once the storage answers: a fresh core on the reloaded state (the connections were all
    /// closed when it failed), a new epoch.
    private func recover() {
        guard !state.withLock({ $0.stopped }) else { return }
        if storage.ping() == nil,
            let (snapshot, position) = try? storage.loadForServing()
        {
            let recovered: Bool = state.withLock { s in
                guard !s.stopped else { return false }
                let old = s.core
                var core = RelayCore(
                    config: old.config, snapshot: snapshot, now: instant(), random: old.random,
                    shared: old.isShared)
                core.metrics = old.metrics
                s.core = core
                s.epoch += 1
                s.durableThrough = 0
                s.waiting = [:]
                s.grants = []
                s.feedPosition = position
                s.ownPositions = []
                s.failure = nil
                s.recoveries += 1
                return true
            }
            if recovered { sink.storageRecovered() }
            return
        }
        scheduleRecovery()
    }

    // MARK: - Shared stores

    private func reserved(
        _ result: Result<NameplateReservation, RelayStorageError>, for id: ConnectionID, epoch: UInt64
    ) {
        switch result {
        case .failure(let error):
            fail(error, epoch: epoch)
        case .success(let reservation):
            let now = instant()
            state.withLock { s in
                guard s.failure == nil, s.epoch == epoch else { return }
                s.grants.append((reservation, id))
                releaseGrants(&s, now: now)
            }
            drain()
        }
    }

    /// Hands the core the nameplate answers whose feed position has been applied.
    private func releaseGrants(_ s: inout State, now: RelayInstant) {
        let position = s.feedPosition
        let due = s.grants.filter { $0.reservation.position <= position }
        guard !due.isEmpty else { return }
        s.grants.removeAll { $0.reservation.position <= position }
        for (reservation, id) in due {
            handle(s.core.handle(.nameplateGranted(reservation.grant, to: id), now: now), &s)
        }
    }

    public var appliedPosition: Int64? {
        state.withLock { s in s.failure == nil && !s.stopped ? s.feedPosition : nil }
    }

    public func applyChanges(_ changes: [(position: Int64, ops: [StorageOp])], through position: Int64) {
        let now = instant()
        state.withLock { s in
            guard s.failure == nil, !s.stopped, position > s.feedPosition else { return }
            // A reload may have passed some of them already.
            for change in changes where change.position > s.feedPosition && !change.ops.isEmpty {
                handle(s.core.handle(.replicated(change.ops), now: now), &s)
            }
            s.feedPosition = position
            Self.passOwnPositions(&s)
            releaseGrants(&s, now: now)
        }
        drain()
    }

    public func ownChangesCommitted(_ positions: [Int64]) {
        let now = instant()
        state.withLock { s in
            guard s.failure == nil, !s.stopped else { return }
            for position in positions where position > s.feedPosition { s.ownPositions.insert(position) }
            guard s.ownPositions.contains(s.feedPosition + 1) else { return }
            Self.passOwnPositions(&s)
            releaseGrants(&s, now: now)
        }
        drain()
    }

    /// Moves the feed position over this node's own entries right after it (positions become
    /// visible in order, so nothing before them is missing), and forgets those behind it.
    private static func passOwnPositions(_ s: inout State) {
        while s.ownPositions.remove(s.feedPosition + 1) != nil { s.feedPosition += 1 }
        if !s.ownPositions.isEmpty { s.ownPositions = s.ownPositions.filter { $0 > s.feedPosition } }
    }

    public func feedFailed(_ error: RelayStorageError) {
        let epoch = state.withLock { $0.epoch }
        fail(error, epoch: epoch)
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

    /// Encodes a batch (every frame stamped with one `server_tx`) and hands it to the sink in
    /// one call, so a glue can pass each connection thread all of its frames at once: handed
    /// one by one from the storage thread, the loop woke for the first and sent it alone while
    /// the next was still being encoded (an `ack` and its `claimed`, two `send`s).
    private func perform(_ actions: [RelayAction]) {
        let serverTX = ServerMessage.serverTXText(instant())
        var batch: [RelayDelivery] = []
        batch.reserveCapacity(actions.count)
        for action in actions {
            switch action {
            case .send(let message, let id):
                batch.append(
                    .frame(message.encodedBytes(serverTXText: serverTX), RelayFrameKind(message), to: id))
            case .close(let id): batch.append(.close(id))
            case .answered(let id): batch.append(.answered(id))
            }
        }
        sink.deliver(batch)
    }
}

extension RelayAction {
    /// The connection this action is for.
    public var connection: ConnectionID {
        switch self {
        case .send(_, let id), .close(let id), .answered(let id): return id
        }
    }
}

extension RelayCore {
    /// The connections the core knows, for shutting everything down.
    var connectionIDs: [ConnectionID] { connections.keys.sorted() }
}
