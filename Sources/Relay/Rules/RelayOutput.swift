import Mailbox

/// What the core asks its caller to do after one event.
///
/// The rule that keeps acknowledged messages safe: queue ``writes`` to storage in event order,
/// and perform ``actions`` only once the writes of event ``dependsOn`` (and so of every event
/// before it) are durable. ``dependsOn`` is this event's own number when it made a durable
/// change, else the last event that durably changed state these actions reveal (a replay, a
/// `claimed` mailbox id), else 0. Each connection's actions must stay in event order.
/// ``RelayService`` enforces all of this.
public struct RelayOutput: Sendable, Equatable {
    public var writes: [StorageOp] = []
    public var actions: [RelayAction] = []
    /// Nameplates to create or look up in the shared store (multi-node only); each answer
    /// comes back as ``RelayEvent/nameplateGranted(_:to:)``.
    public var requests: [RelayRequest] = []
    /// The number the core gave this event (counting from 1).
    public var event: UInt64 = 0
    /// The event whose writes must be durable before ``actions`` run (0: none).
    public var dependsOn: UInt64 = 0

    public init(
        writes: [StorageOp] = [], actions: [RelayAction] = [], event: UInt64 = 0, dependsOn: UInt64 = 0
    ) {
        self.writes = writes
        self.actions = actions
        self.event = event
        self.dependsOn = dependsOn
    }

    public var isEmpty: Bool { writes.isEmpty && actions.isEmpty && requests.isEmpty }
}

/// A connection waiting for the shared store to create or find a nameplate.
public struct RelayRequest: Sendable, Equatable {
    public let connection: ConnectionID
    public let nameplate: NameplateRequest
}

public enum RelayAction: Sendable, Equatable {
    /// Send this message on this connection (one text frame).
    case send(ServerMessage, to: ConnectionID)
    /// Close this connection (after the sends before it).
    case close(ConnectionID)
    /// A command was answered with nothing to send: where an `ack` would go, on a connection
    /// that asked for none. Sends nothing; a glue that times its answers counts it.
    case answered(ConnectionID)
}

/// One input of the core.
public enum RelayEvent: Sendable, Equatable {
    /// A WebSocket connection finished its handshake. `address` is nil when unknown.
    case connectionOpened(ConnectionID, address: ClientAddress?)
    /// One text (or binary) frame's payload from a connection.
    case received([UInt8], from: ConnectionID)
    /// A message over the size limit arrived from a connection; the glue dropped it unread
    /// (its size in bytes).
    case oversized(Int, from: ConnectionID)
    /// The connection is gone (closed by either end).
    case connectionClosed(ConnectionID)
    /// Time passed: expire idle mailboxes and forget stale limiter state.
    case tick
    /// Other relay nodes committed these writes (multi-node): apply them and deliver new
    /// messages to this node's subscribers.
    case replicated([StorageOp])
    /// The shared store's answer to this connection's ``RelayRequest``.
    case nameplateGranted(NameplateGrant, to: ConnectionID)
}
