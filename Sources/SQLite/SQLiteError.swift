import CSQLite

/// A failure inside SQLite (not the caller's fault), with the class of storage failure it is.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure it is: the one classification every program maps to its own codes.
    public enum Kind: String, Sendable, Equatable {
        /// `SQLITE_FULL`: the disk (or the file system's quota) has no room.
        case diskFull = "disk_full"
        /// `SQLITE_READONLY`: the file or its directory cannot be written.
        case readOnly = "read_only"
        /// `SQLITE_IOERR`: the operating system refused a read or write (also `EFBIG`, a file-size
        /// limit).
        case ioError = "io_error"
        /// `SQLITE_CANTOPEN`: the file (or its journal) cannot be opened.
        case cannotOpen = "cannot_open"
        /// `SQLITE_BUSY`, `SQLITE_LOCKED`: another connection holds the lock.
        case busy
        /// `SQLITE_CORRUPT`, `SQLITE_NOTADB`: the file is damaged or not a database.
        case corrupt
        /// The connection was closed before this call.
        case closed
        /// Anything else (a constraint, bad SQL, misuse): a defect, not the disk.
        case other
    }

    /// SQLite's extended result code (`SQLITE_MISUSE` for a closed connection).
    public let code: Int32
    /// SQLite's message.
    public let message: String
    /// Where it happened, e.g. `in: COMMIT` (the first 60 characters of the statement).
    public let context: String?

    public init(code: Int32, message: String, context: String? = nil) {
        self.code = code
        self.message = message
        self.context = context
    }

    static let closedConnection = SQLiteError(code: SQLITE_MISUSE, message: "database closed")

    public var kind: Kind {
        if self == Self.closedConnection { return .closed }
        switch code & 0xff {
        case SQLITE_FULL: return .diskFull
        case SQLITE_READONLY: return .readOnly
        case SQLITE_IOERR: return .ioError
        case SQLITE_CANTOPEN: return .cannotOpen
        case SQLITE_BUSY, SQLITE_LOCKED: return .busy
        case SQLITE_CORRUPT, SQLITE_NOTADB: return .corrupt
        default: return .other
        }
    }

    /// The database cannot be written now (disk full, file too large, read-only, I/O error, held
    /// by another connection), as opposed to a defect in a request or a damaged file: the caller
    /// stays up, keeps what it has and retries.
    public var isStorageFailure: Bool {
        switch kind {
        case .diskFull, .readOnly, .ioError, .cannotOpen, .busy: true
        case .corrupt, .closed, .other: false
        }
    }

    /// SQLite's message with where it happened.
    public var detail: String { context.map { "\(message) (\($0))" } ?? message }

    public var description: String { "SQLite error \(code): \(message)" }
}
