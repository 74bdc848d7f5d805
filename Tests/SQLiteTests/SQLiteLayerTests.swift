import CSQLite
import Foundation
import SQLite
import Testing

/// The SQLite layer on its own: failure classes, application ids, and refusing a file that is
/// none of ours before writing to it.
@Suite struct SQLiteLayerTests {
    static let schema = DatabaseSchema(
        owner: .relay, tables: ["things"], migrations: ["CREATE TABLE things (id INTEGER PRIMARY KEY)"])

    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-\(UUID().uuidString).sqlite")
            .path
    }

    @Test func failureClasses() {
        func kind(_ code: Int32) -> SQLiteError.Kind { SQLiteError(code: code, message: "").kind }
        #expect(kind(SQLITE_FULL) == .diskFull)
        #expect(kind(SQLITE_IOERR | (1 << 8)) == .ioError)
        #expect(kind(SQLITE_READONLY) == .readOnly)
        #expect(kind(SQLITE_BUSY) == .busy)
        #expect(kind(SQLITE_LOCKED) == .busy)
        #expect(kind(SQLITE_CANTOPEN) == .cannotOpen)
        #expect(kind(SQLITE_CORRUPT) == .corrupt)
        #expect(kind(SQLITE_NOTADB) == .corrupt)
        #expect(kind(SQLITE_CONSTRAINT) == .other)
        for code in [SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_CANTOPEN]
        {
            #expect(SQLiteError(code: code, message: "").isStorageFailure)
        }
        for code in [SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_CONSTRAINT, SQLITE_ERROR] {
            #expect(!SQLiteError(code: code, message: "").isStorageFailure)
        }
    }

    @Test func applicationIDsAreDistinct() {
        #expect(Set(ApplicationID.known.map(\.rawValue)).count == ApplicationID.known.count)
        #expect(!ApplicationID.known.contains { $0.rawValue == 0 })
    }

    @Test func aNewFileGetsItsIDAndSyncPolicy() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        for sync in [SyncPolicy.normal, .full] {
            let db = try SQLiteDatabase.open(path: path, schema: Self.schema, sync: sync)
            #expect(try db.integer("PRAGMA application_id") == Int64(ApplicationID.relay.rawValue))
            #expect(try db.integer("PRAGMA user_version") == 1)
            #expect(try db.integer("PRAGMA synchronous") == (sync == .full ? 2 : 1))
            #expect(try db.query("PRAGMA journal_mode").first?.first?.text == "wal")
            db.close()
        }
    }

    @Test func aFileWithOtherTablesIsRefusedUnchanged() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let other = try SQLiteDatabase(path: path)
        try other.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')")
        other.close()
        let before = FileManager.default.contents(atPath: path)
        #expect(throws: DatabaseOpenError.self) {
            try SQLiteDatabase.open(path: path, schema: Self.schema, sync: .full)
        }
        do {
            _ = try SQLiteDatabase.open(path: path, schema: Self.schema, sync: .full)
        } catch {
            guard case .foreign(let foreign) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(foreign.unknownTables == ["notes"])
            #expect(foreign.message.contains("notes"), "\(foreign.message)")
        }
        #expect(FileManager.default.contents(atPath: path) == before)
    }

    @Test func aFileThatIsNotADatabaseIsRefusedUnchanged() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let text = Data(String(repeating: "not a database\n", count: 100).utf8)
        _ = FileManager.default.createFile(atPath: path, contents: text)
        do {
            _ = try SQLiteDatabase.open(path: path, schema: Self.schema, sync: .full)
            Issue.record("opened a text file")
        } catch {
            guard case .sqlite(let failure) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(failure.kind == .corrupt, "\(failure)")
            #expect(!failure.isStorageFailure)
        }
        #expect(FileManager.default.contents(atPath: path) == text)
    }

    /// `run` takes transaction statements from the statement cache: used again and again they
    /// keep their meaning (a rolled-back savepoint leaves nothing, a committed one stays, as
    /// another connection sees), and one that fails (a `COMMIT` with no transaction, a
    /// `RELEASE` of no savepoint) throws and leaves the next use working.
    @Test func cachedTransactionStatementsKeepTheirMeaning() throws {
        let path = Self.temporaryPath()
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let db = try SQLiteDatabase.open(path: path, schema: Self.schema, sync: .full)
        for round in 0..<3 {
            try db.run("BEGIN IMMEDIATE")
            for id in 0..<4 {
                try db.run("SAVEPOINT request")
                try db.query("INSERT INTO things (id) VALUES (?)", [.integer(Int64(round * 10 + id))])
                if id % 2 == 1 {
                    try db.run("ROLLBACK TO request")
                }
                try db.run("RELEASE request")
            }
            try db.run("COMMIT")
            #expect(throws: SQLiteError.self) { try db.run("COMMIT") }
            #expect(throws: SQLiteError.self) { try db.run("RELEASE request") }
        }
        try db.writeTransaction { () throws(SQLiteError) in
            try db.query("INSERT INTO things (id) VALUES (?)", [.integer(100)])
        }
        #expect(throws: SQLiteError.self) {
            try db.writeTransaction { () throws(SQLiteError) in
                try db.query("INSERT INTO things (id) VALUES (?)", [.integer(101)])
                try db.query("INSERT INTO things (id) VALUES (?)", [.integer(101)])
            }
        }
        let other = try SQLiteDatabase(path: path)
        let ids = try other.query("SELECT id FROM things ORDER BY id").map { $0[0].integer ?? -1 }
        #expect(ids == [0, 2, 10, 12, 20, 22, 100])
    }
}
