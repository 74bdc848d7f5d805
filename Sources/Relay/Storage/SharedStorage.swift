import Mailbox

/// What several relay nodes sharing one store exchange (see `docs/multi-node.md`).
///
/// Each node keeps the whole relay state in memory, as a single node does. The shared store
/// is the authority: every commit also appends its ``StorageOp``s to a change feed in commit
/// order, and each node applies the other nodes' entries to its own copy (notified promptly,
/// caught up by position so a missed notification loses nothing). The one decision two nodes
/// could make differently at the same moment, which mailbox a new nameplate leads to, is made
/// by the store in one transaction (``RelayStorage/reserveNameplate(_:completion:)``).

/// A nameplate to create, or to look up if it exists.
public struct NameplateRequest: Sendable, Equatable {
    public let app: AppID
    /// Names to try in order: the first one free is created. A claim names exactly one, and
    /// gets it whether it is new or not; an allocation gets only a new one.
    public let candidates: [Nameplate]
    public let isAllocation: Bool
    /// The mailbox a nameplate created now leads to.
    public let mailbox: MailboxID

    public init(app: AppID, candidates: [Nameplate], isAllocation: Bool, mailbox: MailboxID) {
        self.app = app
        self.candidates = candidates
        self.isAllocation = isAllocation
        self.mailbox = mailbox
    }
}

/// The store's answer to a ``NameplateRequest``.
public struct NameplateGrant: Sendable, Equatable {
    public let app: AppID
    /// Nil when every candidate of an allocation was taken.
    public let name: Nameplate?
    /// Where the nameplate leads (the request's mailbox when it was created now).
    public let mailbox: MailboxID
    /// Whether this request created it.
    public let created: Bool

    public init(app: AppID, name: Nameplate?, mailbox: MailboxID, created: Bool) {
        self.app = app
        self.name = name
        self.mailbox = mailbox
        self.created = created
    }
}

/// A grant and the change-feed position it is valid after: the relay applies the feed up to
/// `position` before it uses the grant, so it knows the nameplate's sides and mailbox.
public struct NameplateReservation: Sendable, Equatable {
    public let grant: NameplateGrant
    public let position: Int64

    public init(grant: NameplateGrant, position: Int64) {
        self.grant = grant
        self.position = position
    }
}

/// Where a shared store delivers other nodes' changes (``RelayService`` is one).
public protocol RelayChangeFollower: AnyObject, Sendable {
    /// The feed position applied so far; nil while not serving (nothing is fetched).
    var appliedPosition: Int64? { get }
    /// Other nodes' changes after `appliedPosition`, in commit order, each with its feed
    /// position; the feed has been read through `position` (this node's own entries are left
    /// out, `position` passes them too).
    func applyChanges(_ changes: [(position: Int64, ops: [StorageOp])], through position: Int64)
    /// The feed cannot be followed: the database is unreachable, or the feed no longer holds
    /// everything after `appliedPosition` (the node was cut off longer than it is kept).
    /// The relay must stop revealing state and reload once the store answers again.
    func feedFailed(_ error: RelayStorageError)
    /// This node's own feed entries at `positions` are committed. They need not be read back
    /// (the node applied them when it made them), so a follower that has applied everything
    /// just before one of them may count it as applied too, without a feed read.
    func ownChangesCommitted(_ positions: [Int64])
}

extension RelayChangeFollower {
    public func ownChangesCommitted(_ positions: [Int64]) {}
}

extension RelayStorage {
    public var isShared: Bool { false }

    public func loadForServing() throws(RelayStorageError) -> (snapshot: RelaySnapshot, position: Int64) {
        (try load(), 0)
    }

    public func follow(_ follower: any RelayChangeFollower) {}

    public func reserveNameplate(
        _ request: NameplateRequest,
        completion: @escaping @Sendable (Result<NameplateReservation, RelayStorageError>) -> Void
    ) {
        completion(.failure(RelayStorageError(.write, "this store is not shared")))
    }

    public var isExpiryLeader: Bool { true }

    public func ping() -> RelayStorageError? { nil }
}
