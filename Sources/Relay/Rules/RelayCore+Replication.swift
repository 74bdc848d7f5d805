import Mailbox

/// Several relay nodes sharing one store (multi-node, `docs/multi-node.md`).
///
/// Every node keeps the whole durable state in memory, as a single node does, and the store
/// orders everything: a node applies its own writes at once and the other nodes' writes when
/// the store's change feed delivers them (``RelayEvent/replicated(_:)``). Two rules keep the
/// copies agreeing where it matters:
///
/// - A nameplate is created only by the store (``RelayRequest``), in one transaction with a
///   unique key, so two nodes never hand out the same name or lead one name to two mailboxes.
///   Every `claim` asks the store too (except a connection's claim of the name it was just
///   allocated): a name may have been released and reused on another node a moment ago. The
///   connection's later frames wait until the answer comes back, and the answer is delivered
///   only after the feed has been applied up to it, so the node then knows the nameplate's
///   sides and mailbox as the store does.
/// - Messages are appended, never rewritten, so delivering another node's message to this
///   node's subscribers when the feed brings it is all a cross-node exchange needs.
///
/// Per-connection state (binding, what it claimed and opened), subscriptions, rate limiters
/// and used hashcash stamps stay on the node holding the connection: a client that reconnects
/// elsewhere binds, claims and opens again, exactly as after a restart.
extension RelayCore {
    /// Frames a connection may send while its `allocate` or `claim` waits for the store.
    static let maximumDeferredFrames = 64

    /// Up to this many names are offered to the store per allocation.
    static let allocationCandidates = 32

    /// Asks the store for a nameplate on behalf of connection `id`, and holds its frames.
    mutating func requestNameplate(
        _ candidates: [Nameplate], app: AppID, isAllocation: Bool, connection id: ConnectionID,
        orig: JSONValue
    ) {
        let request = NameplateRequest(
            app: app, candidates: candidates, isAllocation: isAllocation, mailbox: newMailboxID(app: app))
        connections[id]?.awaiting = ConnectionState.AwaitedNameplate(isAllocation: isAllocation, orig: orig)
        output.requests.append(RelayRequest(connection: id, nameplate: request))
    }

    /// The store answered a ``RelayRequest``: finish the `allocate` or `claim`, then handle
    /// the frames that waited for it.
    mutating func granted(_ grant: NameplateGrant, to id: ConnectionID, now: RelayInstant) {
        guard let name = grant.name else {
            if let awaited = connections[id]?.awaiting {
                connections[id]?.awaiting = nil
                fail(id, .noFreeNameplate, orig: awaited.orig)
                resumeDeferred(id, now: now)
            }
            return
        }
        let key = NameplateKey(app: grant.app, name: name)
        if grant.created, let old = state.nameplates[key], old.mailbox != grant.mailbox {
            // The store deleted a nameplate every side had released, and made this one.
            apply(.deleteNameplate(key))
            lastDurableWrite[.nameplate(key)] = nil
        }
        if state.nameplates[key]?.mailbox != grant.mailbox {
            apply(.putNameplate(key, mailbox: grant.mailbox))
        }
        guard let connection = connections[id], let awaited = connection.awaiting else {
            // The client left meanwhile: a nameplate made for it alone is deleted again.
            if grant.created, state.nameplates[key]?.sides.isEmpty == true {
                retireNameplate(key, pruned: true)
            }
            return
        }
        connections[id]?.awaiting = nil
        if grant.created {
            nameplateOwners[key] = connection.source
            openNameplatesByAddress[connection.source, default: 0] += 1
        }
        guard let binding = connection.binding else { return }
        switch claimNameplate(key, side: binding.side, by: connection, now: now) {
        case .failure(let error):
            fail(id, error, orig: awaited.orig)
        case .success(let mailbox):
            if awaited.isAllocation {
                connections[id]?.didAllocate = true
                connections[id]?.allocatedNameplate = name
                metrics.nameplatesAllocated += 1
                send(.allocated(name), to: id)
            } else {
                metrics.nameplatesClaimed += 1
                send(.claimed(mailbox), to: id)
            }
        }
        resumeDeferred(id, now: now)
    }

    /// Handles the frames that arrived while the connection waited, until one waits again.
    private mutating func resumeDeferred(_ id: ConnectionID, now: RelayInstant) {
        while let connection = connections[id], connection.awaiting == nil, !connection.deferred.isEmpty {
            let payload = connections[id]?.deferred.removeFirst() ?? []
            receive(payload, from: id, now: now)
        }
    }

    /// Another node's committed writes: apply them, and hand new messages to this node's
    /// subscribers (they are durable already, so nothing waits).
    mutating func replicate(_ ops: [StorageOp]) {
        for op in ops {
            apply(op)
            switch op {
            case .appendMessage(let key, let message):
                guard state.mailboxes[key] != nil else { continue }
                for listener in subscribers[key] ?? [] { send(.message(message), to: listener) }
            case .deleteMailbox(let key):
                lastDurableWrite[.mailbox(key)] = nil
            case .deleteNameplate(let key):
                lastDurableWrite[.nameplate(key)] = nil
            default:
                break
            }
        }
    }

    /// Two sides closing (or releasing) at the same moment on two nodes may each still see the
    /// other open, so neither deletes the mailbox (or nameplate); the expiry leader, which sees
    /// both, does.
    mutating func retireMailboxesClosedOnSeveralNodes() {
        // Sorted, so the writes are reproducible.
        let released = state.nameplates.filter { Self.allDone($0.value.sides.values.map(\.claimed)) }.keys
        for key in released.sorted(by: {
            ($0.app.value, $0.name.value) < ($1.app.value, $1.name.value)
        }) {
            retireNameplate(key, pruned: false)
        }
        // As on one node, the last close deletes the mailbox even if a connection of a closed
        // side still listens.
        let closed = state.mailboxes.filter { Self.allDone($0.value.sides.values.map(\.opened)) }.keys
        for key in closed.sorted(by: { ($0.app.value, $0.id.value) < ($1.app.value, $1.id.value) }
        ) {
            retireMailbox(key, pruned: false)
        }
    }

    /// Some sides, and none still claiming (or with the mailbox open).
    private static func allDone(_ active: [Bool]) -> Bool { !active.isEmpty && !active.contains(true) }

    /// Multi-node: a mailbox someone waits on here must not look idle to the node that runs
    /// expiry, so it is touched (and the touch replicated) well before its idle time is up.
    mutating func touchSubscribedMailboxes(now: RelayInstant) {
        for (key, listeners) in subscribers where !listeners.isEmpty {
            guard let mailbox = state.mailboxes[key] else { continue }
            if now.seconds(since: mailbox.updated) > config.expiry.idleSeconds(for: key.app) / 3 {
                write(.touchMailbox(key, updated: now))
            }
        }
    }
}
