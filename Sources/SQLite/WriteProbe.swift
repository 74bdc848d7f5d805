import CSQLite
import Glibc

extension SQLiteDatabase {
    /// The free room ``requireRoom()`` asks of the file system: 256 WAL frames of 1 KiB pages
    /// and more, room for the next commits to grow the WAL.
    public static let probeMinimumFreeBytes: UInt64 = 256 << 10

    /// Whether the file takes a write now, for a program recovering from failed commits (disk
    /// full, read-only file, I/O error), so it calls itself healthy only once it can commit
    /// again: room on the disk (``requireRoom()``), then one real write (the schema version
    /// written back unchanged, a page in the WAL).
    public func probeWrite() throws(SQLiteError) {
        try requireRoom()
        let version = try integer("PRAGMA user_version")
        try writeTransaction { () throws(SQLiteError) in try execute("PRAGMA user_version=\(version)") }
    }

    /// Throws `SQLITE_FULL`, writing nothing, when the file system holding the database has less
    /// than ``probeMinimumFreeBytes`` free. A small write may fit in room the WAL already has (a
    /// frame of a small page inside a block the file system gave the WAL before, or a WAL
    /// restarted from its beginning), so on a full disk it can succeed while every commit that
    /// needs a new block fails: a program whose writes failed asks this before it trusts a
    /// write again, else it would look healthy between failures.
    public func requireRoom() throws(SQLiteError) {
        guard let name = try fileName() else { return }
        var info = statvfs()
        guard statvfs(name, &info) == 0 else { return }
        let free = UInt64(info.f_bavail) * UInt64(info.f_frsize)
        guard free < Self.probeMinimumFreeBytes else { return }
        throw SQLiteError(
            code: SQLITE_FULL, message: "no room left on the disk of \(name) (\(free) bytes free)")
    }
}
