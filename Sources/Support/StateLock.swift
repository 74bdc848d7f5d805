import Foundation

/// An exclusive `flock` on a lock file, held until ``release()`` or the end of the process (the
/// kernel drops it when the process dies, however it dies, so a crash never leaves it stuck).
///
/// `flock` locks belong to an open file description: two `StateLock`s on one file conflict even
/// inside one process, so the lock also keeps threads of one process apart.
public final class StateLock: @unchecked Sendable {
    /// Why a lock was not taken.
    public enum Failure: Error, Sendable, Equatable {
        /// Another holder has it (`wait: false`); `pid` is the holder's when it wrote it.
        case held(pid: Int32?)
        /// The lock file could not be opened or locked (`errno`).
        case system(errno: Int32)
    }

    public let path: String
    private var fd: Int32

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    deinit { release() }

    /// Takes the lock on `path` (created mode 0600 when missing). `wait: false` fails at once with
    /// ``Failure/held(pid:)`` when another holder has it; `recordPID` writes this process's id in
    /// the file so the next one can say who holds it.
    public static func acquire(path: String, wait: Bool, recordPID: Bool = false) throws(Failure) -> StateLock
    {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .system(errno: errno) }
        while flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0 {
            let err = errno
            if err == EINTR { continue }
            let holder = err == EWOULDBLOCK ? readPID(fd) : nil
            close(fd)
            throw err == EWOULDBLOCK ? .held(pid: holder) : .system(errno: err)
        }
        if recordPID {
            let text = Array("\(getpid())\n".utf8)
            _ = ftruncate(fd, 0)
            _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        }
        return StateLock(path: path, fd: fd)
    }

    /// Drops the lock (idempotent).
    public func release() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }

    private static func readPID(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        let text = String(decoding: buffer[0..<n], as: UTF8.self).trimmingCharacters(
            in: .whitespacesAndNewlines)
        return Int32(text)
    }
}

extension StateLock {
    /// Runs `body` holding the lock on `path`, waiting for it as long as it takes. Re-entrant on
    /// one thread: a nested call for the same path runs `body` under the lock already held.
    public static func withLock<T, E: Error>(
        path: String, onFailure: (Failure) -> E, _ body: () throws(E) -> T
    ) throws(E) -> T {
        let key = "eleven.StateLock:" + path
        let thread = Thread.current.threadDictionary
        if thread[key] != nil { return try body() }
        let lock: StateLock
        do throws(Failure) {
            lock = try acquire(path: path, wait: true)
        } catch {
            throw onFailure(error)
        }
        thread[key] = lock
        defer {
            thread.removeObject(forKey: key)
            lock.release()
        }
        return try body()
    }
}
