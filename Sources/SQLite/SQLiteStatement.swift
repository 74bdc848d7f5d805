import CSQLite

/// One prepared statement, cached by its connection. Binding indexes start at 1, column indexes
/// at 0 (as in SQLite). Touched only by the connection's owner.
public final class SQLiteStatement {
    private let raw: OpaquePointer
    private unowned let database: SQLiteDatabase

    init(_ raw: OpaquePointer, database: SQLiteDatabase) {
        self.raw = raw
        self.database = database
    }

    deinit { sqlite3_finalize(raw) }

    /// Resets the statement and clears its bindings.
    public func reset() {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    // MARK: Binding

    public func bind(_ index: Int32, _ text: String) {
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

    public func bind(_ index: Int32, _ text: String?) {
        if let text { bind(index, text) } else { sqlite3_bind_null(raw, index) }
    }

    public func bind(_ index: Int32, _ value: Double) { sqlite3_bind_double(raw, index, value) }
    public func bind(_ index: Int32, _ value: Bool) { sqlite3_bind_int(raw, index, value ? 1 : 0) }

    /// Binds a ``SQLValue``. A zero-length blob stays a blob, not NULL.
    public func bind(_ index: Int32, _ value: SQLValue) throws(SQLiteError) {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(raw, index)
        case .integer(let n): rc = sqlite3_bind_int64(raw, index, n)
        case .text(let s): rc = sqlite3_bind_text(raw, index, s, -1, shim_sqlite_transient())
        case .blob(let b):
            rc = b.withUnsafeBytes { bytes in
                sqlite3_bind_blob(
                    raw, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(b.count),
                    shim_sqlite_transient())
            }
        }
        guard rc == SQLITE_OK else { throw database.error(rc) }
    }

    // MARK: Stepping

    /// Steps once: true when a row is available, false when done. A finished or failed
    /// statement is reset at once so it holds no lock (checkpoints need none outstanding).
    @discardableResult
    public func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(raw)
        switch rc {
        case SQLITE_ROW:
            return true
        case SQLITE_DONE:
            sqlite3_reset(raw)
            return false
        default:
            let error = database.error(rc)
            sqlite3_reset(raw)
            throw error
        }
    }

    // MARK: Reading

    public var columnCount: Int32 { sqlite3_column_count(raw) }

    public func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(raw, column) else { return "" }
        let count = Int(sqlite3_column_bytes(raw, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    public func optionalText(_ column: Int32) -> String? {
        isNull(column) ? nil : text(column)
    }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(raw, column) == SQLITE_NULL }
    public func double(_ column: Int32) -> Double { sqlite3_column_double(raw, column) }
    public func bool(_ column: Int32) -> Bool { sqlite3_column_int(raw, column) != 0 }
    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }

    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(raw, column))
        guard count > 0, let bytes = sqlite3_column_blob(raw, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// The column as a ``SQLValue``; a REAL reads as its integer part.
    public func value(_ column: Int32) -> SQLValue {
        switch sqlite3_column_type(raw, column) {
        case SQLITE_INTEGER: .integer(int64(column))
        case SQLITE_TEXT: .text(text(column))
        case SQLITE_BLOB: .blob(blob(column))
        case SQLITE_FLOAT: .integer(Int64(double(column)))
        default: .null
        }
    }
}
