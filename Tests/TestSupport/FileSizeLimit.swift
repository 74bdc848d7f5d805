import Foundation

/// A full disk without root: a server started through ``command(_:_:)`` ignores SIGXFSZ (the
/// ignored disposition survives `exec`), so once ``set(pid:bytes:)`` lowers its soft
/// `RLIMIT_FSIZE`, every write that would grow a file past the limit fails with `EFBIG` as on a
/// full file system, and raising the limit again is "space returns". Works as any user (only the
/// soft limit moves) and in containers (no mount).
public enum FileSizeLimit {
    /// The executable and arguments that start `executable` with SIGXFSZ ignored.
    public static func command(_ executable: String, _ arguments: [String]) -> (String, [String]) {
        ("/bin/sh", ["-c", "trap '' XFSZ; exec \"$0\" \"$@\"", executable] + arguments)
    }

    /// Sets the soft file-size limit of process `pid` (nil: unlimited) with util-linux `prlimit`.
    public static func set(pid: Int32, bytes: Int?) throws {
        let limit = bytes.map(String.init) ?? "unlimited"
        let result = try TestSupport.run("/usr/bin/prlimit", ["--pid", "\(pid)", "--fsize=\(limit):"])
        guard result.status == 0 else {
            throw TestSupportError.server("prlimit failed: \(result.stderr)")
        }
    }

    /// The largest file in `directory` (bytes): a limit just above it leaves little room.
    public static func largestFile(in directory: URL) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.compactMap {
            (try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent($0).path))?[
                .size] as? Int
        }.max() ?? 0
    }
}
