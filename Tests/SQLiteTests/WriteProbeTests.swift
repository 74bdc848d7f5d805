import CSQLite
import Foundation
import SQLite
import TestSupport
import Testing

/// ``SQLiteDatabase/probeWrite()``, what the space server's `/healthz` and the relay's recovery
/// ask before they call a failed store healthy, on a real full disk (a small tmpfs).
@Suite struct WriteProbeTests {
    /// A write that fits in room the WAL already has succeeds on a full disk (here: the WAL
    /// restarted from its beginning after a checkpoint, over blocks it was given before; with
    /// small pages, also a frame inside the WAL's last block), so a write alone says nothing about
    /// the next commit. The probe also asks the file system for room.
    @Test(.enabled(if: SmallFileSystem.isAvailable, "needs mount -t tmpfs (CAP_SYS_ADMIN)"))
    func aFullDiskFailsTheProbeEvenWhenAWriteFits() throws {
        let disk = try SmallFileSystem(bytes: 1 << 20)
        defer { disk.unmount() }
        let schema = DatabaseSchema(
            owner: .relay, tables: ["things"],
            migrations: ["CREATE TABLE things (id INTEGER PRIMARY KEY, body BLOB)"], newFilePageSize: 1024)
        let db = try SQLiteDatabase.open(path: disk.path("probe.sqlite"), schema: schema, sync: .full)
        defer { db.close() }
        #expect(try db.integer("PRAGMA page_size") == 1024)
        for _ in 0..<8 {
            try db.writeTransaction { () throws(SQLiteError) in
                try db.execute("INSERT INTO things (body) VALUES (randomblob(2000))")
            }
        }
        try db.probeWrite()
        // Everything copied to the main file: the next commit writes the WAL from its start.
        let restart = try db.query("PRAGMA wal_checkpoint(RESTART)")
        #expect(restart.first?.first?.integer == 0, "\(restart)")

        try disk.fill()
        #expect(disk.freeBytes == 0)
        let version = try db.integer("PRAGMA user_version")
        try db.writeTransaction { () throws(SQLiteError) in try db.execute("PRAGMA user_version=\(version)") }
        #expect(throws: SQLiteError.self) {
            try db.writeTransaction { () throws(SQLiteError) in
                try db.execute("INSERT INTO things (body) VALUES (randomblob(200000))")
            }
        }
        do {
            try db.probeWrite()
            Issue.record("the probe passed on a full disk")
        } catch {
            #expect(error.kind == .diskFull, "\(error)")
            #expect(error.message.contains("no room left"), "\(error)")
        }

        disk.free()
        try db.probeWrite()
        try db.writeTransaction { () throws(SQLiteError) in
            try db.execute("INSERT INTO things (body) VALUES (randomblob(200000))")
        }
        #expect(try db.integer("SELECT count(*) FROM things") == 9)
    }
}
