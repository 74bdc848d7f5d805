/// What the core asks its caller to do after one event.
///
/// The rule that keeps acknowledged messages safe: commit ``writes`` durably first, then
/// perform ``actions`` in order. An event's actions may reveal (echo, replay, `claimed`) state
/// that its writes create, and later events' actions may reveal it too, so actions must also
/// never overtake the writes of any earlier event. ``RelayService`` enforces both.
public struct RelayOutput: Sendable, Equatable {
    public var writes: [StorageOp] = []
    public var actions: [RelayAction] = []

    public init(writes: [StorageOp] = [], actions: [RelayAction] = []) {
        self.writes = writes
        self.actions = actions
    }

    public var isEmpty: Bool { writes.isEmpty && actions.isEmpty }
}

public enum RelayAction: Sendable, Equatable {
    /// Send this message on this connection (one text frame).
    case send(ServerMessage, to: ConnectionID)
    /// Close this connection (after the sends before it).
    case close(ConnectionID)
}

/// One input of the core.
public enum RelayEvent: Sendable, Equatable {
    /// A WebSocket connection finished its handshake. `address` is nil when unknown.
    case connectionOpened(ConnectionID, address: ClientAddress?)
    /// One text (or binary) frame's payload from a connection.
    case received([UInt8], from: ConnectionID)
    /// The connection is gone (closed by either end).
    case connectionClosed(ConnectionID)
    /// Time passed: expire idle mailboxes and forget stale limiter state.
    case tick
}
