import CSQLite
import Glibc

/// A value bound to or read from SQLite.
public enum SQLValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])

    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    public var blob: [UInt8]? {
        if case .blob(let value) = self { return value }
        return nil
    }
}

/// A failure inside SQLite (not the caller's fault).
public struct SQLiteError: Error, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public var description: String { "SQLite error \(code): \(message)" }
}

/// One SQLite connection with a cache of prepared statements. Not thread-safe: its owner
/// serialises every use (``SpaceStore`` is only touched under ``SpaceAPI``'s lock; the sidecar
/// bot's store under its own).
public final class SQLiteDatabase {
    private let handle: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    public init(path: String) throws {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: message)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 5000)
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    private func error(_ rc: Int32) -> SQLiteError {
        SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs SQL without parameters (schema, pragmas); may hold several statements.
    public func execute(_ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc) }
    }

    private func prepared(_ sql: String) throws -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw error(rc) }
        statements[sql] = statement
        return statement
    }

    /// Runs one statement with bound values and returns every row.
    @discardableResult
    public func query(_ sql: String, _ values: [SQLValue] = []) throws -> [[SQLValue]] {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(statement, index)
            case .integer(let n): rc = sqlite3_bind_int64(statement, index, n)
            case .text(let s): rc = sqlite3_bind_text(statement, index, s, -1, shim_sqlite_transient())
            case .blob(let b):
                rc = b.withUnsafeBytes { raw in
                    // A zero-length blob still needs a non-null pointer to be a blob, not NULL.
                    sqlite3_bind_blob(
                        statement, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(b.count),
                        shim_sqlite_transient())
                }
            }
            guard rc == SQLITE_OK else { throw error(rc) }
        }
        var rows: [[SQLValue]] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc) }
            let columns = sqlite3_column_count(statement)
            var row: [SQLValue] = []
            row.reserveCapacity(Int(columns))
            for column in 0..<columns {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_TEXT:
                    let text = sqlite3_column_text(statement, column)
                    let count = Int(sqlite3_column_bytes(statement, column))
                    row.append(
                        .text(
                            text.map {
                                String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
                            } ?? ""))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    if count > 0, let bytes = sqlite3_column_blob(statement, column) {
                        row.append(.blob(Array(UnsafeRawBufferPointer(start: bytes, count: count))))
                    } else {
                        row.append(.blob([]))
                    }
                case SQLITE_FLOAT: row.append(.integer(Int64(sqlite3_column_double(statement, column))))
                default: row.append(.null)
                }
            }
            rows.append(row)
        }
        return rows
    }

    /// Rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// Rows changed since the connection opened.
    var totalChanges: Int { Int(sqlite3_total_changes(handle)) }

    /// Reads the main file's header from the disk (not SQLite's page cache): a cheap check that
    /// the file is there and readable. Throws `SQLITE_IOERR` when it is not.
    func readFileHeader() throws {
        guard let name = sqlite3_db_filename(handle, "main"), name.pointee != 0 else { return }
        let fd = open(name, O_RDONLY | O_CLOEXEC)
        var header = [UInt8](repeating: 0, count: 16)
        let count = fd < 0 ? -1 : header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 16, 0) }
        if fd >= 0 { close(fd) }
        guard count == 16, header == Array("SQLite format 3\0".utf8) else {
            throw SQLiteError(
                code: SQLITE_IOERR | (1 << 8),  // SQLITE_IOERR_READ
                message: count < 0
                    ? "cannot read the database file" : "the database file has no SQLite header")
        }
    }

    /// The rowid of the last insert.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Runs `body` in one write transaction: committed if it returns, rolled back if it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}
