import CSQLite
import Glibc

/// One SQLite connection with a cache of prepared statements. Not thread-safe: its owner
/// confines it to one serial queue or one lock. Open a program's database with
/// ``open(path:schema:sync:)``, which refuses another program's file before writing to it.
public final class SQLiteDatabase {
    private var handle: OpaquePointer?
    private var statements: [String: SQLiteStatement] = [:]
    /// Set by ``checkpointManually()``: the WAL's frame count after each commit.
    private var walFrames: WALFrames?

    /// Opens (creating if needed) the file at `path`; writes nothing. Extended result codes on,
    /// and a busy connection is waited for up to 5 s.
    public init(path: String) throws(SQLiteError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: message)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 5000)
    }

    deinit { close() }

    /// Finalises every statement and closes the connection; later calls fail (`closed`).
    public func close() {
        statements.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    func error(_ rc: Int32, context: String? = nil) -> SQLiteError {
        guard let handle else { return .closedConnection }
        return SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)), context: context)
    }

    private func connection() throws(SQLiteError) -> OpaquePointer {
        guard let handle else { throw .closedConnection }
        return handle
    }

    /// Runs SQL without parameters (schema, pragmas); may hold several statements.
    public func execute(_ sql: String) throws(SQLiteError) {
        let rc = sqlite3_exec(try connection(), sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, context: "in: \(sql.prefix(60))") }
    }

    /// Runs one statement without parameters and without rows (`BEGIN IMMEDIATE`, `COMMIT`,
    /// `SAVEPOINT name`, `RELEASE name`) from the statement cache: ``execute(_:)`` parses its
    /// SQL on every call, which for the transaction statements of every request was about 2.5%
    /// of the space server's CPU (docs/bot.md, session 14).
    public func run(_ sql: String) throws(SQLiteError) {
        let statement = try statement(sql)
        while try statement.step() {}
    }

    /// A cached prepared statement, reset and with bindings cleared.
    public func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(try connection(), sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(rc, context: "preparing: \(sql.prefix(60))") }
        let statement = SQLiteStatement(raw, database: self)
        statements[sql] = statement
        return statement
    }

    /// Runs one statement with bound values and returns every row.
    @discardableResult
    public func query(_ sql: String, _ values: [SQLValue] = []) throws(SQLiteError) -> [[SQLValue]] {
        let statement = try statement(sql)
        defer { statement.reset() }
        for (offset, value) in values.enumerated() {
            try statement.bind(Int32(offset + 1), value)
        }
        var rows: [[SQLValue]] = []
        while try statement.step() {
            rows.append((0..<statement.columnCount).map { statement.value($0) })
        }
        return rows
    }

    /// Runs a single-integer query (`PRAGMA user_version`); 0 when it returns no row.
    public func integer(_ sql: String) throws(SQLiteError) -> Int64 {
        let statement = try statement(sql)
        guard try statement.step() else { return 0 }
        let value = statement.int64(0)
        statement.reset()
        return value
    }

    /// Rows changed by the last statement.
    public var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// Rows changed since the connection opened.
    public var totalChanges: Int { handle.map { Int(sqlite3_total_changes($0)) } ?? 0 }

    /// The rowid of the last insert.
    public var lastInsertRowID: Int64 { handle.map { sqlite3_last_insert_rowid($0) } ?? 0 }

    /// The main file's path; nil for an in-memory or temporary database.
    func fileName() throws(SQLiteError) -> String? {
        guard let name = sqlite3_db_filename(try connection(), "main"), name.pointee != 0 else { return nil }
        return String(cString: name)
    }

    /// Stops SQLite's automatic checkpoints (which run inside the commit that fills the WAL past
    /// `wal_autocheckpoint` pages, before that commit returns) and counts the WAL's frames
    /// instead, for an owner that checkpoints itself (``walFrameCount``, then
    /// `PRAGMA wal_checkpoint`).
    public func checkpointManually() throws(SQLiteError) {
        let counter = WALFrames()
        _ = sqlite3_wal_hook(
            try connection(),
            { context, _, _, frames in
                if let context {
                    Unmanaged<WALFrames>.fromOpaque(context).takeUnretainedValue().count = frames
                }
                return SQLITE_OK
            }, Unmanaged.passUnretained(counter).toOpaque())
        walFrames = counter
    }

    /// The frames in the WAL after the last commit (0 before the first, or without
    /// ``checkpointManually()``). A checkpoint that copies all of them lets the next commit
    /// start the WAL over; until then this counts on from where it was.
    public var walFrameCount: Int { Int(walFrames?.count ?? 0) }

    /// Reads the main file's header from the disk (not SQLite's page cache): a cheap check that
    /// the file is there and readable. Throws `SQLITE_IOERR_READ` when it is not.
    public func readFileHeader() throws(SQLiteError) {
        guard let name = try fileName() else { return }
        let fd = Glibc.open(name, O_RDONLY | O_CLOEXEC)
        var header = [UInt8](repeating: 0, count: 16)
        let count = fd < 0 ? -1 : header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 16, 0) }
        if fd >= 0 { Glibc.close(fd) }
        guard count == 16, header == Array("SQLite format 3\0".utf8) else {
            throw SQLiteError(
                code: SQLITE_IOERR | (1 << 8),  // SQLITE_IOERR_READ
                message: count < 0
                    ? "cannot read the database file" : "the database file has no SQLite header")
        }
    }

    /// Runs `body` in one write transaction (`BEGIN IMMEDIATE`): committed if it returns, rolled
    /// back if it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try run("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try run("COMMIT")
            return result
        } catch {
            try? run("ROLLBACK")
            throw error
        }
    }

    /// ``transaction(_:)`` for a body that fails only with SQLite's errors.
    public func writeTransaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try run("BEGIN IMMEDIATE")
        do throws(SQLiteError) {
            let result = try body()
            try run("COMMIT")
            return result
        } catch {
            try? run("ROLLBACK")
            throw error
        }
    }
}

/// The WAL hook's context: the frame count it last reported. Owned by the connection, which
/// outlives the hook (closing the connection drops it).
private final class WALFrames {
    var count: Int32 = 0
}
