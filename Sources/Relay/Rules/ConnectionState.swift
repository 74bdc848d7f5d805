import Mailbox

/// What the relay remembers about one live connection. Mirrors the per-connection flags of the
/// reference's WebSocket handler: each command may be used once per connection, while state
/// across connections is keyed by (AppID, side).
struct ConnectionState: Sendable {
    let id: ConnectionID
    let address: ClientAddress?
    var binding: (app: AppID, side: Side)?
    var permissionGranted = false
    var didAllocate = false
    var didClaim = false
    /// The nameplate this connection claimed (set even when the claim was refused as
    /// `crowded`/`reclaimed`, as in the reference).
    var claimedNameplate: Nameplate?
    var didRelease = false
    /// The mailbox named by this connection's `open` (kept after `close`).
    var mailboxID: MailboxID?
    /// The mailbox this connection has open and is subscribed to (nil again after `close`).
    var openMailbox: MailboxKey?
    var didClose = false
    var errorCount = 0
    /// False once the connection's first `bind` asked for no `ack`s (`ClientMessage.acksKey`).
    var acks = true
    /// Set when the core asked the glue to close it; later frames are ignored.
    var closing = false
    /// Multi-node: the `allocate` or `claim` waiting for the shared store; frames arriving
    /// meanwhile wait in ``deferred`` and are handled, in order, once it is answered.
    var awaiting: AwaitedNameplate?
    /// Multi-node: the nameplate the store gave this connection's `allocate`.
    var allocatedNameplate: Nameplate?
    var deferred: [[UInt8]] = []

    init(id: ConnectionID, address: ClientAddress?) {
        self.id = id
        self.address = address
    }

    struct AwaitedNameplate: Sendable {
        let isAllocation: Bool
        /// The request as received, for an `error` reply.
        let orig: JSONValue
    }

    /// The per-address limit key; connections of unknown origin share one.
    var source: SourceAddress { address?.source ?? SourceAddress("unknown") }
}
