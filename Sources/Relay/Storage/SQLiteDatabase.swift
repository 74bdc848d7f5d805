import CSQLite

/// A thin wrapper over one SQLite connection. Not thread-safe: the owner confines it to one
/// serial queue.
final class SQLiteDatabase {
    private(set) var handle: OpaquePointer?
    private var statements: [String: SQLiteStatement] = [:]

    init(path: String) throws(RelayStorageError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw RelayStorageError(.open, "cannot open \(path): \(message)")
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
    }

    deinit { close() }

    func close() {
        statements.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    var errorMessage: String {
        guard let handle else { return "database closed" }
        return String(cString: sqlite3_errmsg(handle))
    }

    /// Runs SQL without results (may hold several statements).
    func execute(_ sql: String, code: RelayStorageError.Code = .write) throws(RelayStorageError) {
        guard let handle else { throw RelayStorageError(.closed, "database closed") }
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else {
            throw RelayStorageError(code, "\(errorMessage) (in: \(sql.prefix(60)))")
        }
    }

    /// A cached prepared statement, reset and with bindings cleared.
    func statement(_ sql: String) throws(RelayStorageError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        guard let handle else { throw RelayStorageError(.closed, "database closed") }
        var raw: OpaquePointer?
        guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil) == SQLITE_OK,
            let raw
        else { throw RelayStorageError(.write, "\(errorMessage) (preparing: \(sql.prefix(60)))") }
        let statement = SQLiteStatement(raw, database: self)
        statements[sql] = statement
        return statement
    }

    /// Runs a single-integer query (`PRAGMA user_version`).
    func integer(_ sql: String) throws(RelayStorageError) -> Int64 {
        let st = try statement(sql)
        guard try st.step() else { return 0 }
        let value = st.int64(0)
        st.reset()
        return value
    }
}

/// One prepared statement. Binding indexes start at 1, column indexes at 0 (as in SQLite).
final class SQLiteStatement {
    private let raw: OpaquePointer
    private unowned let database: SQLiteDatabase

    init(_ raw: OpaquePointer, database: SQLiteDatabase) {
        self.raw = raw
        self.database = database
    }

    deinit { sqlite3_finalize(raw) }

    func reset() {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    func bind(_ index: Int32, _ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            if utf8.isEmpty {
                sqlite3_bind_text(raw, index, "", 0, shim_sqlite_transient())
            } else {
                utf8.withMemoryRebound(to: CChar.self) {
                    _ = sqlite3_bind_text(
                        raw, index, $0.baseAddress, Int32($0.count), shim_sqlite_transient())
                }
            }
        }
    }

    func bind(_ index: Int32, _ text: String?) {
        if let text { bind(index, text) } else { sqlite3_bind_null(raw, index) }
    }

    func bind(_ index: Int32, _ value: Double) { sqlite3_bind_double(raw, index, value) }
    func bind(_ index: Int32, _ value: Bool) { sqlite3_bind_int(raw, index, value ? 1 : 0) }

    /// Steps once: true when a row is available, false when done. A finished or failed
    /// statement is reset at once so it holds no lock (checkpoints need none outstanding).
    @discardableResult
    func step() throws(RelayStorageError) -> Bool {
        switch sqlite3_step(raw) {
        case SQLITE_ROW:
            return true
        case SQLITE_DONE:
            sqlite3_reset(raw)
            return false
        default:
            let message = database.errorMessage
            sqlite3_reset(raw)
            throw RelayStorageError(.write, message)
        }
    }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(raw, column) else { return "" }
        let count = Int(sqlite3_column_bytes(raw, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    func optionalText(_ column: Int32) -> String? {
        sqlite3_column_type(raw, column) == SQLITE_NULL ? nil : text(column)
    }

    func double(_ column: Int32) -> Double { sqlite3_column_double(raw, column) }
    func bool(_ column: Int32) -> Bool { sqlite3_column_int(raw, column) != 0 }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }
}
