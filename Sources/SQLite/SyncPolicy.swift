/// How durable a commit is (`--sync`). Every program's database runs in WAL mode.
public enum SyncPolicy: String, Sendable, Equatable {
    /// `synchronous=FULL`: a commit survives power loss (one fsync per commit).
    case full = "FULL"
    /// `synchronous=NORMAL`: a commit survives a crash of the process (`kill -9`) but may be lost
    /// on power loss.
    case normal = "NORMAL"
}

extension SQLiteDatabase {
    /// Switches to WAL and sets `synchronous` (writes the journal mode into the file's header).
    public func apply(_ sync: SyncPolicy) throws(SQLiteError) {
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=\(sync.rawValue)")
    }
}
