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
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "storage \(code.rawValue): \(message)" }
}
