/// Where the relay's durable state lives. The core keeps the authoritative copy in memory and
/// emits ``StorageOp`` writes; a storage back-end commits them in order and loads them back
/// after a restart.
///
/// Threading contract: ``enqueue(_:completion:)`` only queues and returns at once; the back-end
/// commits on its own thread (never a network loop thread) and calls `completion` there, never
/// from inside `enqueue`. Writes queued together or close together may share one transaction
/// (group commit); `completion` runs only after the transaction holding them is durable.
public protocol RelayStorage: AnyObject, Sendable {
    /// Everything committed so far. Called once, before serving.
    func load() throws(RelayStorageError) -> RelaySnapshot

    /// Queues `writes` for commit after everything queued before them.
    /// - Parameter completion: nil once durable, or the error that lost them.
    func enqueue(_ writes: [StorageOp], completion: @escaping @Sendable (RelayStorageError?) -> Void)

    /// Commits what is queued and releases the back-end; later writes fail.
    func close()

    // Stores several relay nodes share (PostgreSQL). Single-node stores keep the defaults
    // (`SharedStorage.swift`): not shared, position 0, always the expiry leader.

    /// Whether other relay nodes serve from this store too. Then the core asks the store to
    /// create nameplates (``reserveNameplate(_:completion:)``) and follows the other nodes'
    /// changes (``follow(_:)``).
    var isShared: Bool { get }

    /// Everything committed so far and the change-feed position it includes. Blocking.
    func loadForServing() throws(RelayStorageError) -> (snapshot: RelaySnapshot, position: Int64)

    /// Starts delivering other nodes' changes to `follower` (held weakly), on the store's own
    /// thread.
    func follow(_ follower: any RelayChangeFollower)

    /// Creates a nameplate unless it exists (in one transaction, unique across nodes) and
    /// reports which mailbox it leads to, with the feed position the answer is valid after.
    func reserveNameplate(
        _ request: NameplateRequest,
        completion: @escaping @Sendable (Result<NameplateReservation, RelayStorageError>) -> Void)

    /// Whether this node runs expiry now (exactly one of the nodes sharing a store does).
    var isExpiryLeader: Bool { get }

    /// Whether the store can commit now. Blocking; for recovery and health checks.
    func ping() -> RelayStorageError?
}

/// A storage failure, with a stable code.
public struct RelayStorageError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case open
        case schemaTooNew = "schema_too_new"
        case migration
        case read
        case write
        case closed
        /// Another relay holds the database (PostgreSQL: one serving node at a time).
        case locked
        /// The SQLite file belongs to another program (or to none of ours); nothing was written.
        case foreignDatabase = "foreign_database"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "storage \(code.rawValue): \(message)" }
}
