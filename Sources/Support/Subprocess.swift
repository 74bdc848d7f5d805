import CNet
import Foundation

/// A program started with `posix_spawn`: the one way this package starts a child (the demo's
/// services, and every child of a test or a benchmark through `TestSupport.ChildProcess`).
///
/// Why not Foundation's `Process`: on Linux its `run()` finds the highest open descriptor by
/// reading `/proc/self/fd` and copying each entry's whole 256-byte name, past the end of glibc's
/// directory buffer (swift-corelibs-foundation pull request 5472); a test run that started
/// hundreds of children crashed in that copy about once in five runs (SIGSEGV in `memcpy` under
/// `Process.run()`). It also closed in the child only the descriptors it saw open, so a pipe
/// another thread opened meanwhile leaked into the child. Here the child closes every
/// descriptor from 3 up (`posix_spawn_file_actions_addclosefrom_np`), whatever other threads do.
///
/// The child gets its own process group (a Ctrl-C or a signal meant for this process does not
/// reach it: whoever starts a child stops it, by its process id), an empty signal mask, and every
/// signal at its default action (this process ignores SIGPIPE; an ignored signal would be
/// inherited across `exec`).
///
/// The child is collected (reaped) only by ``wait()``, under the same lock ``signal(_:)`` takes:
/// until then its process id cannot be reused, so a signal never reaches another program.
public final class Subprocess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stdio: Sendable {
        /// This process's own stream.
        case inherit
        /// `/dev/null`.
        case null
        /// This descriptor, duplicated into place in the child. The caller still owns (and closes)
        /// its copy, after `init` returns.
        case descriptor(Int32)
    }

    /// How the child ended.
    public struct Termination: Sendable, Equatable {
        /// The exit status, or the number of the signal that ended it.
        public let status: Int32
        /// A signal ended it, not its own exit.
        public let signalled: Bool

        public init(status: Int32, signalled: Bool) {
            self.status = status
            self.signalled = signalled
        }
    }

    public let pid: pid_t
    /// The termination once collected; `nil` while the child may still run.
    private let collected = Locked<Termination?>(nil)

    /// Starts `executable` (a path) with `arguments`. `environment` is the child's whole
    /// environment (default: this process's); `directory` its working directory (default: this
    /// one's). Throws ``SubprocessError`` if it cannot be started (no such file, not executable).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        directory: String? = nil, stdin: Stdio = .null, stdout: Stdio = .inherit, stderr: Stdio = .inherit
    ) throws {
        // A write to an exited child's input must be EPIPE, not the end of this process.
        BrokenPipes.ignore()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        var failed: (String, Int32)?
        func check(_ step: String, _ result: Int32) {
            if result != 0 && failed == nil { failed = (step, result) }
        }
        for (target, stdio) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stdio {
            case .inherit: break
            case .null:
                check(
                    "open /dev/null",
                    posix_spawn_file_actions_addopen(
                        &actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
                )
            case .descriptor(let fd):
                check("dup2", posix_spawn_file_actions_adddup2(&actions, fd, target))
            }
        }
        check("closefrom", posix_spawn_file_actions_addclosefrom_np(&actions, 3))
        if let directory { check("chdir", posix_spawn_file_actions_addchdir_np(&actions, directory)) }

        var signals = sigset_t()
        sigemptyset(&signals)
        check("signal mask", posix_spawnattr_setsigmask(&attributes, &signals))
        sigfillset(&signals)
        check("signal defaults", posix_spawnattr_setsigdefault(&attributes, &signals))
        check("process group", posix_spawnattr_setpgroup(&attributes, 0))
        check(
            "flags",
            posix_spawnattr_setflags(
                &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP)))
        if let (step, code) = failed {
            throw SubprocessError(executable: executable, step: step, errno: code)
        }

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let env =
            (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [
                nil
            ]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in env { free(pointer) }
        }
        var child = pid_t()
        let spawned = posix_spawn(&child, executable, &actions, &attributes, argv, env)
        guard spawned == 0 else {
            throw SubprocessError(executable: executable, step: "spawn", errno: spawned)
        }
        pid = child
    }

    /// Whether the child has exited (asked without collecting it).
    public var hasExited: Bool {
        if collected.withLock({ $0 }) != nil { return true }
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else { return true }
        return info._sifields._sigchld.si_pid == pid
    }

    /// Blocks until the child has exited, without collecting it (for a thread that reports the
    /// exit while ``signal(_:)`` stays safe).
    public func waitForExit() {
        var info = siginfo_t()
        while collected.withLock({ $0 }) == nil
            && waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR
        {}
    }

    /// Sends `signal` to the child, unless it has been collected already.
    public func signal(_ signal: Int32) {
        collected.withLock { if $0 == nil { kill(pid, signal) } }
    }

    /// Waits for the child to exit and collects it; every later call returns the same.
    @discardableResult
    public func wait() -> Termination {
        waitForExit()
        return collected.withLock { collected in
            if let collected { return collected }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            // The status word as <sys/wait.h> lays it out: the signal in the low 7 bits, else
            // the exit code in the next 8.
            let signal = status & 0x7f
            let ended =
                signal == 0
                ? Termination(status: (status >> 8) & 0xff, signalled: false)
                : Termination(status: signal, signalled: true)
            collected = ended
            return ended
        }
    }

    /// A pipe whose two ends are closed on `exec` (a child gets an end only through ``Stdio``).
    public static func pipe() throws -> (read: FileHandle, write: FileHandle) {
        var fds: [Int32] = [0, 0]
        guard pipe2(&fds, O_CLOEXEC) == 0 else {
            throw SubprocessError(executable: "", step: "pipe", errno: errno)
        }
        return (
            FileHandle(fileDescriptor: fds[0], closeOnDealloc: true),
            FileHandle(fileDescriptor: fds[1], closeOnDealloc: true)
        )
    }
}

/// A program could not be started.
public struct SubprocessError: Error, CustomStringConvertible, Sendable {
    public let executable: String
    /// Which step failed (`spawn`, `pipe`, `chdir`...).
    public let step: String
    public let errno: Int32

    public var description: String {
        "cannot start \(executable.isEmpty ? "a program" : executable) (\(step)): \(String(cString: strerror(errno)))"
    }
}
