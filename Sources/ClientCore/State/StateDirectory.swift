import Foundation
import PAKE
import SpaceModel
import Support

/// A problem with the local state directory: a stable ``code`` and a message that says what to do.
public struct LocalStateError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The directory or a file in it cannot be read or created.
        case unreadable = "state_unreadable"
        /// A file is not in a format this client knows (damaged, or not Eleven's).
        case corrupt = "state_corrupt"
        /// A file was written by a newer client.
        case tooNew = "state_too_new"
        /// A file could not be written (disk full, permissions).
        case unwritable = "state_unwritable"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// The client's state directory (`$ELEVEN_HOME`, default `~/.eleven`): mode 0700, files 0600,
/// every write atomic (temporary file, fsync, rename, fsync of the directory), so a crash leaves
/// either the old file or the new one, never half of one.
public struct StateDirectory: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// `$ELEVEN_HOME`, else `~/.eleven`.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> String
    {
        if let home = environment["ELEVEN_HOME"], !home.isEmpty { return home }
        let user = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return (user as NSString).appendingPathComponent(".eleven")
    }

    /// Creates the directory (0700) if it is missing and tightens its mode if others could read it.
    public func prepare() throws(LocalStateError) {
        var info = stat()
        if stat(path, &info) != 0 {
            guard errno == ENOENT else { throw unreadable(path, errno) }
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty {
                try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            }
            guard mkdir(path, 0o700) == 0 || errno == EEXIST else { throw unreadable(path, errno) }
            guard stat(path, &info) == 0 else { throw unreadable(path, errno) }
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw LocalStateError(
                .unreadable, "\(path) is not a directory. Move it away or set ELEVEN_HOME to another place.")
        }
        if info.st_mode & 0o077 != 0 { _ = chmod(path, 0o700) }
        guard access(path, R_OK | X_OK) == 0 else { throw unreadable(path, errno) }
        // Readable but not writable (a read-only mount, another owner): say so, not "can't read".
        guard access(path, W_OK) == 0 else {
            let err = errno
            throw LocalStateError(
                .unwritable,
                "can't write in \(path): \(String(cString: strerror(err)).lowercased()). "
                    + "Check its permissions, or set ELEVEN_HOME to another directory.")
        }
        removeAbandonedTemporaryFiles()
    }

    /// Removes the temporary files of writes whose process died before the rename (killed during
    /// `space create`, say). Each temporary file names its writer's process id; a writer still
    /// alive keeps its file.
    private func removeAbandonedTemporaryFiles() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
        for name in names where name.hasPrefix(".") && name.hasSuffix(".tmp") {
            let fields = name.split(separator: ".")
            guard fields.count >= 4, let pid = Int32(fields[fields.count - 3]), pid > 0 else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { unlink(file(name)) }
        }
    }

    /// The lock file every read-modify-write of the state holds (see ``locked(_:)``).
    static let lockFile = "state.lock"

    /// Runs `body` holding the directory's lock (an exclusive `flock` on `state.lock`, waited
    /// for), so parallel `eleven` commands on one home never lose each other's updates: read the
    /// file, change it and write it inside `body`. Keep `body` short and free of network waits.
    /// Re-entrant on one thread.
    public func locked<T>(_ body: () throws(LocalStateError) -> T) throws(LocalStateError) -> T {
        try prepare()
        let target = file(Self.lockFile)
        return try StateLock.withLock(
            path: target,
            onFailure: { failure in
                switch failure {
                case .system(let err): unwritable(target, err)
                case .held: LocalStateError(.unwritable, "can't lock \(target).")
                }
            }, body)
    }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    /// The bytes of `name`, or nil when it does not exist.
    public func read(_ name: String) throws(LocalStateError) -> [UInt8]? {
        let target = file(name)
        let fd = open(target, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw unreadable(target, errno)
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw unreadable(target, errno)
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
            guard bytes.count <= 16 << 20 else {
                throw LocalStateError(.corrupt, "\(target) is far too large to be Eleven's state.")
            }
        }
        wipe(&chunk)
        return bytes
    }

    /// Replaces `name` atomically with `bytes`, mode 0600. `durable: false` skips the fsyncs:
    /// still atomic and safe from a crash of the process, not from a power loss (for state
    /// rewritten often on a latency path, such as a join in progress).
    public func write(_ name: String, _ bytes: some ReadableBytes, durable: Bool = true)
        throws(LocalStateError)
    {
        let target = file(name)
        var random = SystemRandom()
        // The process id lets a later run remove the file if this one is killed before the rename.
        let temporary = file(".\(name).\(getpid()).\(Base64URL.encode(random.bytes(count: 6))).tmp")
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw unwritable(target, errno) }
        let failure: Int32? = bytes.withReadableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += n
            }
            return !durable || fsync(fd) == 0 ? nil : errno
        }
        close(fd)
        if let failure {
            unlink(temporary)
            throw unwritable(target, failure)
        }
        guard rename(temporary, target) == 0 else {
            let e = errno
            unlink(temporary)
            throw unwritable(target, e)
        }
        let directory = durable ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
    }

    private func unreadable(_ target: String, _ err: Int32) -> LocalStateError {
        LocalStateError(
            .unreadable,
            "can't read \(target): \(String(cString: strerror(err)).lowercased()). "
                + "Check its permissions, or set ELEVEN_HOME to another directory.")
    }

    private func unwritable(_ target: String, _ err: Int32) -> LocalStateError {
        LocalStateError(
            .unwritable, "can't save \(target): \(String(cString: strerror(err)).lowercased()).")
    }
}
