import Foundation

/// A read-only database for a server running as root, where `chmod` stops nothing: the
/// immutable attribute (`chattr +i`, needs `CAP_LINUX_IMMUTABLE` and a file system that has it,
/// such as ext4) makes every write to the file fail with `EPERM`, even through a descriptor the
/// server opened before, and on a directory it refuses new files. Clearing it makes the files
/// writable again under the running server.
///
/// For SQLite in WAL mode make the database, its `-wal` and their directory immutable, never the
/// `-shm`: SQLite writes that one through a shared mapping, and a write fault on an immutable
/// mapping kills the process with SIGBUS (a crash no server could handle).
///
/// A read-only bind mount does not work on a live server: remounting read-only fails with
/// `EBUSY` while a file is open for writing.
public enum ImmutableFiles {
    /// Whether `chattr +i` works here (root with the capability, a file system that supports it).
    public static let isAvailable: Bool = {
        guard let directory = try? TestSupport.temporaryDirectory() else { return false }
        defer { try? FileManager.default.removeItem(at: directory) }
        let probe = directory.appendingPathComponent("probe").path
        guard FileManager.default.createFile(atPath: probe, contents: Data([1])) else { return false }
        guard (try? set([probe], immutable: true)) != nil else { return false }
        let refused = (try? Data([2]).write(to: URL(fileURLWithPath: probe))) == nil
        try? set([probe], immutable: false)
        return refused
    }()

    /// Sets or clears the immutable attribute of every path (files that do not exist are skipped).
    public static func set(_ paths: [String], immutable: Bool) throws {
        let existing = paths.filter { FileManager.default.fileExists(atPath: $0) }
        guard !existing.isEmpty else { return }
        let result = try TestSupport.run("/usr/bin/chattr", [immutable ? "+i" : "-i"] + existing, timeout: 10)
        guard result.status == 0 else {
            throw TestSupportError.server("chattr failed: \(result.stderr)")
        }
    }

    /// The files of a SQLite database in WAL mode that a read-only database must refuse to
    /// change: the file, its `-wal`, and the directory holding them (see above for `-shm`).
    public static func sqliteFiles(_ database: String) -> [String] {
        [database, database + "-wal", (database as NSString).deletingLastPathComponent]
    }
}

/// A real full disk: a small `tmpfs` mounted on a fresh directory (needs `CAP_SYS_ADMIN`), which
/// ``fill()`` fills with a padding file until the kernel answers `ENOSPC`, and ``free()`` empties
/// again. ``unmount()`` removes it; call it in a `defer`.
public final class SmallFileSystem: @unchecked Sendable {
    public let mountPoint: URL
    private var padding: URL { mountPoint.appendingPathComponent("padding") }

    /// Whether mounting a tmpfs is permitted here.
    public static let isAvailable: Bool = {
        guard let probe = try? SmallFileSystem(bytes: 64 << 10) else { return false }
        probe.unmount()
        return true
    }()

    /// Mounts a tmpfs of `bytes` on a new temporary directory.
    public init(bytes: Int) throws {
        mountPoint = try TestSupport.temporaryDirectory()
        let result = try TestSupport.run(
            "/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(bytes),mode=0700", "tmpfs", mountPoint.path],
            timeout: 10)
        guard result.status == 0 else {
            try? FileManager.default.removeItem(at: mountPoint)
            throw TestSupportError.server("mount failed: \(result.stderr)")
        }
    }

    /// A path inside the file system.
    public func path(_ name: String) -> String { mountPoint.appendingPathComponent(name).path }

    /// Writes padding until the file system is full (`ENOSPC`); returns the bytes written.
    @discardableResult
    public func fill() throws -> Int {
        let fd = open(padding.path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        guard fd >= 0 else { throw TestSupportError.system("open", errno) }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0x55, count: 4096)
        var written = 0
        while true {
            let n = chunk.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                written += n
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno != ENOSPC { throw TestSupportError.system("write", errno) }
            return written
        }
    }

    /// Free bytes left (statvfs).
    public var freeBytes: Int {
        var stats = statvfs()
        guard statvfs(mountPoint.path, &stats) == 0 else { return 0 }
        return Int(stats.f_bavail) * Int(stats.f_frsize)
    }

    /// Removes the padding: space returns.
    public func free() {
        try? FileManager.default.removeItem(at: padding)
    }

    /// Unmounts (lazily, should a process still hold a file) and removes the directory.
    public func unmount() {
        _ = try? TestSupport.run("/usr/bin/umount", ["-l", mountPoint.path], timeout: 10)
        try? FileManager.default.removeItem(at: mountPoint)
    }
}
