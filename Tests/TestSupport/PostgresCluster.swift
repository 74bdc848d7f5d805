import Foundation

/// A throw-away PostgreSQL cluster for tests: `initdb` into a fresh temporary directory, the
/// server on a free 127.0.0.1 port (and a Unix socket inside that directory only), trust
/// authentication for the one role `eleven`, durability off (`fsync=off`: the data is thrown
/// away). Stopped by process id (`stop()`, or when dropped), and its directory removed.
///
/// PostgreSQL refuses to run as root; tests and CI do run as root, so the binaries then run as
/// the `postgres` user (Debian's `postgresql` package creates it) through `runuser`, with the
/// directory owned by that user. As any other user they run directly.
///
/// Needs Debian's `postgresql` package (`scripts/deps --test` installs it). Tests that need a
/// cluster fail without it unless `ELEVEN_SKIP_POSTGRES=1` (see ``skipped``).
public final class PostgresCluster: @unchecked Sendable {
    public let port: UInt16
    public let directory: URL
    public let role = "eleven"
    private let lock = NSLock()
    private var pid: pid_t?

    /// `postgresql://eleven@127.0.0.1:PORT/postgres` (libpq URI).
    public var url: String { url(database: "postgres") }

    public func url(database: String) -> String {
        "postgresql://\(role)@127.0.0.1:\(port)/\(database)?connect_timeout=3"
    }

    /// Whether Postgres-backed tests are switched off (`ELEVEN_SKIP_POSTGRES=1`).
    public static var skipped: Bool {
        ProcessInfo.processInfo.environment["ELEVEN_SKIP_POSTGRES"] == "1"
    }

    /// The directory with `initdb`, `pg_ctl` and `postgres`: `$ELEVEN_TEST_PG_BIN`, else the
    /// newest `/usr/lib/postgresql/N/bin`.
    public static var binDirectory: String? {
        if let dir = ProcessInfo.processInfo.environment["ELEVEN_TEST_PG_BIN"], !dir.isEmpty { return dir }
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let newest = versions.compactMap(Int.init).sorted().last
        guard let newest else { return nil }
        let dir = "\(root)/\(newest)/bin"
        return FileManager.default.isExecutableFile(atPath: "\(dir)/initdb") ? dir : nil
    }

    private let bin: String
    private let owner: (uid: uid_t, gid: gid_t)?

    /// Creates and starts the cluster (a second or two).
    public init() throws {
        guard let bin = Self.binDirectory else {
            throw TestSupportError.server(
                "PostgreSQL is not installed (no /usr/lib/postgresql/N/bin/initdb); run scripts/deps --test "
                    + "or set ELEVEN_SKIP_POSTGRES=1")
        }
        self.bin = bin
        if getuid() == 0 {
            guard let entry = getpwnam("postgres") else {
                throw TestSupportError.server(
                    "running as root and there is no postgres user to run PostgreSQL")
            }
            owner = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        } else {
            owner = nil
        }
        directory = URL(fileURLWithPath: "/tmp/eleven-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        if let owner { chown(directory.path, owner.uid, owner.gid) }
        port = try TestSupport.freePort()
        let initdb = try runAsOwner(
            "initdb",
            [
                "-D", dataPath, "-U", role, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8",
            ])
        guard initdb.status == 0 else {
            cleanUp()
            throw TestSupportError.server("initdb failed:\n\(initdb.stdout)\(initdb.stderr)")
        }
        try start()
    }

    deinit {
        stop()
        cleanUp()
    }

    private var dataPath: String { directory.appendingPathComponent("data").path }
    private var logPath: String { directory.appendingPathComponent("server.log").path }

    /// The server's log so far.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Whether the server is running.
    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let pid else { return false }
        return kill(pid, 0) == 0
    }

    /// Starts the server (again, after `stop()`) and waits until it accepts connections.
    public func start() throws {
        lock.lock()
        let running = pid.map { kill($0, 0) == 0 } ?? false
        lock.unlock()
        if running { return }
        let options =
            "-p \(port) -c listen_addresses=127.0.0.1 -k \(directory.path) -c fsync=off "
            + "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100"
        let result = try runAsOwner(
            "pg_ctl", ["-D", dataPath, "-l", logPath, "-o", options, "-w", "-t", "30", "start"], timeout: 40)
        guard result.status == 0 else {
            throw TestSupportError.server("pg_ctl start failed:\n\(result.stdout)\(result.stderr)\n\(log)")
        }
        // The first line of postmaster.pid is the server's process id.
        let pidFile = (try? String(contentsOfFile: "\(dataPath)/postmaster.pid", encoding: .utf8)) ?? ""
        guard let first = pidFile.split(separator: "\n").first, let number = pid_t(first) else {
            throw TestSupportError.server("no postmaster.pid after start:\n\(log)")
        }
        lock.lock()
        pid = number
        lock.unlock()
    }

    /// Stops the server by its process id: SIGINT (fast shutdown: connections are cut), then
    /// SIGKILL after 10 s. Waits until it is gone.
    public func stop() {
        lock.lock()
        let current = pid
        pid = nil
        lock.unlock()
        guard let current else { return }
        kill(current, SIGINT)
        let deadline = Date().addingTimeInterval(10)
        while kill(current, 0) == 0 && Date() < deadline { usleep(20_000) }
        if kill(current, 0) == 0 {
            kill(current, SIGKILL)
            while kill(current, 0) == 0 { usleep(20_000) }
        }
        // A SIGKILLed server leaves its pid file; a later start must not trip over it.
        try? FileManager.default.removeItem(atPath: "\(dataPath)/postmaster.pid")
    }

    private func cleanUp() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs one PostgreSQL tool (as `postgres` when root) to completion, its output in a file.
    ///
    /// The server that `pg_ctl start` leaves behind inherits whatever descriptors the tool had;
    /// Foundation's `Process` does not close the parent's other descriptors in the child, so a
    /// pipe another test is reading at that moment would stay open (and that test would hang)
    /// for as long as the server runs. `bash` therefore closes every descriptor above 2 first,
    /// and the tool's output goes to a file, not a pipe.
    private func runAsOwner(_ tool: String, _ arguments: [String], timeout: TimeInterval = 60) throws
        -> ProcessResult
    {
        let command =
            (owner != nil ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []) + ["\(bin)/\(tool)"]
        let outputURL = directory.appendingPathComponent("\(tool)-\(UUID().uuidString.prefix(8)).out")
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let closeAll =
            "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done; exec \"$@\""
        let result = try ChildProcess(
            "/bin/bash", ["-c", closeAll, "bash"] + command + arguments, logFile: outputURL
        ).finish(timeout: timeout)
        return ProcessResult(
            status: result.status, stdout: result.stdout, stderr: "", timedOut: result.timedOut)
    }
}
