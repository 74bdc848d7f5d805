import Mailbox

/// The mailbox server's rules as a pure state machine: events in (a connection opened, a frame
/// arrived, a connection closed, time passed), ``RelayOutput`` out (durable writes to commit,
/// then frames to send and connections to close). No sockets, threads, clock or entropy of its
/// own: time comes with every event and randomness is injected, so every rule is testable.
///
/// Semantics follow the deployed server (magic-wormhole-mailbox-server 0.8.0), see
/// `wormhole-protocol.md` §2–§11, with these deliberate differences:
/// - non-numeric nameplates, non-JSON and wrongly typed fields get an `error` reply instead of
///   a dropped connection;
/// - a third side is refused as `crowded` without writing anything for it (the reference
///   writes its rows first, which keeps the mailbox alive until it is pruned);
/// - `add` to a mailbox every side has closed gets an `error` instead of an orphan row;
/// - the last `close` of a mailbox whose nameplate was never released deletes the nameplate
///   and answers `closed` (the reference fails a foreign key there and drops the connection);
/// - `message` ids of any JSON type are kept (the reference fails on non-scalar ones);
/// - a deleted 1- to 3-digit nameplate is not allocated again for `nameplateReuseDelay` (the
///   reference hands it out at once, so an attendant claiming its number back, or a late
///   joiner, can land in a stranger's new invite);
/// - abuse limits, optional hashcash admission, and per-AppID expiry.
public struct RelayCore: Sendable {
    public let config: RelayConfig
    /// The durable state, always equal to what the emitted writes produce from the snapshot
    /// the core started from.
    public private(set) var state: RelaySnapshot
    public internal(set) var metrics = RelayMetrics()
    /// Whether other relay nodes share the store (see `RelayCore+Replication.swift`).
    public let isShared: Bool
    /// Whether a tick expires idle mailboxes; among nodes sharing a store only one does.
    public var expiresMailboxes = true

    // Derived indexes, maintained only by `write(_:)`.
    var namesByApp: [AppID: Set<Nameplate>] = [:]
    var nameplatesByMailbox: [MailboxKey: Set<Nameplate>] = [:]
    var nameplateOwners: [NameplateKey: SourceAddress] = [:]
    var openNameplatesByAddress: [SourceAddress: Int] = [:]
    /// Sum of the bodies of every stored message.
    var storedBodyBytes = 0

    // Runtime state (gone after a restart, by design).
    var connections: [ConnectionID: ConnectionState] = [:]
    var subscribers: [MailboxKey: [ConnectionID]] = [:]
    var connectionLimiter: RateLimiter
    var allocationLimiter: RateLimiter
    var claimLimiter: RateLimiter
    var usedStamps: [String: RelayInstant] = [:]
    /// Short nameplates deleted less than `config.nameplateReuseDelay` ago, with the instant
    /// they were deleted: allocation passes them over (at most 999 per AppID).
    var restingNames: [AppID: [Nameplate: RelayInstant]] = [:]
    /// Per AppID, how many of the 9 one-digit, 90 two-digit and 900 three-digit names are live
    /// or resting, so allocation skips a length with none free without looking at its names.
    var unavailableShort: [AppID: [Int]] = [:]
    /// When `restingNames` last forgot the names whose rest is over.
    var restingPrunedAt = RelayInstant(secondsSince1970: 0)
    /// The instant of the event being handled.
    var now: RelayInstant
    /// Mailboxes loaded from storage count as active from this instant, so a restart never
    /// expires a channel whose clients are still reconnecting.
    let startedAt: RelayInstant
    var random: any RandomNumberGenerator & Sendable

    /// Output being built by the current event.
    var output = RelayOutput()
    /// Number of the current event.
    var eventNumber: UInt64 = 0
    /// For each live nameplate and mailbox, the last event that changed it durably (touches
    /// do not count): what a reply revealing it must wait for.
    var lastDurableWrite: [StateKey: UInt64] = [:]
    /// The last event that changed anything durably.
    var lastDurableWriteAnywhere: UInt64 = 0

    public init(
        config: RelayConfig, snapshot: RelaySnapshot = .empty, now: RelayInstant,
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(), shared: Bool = false
    ) {
        self.config = config
        self.isShared = shared
        self.state = snapshot
        self.startedAt = now
        self.now = now
        self.random = random
        self.connectionLimiter = RateLimiter(limit: config.limits.connectionRate)
        self.allocationLimiter = RateLimiter(limit: config.limits.allocationRate)
        self.claimLimiter = RateLimiter(limit: config.limits.claimRate)
        storedBodyBytes = snapshot.mailboxes.values.reduce(0) { total, mailbox in
            mailbox.messages.reduce(total) { $0 + $1.body.utf8.count }
        }
        for (key, record) in snapshot.nameplates {
            if let length = NameplateAllocator.shortLength(key.name) {
                unavailableShort[key.app, default: [0, 0, 0]][length - 1] += 1
            }
            namesByApp[key.app, default: []].insert(key.name)
            nameplatesByMailbox[MailboxKey(app: key.app, id: record.mailbox), default: []].insert(key.name)
        }
    }

    // MARK: - Events

    /// Handles one event at time `now`.
    public mutating func handle(_ event: RelayEvent, now: RelayInstant) -> RelayOutput {
        eventNumber += 1
        self.now = now
        output = RelayOutput(event: eventNumber)
        switch event {
        case .connectionOpened(let id, let address): openConnection(id, address: address, now: now)
        case .received(let payload, let id): receive(payload, from: id, now: now)
        case .oversized(_, let id): receiveOversized(from: id, now: now)
        case .connectionClosed(let id): closeConnection(id, now: now)
        case .tick: expire(now: now)
        case .replicated(let ops): replicate(ops)
        case .nameplateGranted(let grant, let id): granted(grant, to: id, now: now)
        }
        let result = output
        output = RelayOutput()
        return result
    }

    public mutating func connectionOpened(
        _ id: ConnectionID, address: ClientAddress?, now: RelayInstant
    ) -> RelayOutput {
        handle(.connectionOpened(id, address: address), now: now)
    }

    public mutating func received(_ payload: [UInt8], from id: ConnectionID, now: RelayInstant) -> RelayOutput
    {
        handle(.received(payload, from: id), now: now)
    }

    public mutating func received(_ text: String, from id: ConnectionID, now: RelayInstant) -> RelayOutput {
        handle(.received(Array(text.utf8), from: id), now: now)
    }

    public mutating func connectionClosed(_ id: ConnectionID, now: RelayInstant) -> RelayOutput {
        handle(.connectionClosed(id), now: now)
    }

    public mutating func tick(now: RelayInstant) -> RelayOutput {
        handle(.tick, now: now)
    }

    /// Current sizes for `/metrics`.
    public var gauges: RelayGauges {
        RelayGauges(
            connections: connections.count,
            subscribedConnections: subscribers.values.reduce(0) { $0 + $1.count },
            nameplates: state.nameplates.count, mailboxes: state.mailboxes.count,
            messages: state.mailboxes.values.reduce(0) { $0 + $1.messages.count },
            restingNameplates: restingNames.values.reduce(0) { $0 + $1.count })
    }

    // MARK: - Frames

    mutating func receive(_ payload: [UInt8], from id: ConnectionID, now: RelayInstant) {
        guard let connection = connections[id], !connection.closing else { return }
        if connection.awaiting != nil {
            guard connection.deferred.count < Self.maximumDeferredFrames else {
                connections[id]?.closing = true
                send(.error(.tooManyErrors, orig: .null), to: id)
                output.actions.append(.close(id))
                return
            }
            connections[id]?.deferred.append(payload)
            return
        }
        metrics.framesReceived += 1
        guard payload.count <= config.limits.maximumMessageBytes else {
            refuseOversized(id, connection, now: now)
            return
        }
        let frame: ClientFrame
        switch ClientMessage.decode(payload, maximumFieldBytes: config.limits.maximumFieldBytes) {
        case .failure(let problem):
            fail(id, problem.error, orig: problem.orig)
            return
        case .success(let decoded):
            frame = decoded
        }
        // Every typed command is acknowledged before it is processed, unless the connection's
        // first `bind` asked for no acks (Eleven's extension, `ClientMessage.acksKey`): then
        // the frame is only marked answered, for the glue's reply-latency histogram.
        var acks = connection.acks
        if !frame.acks, frame.kind == .bind, connection.binding == nil {
            acks = false
            connections[id]?.acks = false
        }
        if acks {
            send(.ack(id: frame.id), to: id)
        } else {
            output.actions.append(.answered(id))
        }
        dispatch(frame, from: id, now: now)
    }

    /// A message the glue dropped unread for its size.
    mutating func receiveOversized(from id: ConnectionID, now: RelayInstant) {
        guard let connection = connections[id], !connection.closing else { return }
        metrics.framesReceived += 1
        refuseOversized(id, connection, now: now)
    }

    /// Answers an oversized message with an `error` (stock clients show it and stop, where a
    /// close makes them reconnect and send it again), and charges its address: each one costs
    /// ``oversizeConnectionCost`` connection tokens, so an address that keeps sending them is
    /// soon refused new connections (`connection_rate_limited`) for a while.
    private mutating func refuseOversized(
        _ id: ConnectionID, _ connection: ConnectionState, now: RelayInstant
    ) {
        let source = connection.address?.source ?? SourceAddress("unknown")
        if !config.limits.exemptAddresses.contains(source) {
            connectionLimiter.charge(source, cost: Self.oversizeConnectionCost, now: now)
        }
        fail(id, .messageTooLarge(limit: config.limits.maximumMessageBytes), orig: .null)
    }

    /// Connection tokens an oversized message costs its address (a new connection costs 1).
    static let oversizeConnectionCost = 10.0

    private mutating func dispatch(_ frame: ClientFrame, from id: ConnectionID, now: RelayInstant) {
        let orig = JSONValue.object(frame.object)
        let fields = frame.message
        let result: Result<Void, RelayError>
        switch frame.kind {
        case .ping:
            result = fields.fields { message -> JSONValue? in
                guard case .ping(let value) = message else { return nil }
                return value
            }.map { send(.pong($0), to: id) }
        case .bind:
            result = bind(
                fields.fields { message in
                    guard case .bind(let appID, let side, _) = message else { return nil }
                    return (appID: appID, side: side)
                }, connection: id)
        case .submitPermission:
            result = submitPermission(
                fields.fields { message in
                    guard case .submitPermission(let method, let stamp) = message else { return nil }
                    return (method: method, stamp: stamp)
                }, connection: id, now: now)
        default:
            guard let binding = connections[id]?.binding else {
                result = .failure(.mustBindFirst)
                break
            }
            result = dispatchBound(frame, connection: id, app: binding.app, side: binding.side, now: now)
        }
        if case .failure(let error) = result { fail(id, error, orig: orig) }
    }

    private mutating func dispatchBound(
        _ frame: ClientFrame, connection id: ConnectionID, app: AppID, side: Side, now: RelayInstant
    ) -> Result<Void, RelayError> {
        let fields = frame.message
        switch frame.kind {
        case .list: return list(connection: id, app: app)
        case .allocate:
            return allocate(connection: id, app: app, side: side, now: now, orig: .object(frame.object))
        case .claim:
            let name = fields.fields { message -> Nameplate? in
                guard case .claim(let name) = message else { return nil }
                return name
            }
            return claim(name, connection: id, app: app, side: side, now: now, orig: .object(frame.object))
        case .release:
            let name = fields.fields { message -> Nameplate?? in
                guard case .release(let name) = message else { return nil }
                return .some(name)
            }
            return release(name, connection: id, app: app, side: side, now: now)
        case .open:
            let mailbox = fields.fields { message -> MailboxID? in
                guard case .open(let mailbox) = message else { return nil }
                return mailbox
            }
            return open(mailbox, connection: id, app: app, side: side, now: now)
        case .add:
            let request = fields.fields { message -> (phase: Phase, body: String)? in
                guard case .add(let phase, let body) = message else { return nil }
                return (phase: phase, body: body)
            }
            return add(
                request, id: frame.id, echo: frame.echo, connection: id, app: app, side: side, now: now)
        case .close:
            let request = fields.fields { message -> (mailbox: MailboxID?, mood: String?)? in
                guard case .close(let mailbox, let mood) = message else { return nil }
                return (mailbox: mailbox, mood: mood)
            }
            return close(request, connection: id, app: app, side: side, now: now)
        case nil: return .failure(.unknownType)
        case .ping, .bind, .submitPermission: return .success(())
        }
    }

    // MARK: - Output helpers

    mutating func send(_ message: ServerMessage, to id: ConnectionID) {
        output.actions.append(.send(message, to: id))
    }

    /// Sends an `error`, counts it, and closes a connection that has used up its error budget.
    mutating func fail(_ id: ConnectionID, _ error: RelayError, orig: JSONValue) {
        send(.error(error, orig: orig), to: id)
        metrics.errors[error.code, default: 0] += 1
        guard var connection = connections[id] else { return }
        connection.errorCount += 1
        if connection.errorCount >= config.limits.maximumErrorsPerConnection, !connection.closing {
            connection.closing = true
            send(.error(.tooManyErrors, orig: .null), to: id)
            output.actions.append(.close(id))
        }
        connections[id] = connection
    }

    /// Records that this event's replies reveal `key`, so they wait for its last durable write.
    mutating func noteRead(_ key: StateKey) {
        if let event = lastDurableWrite[key] { output.dependsOn = max(output.dependsOn, event) }
    }

    /// Records that this event's replies reveal state anywhere (`list`).
    mutating func noteReadAnywhere() {
        output.dependsOn = max(output.dependsOn, lastDurableWriteAnywhere)
    }

    /// Applies a durable change to the state and queues it for storage. The only place the
    /// durable state and its indexes change.
    mutating func write(_ op: StorageOp) {
        trackDependency(of: op)
        apply(op)
        output.writes.append(op)
    }

    /// Applies a change to the state and its indexes without queueing it (it is durable
    /// already: another node's commit, or a nameplate the shared store created).
    mutating func apply(_ op: StorageOp) {
        switch op {
        case .putNameplate(let key, let mailbox):
            if let old = state.nameplates[key]?.mailbox {
                nameplatesByMailbox[MailboxKey(app: key.app, id: old)]?.remove(key.name)
            }
            let inserted = namesByApp[key.app, default: []].insert(key.name).inserted
            nameplatesByMailbox[MailboxKey(app: key.app, id: mailbox), default: []].insert(key.name)
            if restingNames[key.app]?.removeValue(forKey: key.name) != nil {
                // Resting, now live: it stays unavailable.
                if restingNames[key.app]?.isEmpty == true { restingNames[key.app] = nil }
            } else if inserted, let length = NameplateAllocator.shortLength(key.name) {
                unavailableShort[key.app, default: [0, 0, 0]][length - 1] += 1
            }
        case .deleteNameplate(let key):
            if state.nameplates[key] != nil, let length = NameplateAllocator.shortLength(key.name) {
                if config.nameplateReuseDelay > 0 {
                    // Live, now resting: it stays unavailable.
                    restingNames[key.app, default: [:]][key.name] = now
                } else {
                    unavailableShort[key.app]?[length - 1] -= 1
                }
            }
            if let old = state.nameplates[key]?.mailbox {
                let mailboxKey = MailboxKey(app: key.app, id: old)
                nameplatesByMailbox[mailboxKey]?.remove(key.name)
                if nameplatesByMailbox[mailboxKey]?.isEmpty == true { nameplatesByMailbox[mailboxKey] = nil }
            }
            namesByApp[key.app]?.remove(key.name)
            if namesByApp[key.app]?.isEmpty == true { namesByApp[key.app] = nil }
            if let owner = nameplateOwners.removeValue(forKey: key) {
                openNameplatesByAddress[owner, default: 1] -= 1
                if openNameplatesByAddress[owner] == 0 { openNameplatesByAddress[owner] = nil }
            }
        case .deleteMailbox(let key):
            subscribers[key] = nil
            storedBodyBytes -= state.mailboxes[key]?.messages.reduce(0) { $0 + $1.body.utf8.count } ?? 0
        case .appendMessage(let key, let message):
            if state.mailboxes[key] != nil { storedBodyBytes += message.body.utf8.count }
        case .putNameplateSide, .putMailbox, .touchMailbox, .putMailboxSide:
            break
        }
        state.apply(op)
    }

    /// A fresh mailbox id: 8 random bytes in lowercase base32 without padding (13 characters),
    /// as the reference makes them.
    mutating func newMailboxID(app: AppID) -> MailboxID {
        while true {
            let id = MailboxID(Base32.lowercaseUnpadded(randomBytes(8)))
            if state.mailboxes[MailboxKey(app: app, id: id)] == nil { return id }
        }
    }

    mutating func randomBytes(_ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count {
            var word = random.next()
            for _ in 0..<8 where bytes.count < count {
                bytes.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return bytes
    }
}

/// A nameplate or mailbox, for tracking which writes a reply depends on.
enum StateKey: Hashable, Sendable {
    case nameplate(NameplateKey)
    case mailbox(MailboxKey)
}

extension RelayCore {
    /// Every write but a touch must be durable before a reply that depends on it. A lost touch
    /// only makes a mailbox look idle for longer, and a restart grants a fresh idle period.
    mutating func trackDependency(of op: StorageOp) {
        let key: StateKey
        var deleted = false
        switch op {
        case .touchMailbox: return
        case .putNameplate(let k, _), .putNameplateSide(let k, _, _): key = .nameplate(k)
        case .deleteNameplate(let k):
            key = .nameplate(k)
            deleted = true
        case .putMailbox(let k, _, _), .putMailboxSide(let k, _, _), .appendMessage(let k, _):
            key = .mailbox(k)
        case .deleteMailbox(let k):
            key = .mailbox(k)
            deleted = true
        }
        // Forgetting deleted keys bounds memory; anything later that recreates them is a new
        // write of its own, queued (and committed) after the deletion.
        lastDurableWrite[key] = deleted ? nil : eventNumber
        lastDurableWriteAnywhere = eventNumber
        output.dependsOn = eventNumber
    }
}

enum Base32 {
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    static func lowercaseUnpadded(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }
}

extension Result where Success == ClientMessage, Failure == RelayError {
    /// The fields of the command the dispatch switched on, taken out of the message by `pick`
    /// (the decoder made the message of the kind its `type` names, so `pick` finds it).
    fileprivate func fields<T>(_ pick: (ClientMessage) -> T?) -> Result<T, RelayError> {
        flatMap { message in pick(message).map { .success($0) } ?? .failure(.unknownType) }
    }
}
