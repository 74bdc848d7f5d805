import Foundation
import Support

/// A program started by a test or a benchmark: the one child-process helper.
///
/// It starts `executable` with arguments, extra environment and a working directory; collects
/// what the child writes (stdout and stderr kept apart, and both in the order they came) or sends
/// both to a log file; waits for a line, a text or a listening port; talks to the child line by
/// line over its standard input and output; and stops it by its process id (a signal, then
/// SIGKILL after a grace period), also when it is dropped. `sample` reads its memory,
/// descriptors, threads and CPU time from /proc.
///
/// Every child runs in a process group of its own (``Subprocess``), so a Ctrl-C or a signal to the
/// test runner does not reach it: whoever starts a child stops it, by its process id (never by
/// name: other test runs on the machine have programs of the same name).
public final class ChildProcess: @unchecked Sendable {
    /// What the child reads on its standard input.
    public enum Input: Sendable {
        /// Nothing: `/dev/null`.
        case none
        /// These bytes, then end of input.
        case data(Data)
        /// A pipe left open: ``send(_:)`` and ``send(line:)`` write to it, ``closeInput()`` ends it.
        case open
    }

    /// Which output a wait or a read looks at. With a log file, every stream is the log.
    public enum Stream: Sendable {
        case stdout, stderr, both
    }

    /// The program's path.
    public let executable: String
    /// The child's process id, valid until it is stopped and waited for.
    public let pid: Int32
    /// The loopback port the child was waited for (the `port` it was started with); 0 if none.
    public let port: UInt16

    private let child: Subprocess
    /// The write end of the child's standard input (started with `.data` or `.open`).
    private let input: FileHandle?
    private let logFile: URL?
    /// Apart from `self`, so that the threads reading the pipes do not keep a dropped child alive.
    private let output = Output()

    /// Starts `executable`. `environment` is added to this process's own; `directory` is the
    /// working directory (default: this one's). Without `logFile`, stdout and stderr are read
    /// through pipes as they come; with one, both are appended to that file instead (for a child
    /// that runs long and says much, so the output is neither held in memory nor lost across a
    /// restart). With `showsErrors`, the child's stderr goes to this process's stderr as it
    /// comes (and ``stderr`` stays empty). With `port`, returns only once 127.0.0.1:`port` accepts TCP connections, and
    /// throws (after stopping the child) if it exits first or `timeout` seconds pass.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        directory: URL? = nil, input: Input = .none, logFile: URL? = nil, showsErrors: Bool = false,
        port: UInt16? = nil, timeout: TimeInterval = 30
    ) throws {
        self.executable = executable
        self.logFile = logFile
        self.port = port ?? 0
        // Every descriptor made here is closed on exec, and `Subprocess` closes all but the three
        // standard ones in the child: a child never holds another child's pipe (which would hide
        // that child's end of output until both ended), whatever other threads start meanwhile.
        var stdin = Subprocess.Stdio.null
        var inputPipe: (read: FileHandle, write: FileHandle)?
        if case .none = input {
        } else {
            let pipe = try Subprocess.pipe()
            inputPipe = pipe
            stdin = .descriptor(pipe.read.fileDescriptor)
        }
        var stdout = Subprocess.Stdio.null
        var stderr = Subprocess.Stdio.inherit
        var pipes: [(read: FileHandle, write: FileHandle, stream: Stream)] = []
        var logHandle: FileHandle?
        if let logFile {
            let fd = open(logFile.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                throw TestSupportError.server(
                    "cannot open \(logFile.path): \(String(cString: strerror(errno)))")
            }
            logHandle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            stdout = .descriptor(fd)
            stderr = .descriptor(fd)
        } else {
            let out = try Subprocess.pipe()
            pipes.append((out.read, out.write, .stdout))
            stdout = .descriptor(out.write.fileDescriptor)
            if !showsErrors {
                let err = try Subprocess.pipe()
                pipes.append((err.read, err.write, .stderr))
                stderr = .descriptor(err.write.fileDescriptor)
            }
        }
        child = try Subprocess(
            executable, arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            directory: directory?.path, stdin: stdin, stdout: stdout, stderr: stderr)
        // The child has its copies: closing ours lets a reader see the end when the child's end.
        try? logHandle?.close()
        try? inputPipe?.read.close()
        for pipe in pipes { try? pipe.write.close() }
        self.input = inputPipe?.write
        pid = child.pid
        // Told, not polled: a benchmark times the child from its start to its exit.
        Thread.detachNewThread { [child, output] in
            child.waitForExit()
            output.markExited()
        }
        // Both pipes are drained as the child writes, each on its own thread: a chatty child must
        // never block on a full pipe (64 KiB) while the test waits for something else.
        output.openReaders = pipes.count
        for (handle, _, stream) in pipes {
            Thread.detachNewThread { [output] in
                while true {
                    let chunk = handle.availableData
                    output.append(chunk, to: stream)
                    if chunk.isEmpty { return }
                }
            }
        }
        if case .data(let data) = input {
            try? self.input?.write(contentsOf: data)
            closeInput()
        }
        if let port {
            let deadline = Date().addingTimeInterval(timeout)
            while !Self.accepts(port: port) {
                guard isRunning else {
                    stop()
                    throw TestSupportError.server("\(name) exited early:\n\(log)")
                }
                guard Date() < deadline else {
                    stop()
                    let said = log
                    throw TestSupportError.server(
                        "\(name) did not listen on \(port) in \(timeout) s:\n\(said)")
                }
                usleep(20_000)
            }
        }
    }

    /// Runs a program to completion with a time limit (then it is stopped by its process id and
    /// reported as timed out); returns its exit status and output.
    public static func run(
        _ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:],
        directory: URL? = nil, timeout: TimeInterval = 60
    ) throws -> ProcessResult {
        try ChildProcess(
            executable, arguments, environment: environment, directory: directory,
            input: .data(stdin ?? Data())
        ).finish(timeout: timeout)
    }

    /// The program's file name, for messages.
    public var name: String { URL(fileURLWithPath: executable).lastPathComponent }

    public var isRunning: Bool { !child.hasExited }

    /// What the child wrote to stdout so far (with a log file: the log).
    public var stdout: String { text(.stdout) }
    /// What the child wrote to stderr so far (with a log file: the log).
    public var stderr: String { text(.stderr) }
    /// Both outputs in the order they came (with a log file: the log).
    public var log: String { text(.both) }

    /// The text of `stream` so far.
    public func text(_ stream: Stream) -> String {
        if let logFile { return (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }
        return output.text(stream)
    }

    /// Waits up to `timeout` seconds until `stream` holds a line starting with `prefix`; returns
    /// the rest of that line, trimmed. Throws, with what the child said, if the child exits
    /// without one or the time passes.
    public func value(afterPrefix prefix: String, in stream: Stream = .stdout, timeout: TimeInterval = 60)
        throws -> String
    {
        let line = try waitFor("a line starting with '\(prefix)'", in: stream, timeout: timeout) { text in
            text.split(separator: "\n").first { $0.hasPrefix(prefix) }.map(String.init)
        }
        return String(line.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
    }

    /// Waits up to `timeout` seconds until `stream` contains `text`.
    public func waitFor(_ text: String, in stream: Stream = .both, timeout: TimeInterval = 30) throws {
        _ = try waitFor("'\(text)'", in: stream, timeout: timeout) { $0.contains(text) ? text : nil }
    }

    /// Waits until `found` finds something in the text of `stream`; what it looked for is `what`.
    private func waitFor(
        _ what: String, in stream: Stream, timeout: TimeInterval, _ found: (String) -> String?
    ) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let exited = !isRunning
            // A child that exited may still have output in flight: look once more after that.
            if exited { output.waitForReaders(until: Date().addingTimeInterval(2)) }
            if let value = found(text(stream)) { return value }
            guard !exited, Date() < deadline else {
                throw TestSupportError.server(
                    "no \(what) from \(name) (\(exited ? "it exited" : "timed out")):\n"
                        + "stdout: \(stdout)\nstderr: \(stderr)")
            }
            output.waitForMore(until: min(deadline, Date().addingTimeInterval(0.02)))
        }
    }

    /// The next line the child wrote to stdout that this method has not returned yet (without
    /// its newline). Throws if the child closes its output or `timeout` passes first.
    public func readLine(timeout: TimeInterval = 30) throws -> String {
        precondition(logFile == nil, "readLine reads the stdout pipe; this child writes to a log file")
        let deadline = Date().addingTimeInterval(timeout)
        switch output.nextLine(until: deadline) {
        case .line(let line): return line
        case .closed: throw TestSupportError.server("\(name) closed its output; stderr: \(stderr)")
        case .timedOut:
            throw TestSupportError.server("\(name) did not answer in \(timeout) s; stderr: \(stderr)")
        }
    }

    /// Writes `data` to the child's standard input (started with `input: .open`).
    public func send(_ data: Data) throws {
        guard let input else { preconditionFailure("\(name) was started without an open input") }
        try input.write(contentsOf: data)
    }

    /// Writes `line` and a newline to the child's standard input.
    public func send(line: String) throws {
        try send(Data((line + "\n").utf8))
    }

    /// Ends the child's standard input.
    public func closeInput() {
        try? input?.close()
    }

    /// Waits up to `timeout` seconds for the child to exit by itself, then stops it (``stop(signal:grace:)``)
    /// and reports it as timed out. Returns its exit status and output.
    @discardableResult
    public func finish(timeout: TimeInterval = 60) -> ProcessResult {
        let exited = waitForExit(until: Date().addingTimeInterval(timeout))
        return end(signal: SIGTERM, grace: 5, timedOut: !exited)
    }

    /// Stops the child by its process id: sends `signal`, gives it `grace` seconds to exit, then
    /// SIGKILL; waits for it and for its output. `timedOut` in the result says it had to be
    /// killed. Stopping a child that has already ended only collects its result.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, grace: TimeInterval = 5) -> ProcessResult {
        end(signal: signal, grace: grace, timedOut: false)
    }

    private func end(signal: Int32, grace: TimeInterval, timedOut: Bool) -> ProcessResult {
        if let earlier = output.result { return earlier }
        var killed = timedOut
        if isRunning {
            child.signal(signal)
            if !waitForExit(until: Date().addingTimeInterval(grace)) {
                killed = killed || signal != SIGKILL
                child.signal(SIGKILL)
            }
        }
        let ended = child.wait()
        closeInput()
        // A pipe stays open while anything else holds its write end (a program the child left
        // running, as `pg_ctl start` leaves the server): wait for the readers a little, not
        // forever.
        output.waitForReaders(until: Date().addingTimeInterval(5))
        return output.keep(
            ProcessResult(
                status: ended.status, stdout: stdout, stderr: stderr, timedOut: killed,
                signalled: ended.signalled))
    }

    /// Whether the child has exited by `deadline`. The thread watching the child wakes this at
    /// once; the kernel is asked too, every 10 ms, in case that thread runs late on a loaded
    /// machine.
    private func waitForExit(until deadline: Date) -> Bool {
        while isRunning {
            guard Date() < deadline else { return false }
            _ = output.waitForExit(until: min(deadline, Date().addingTimeInterval(0.01)))
        }
        return true
    }

    /// Memory, descriptors, threads and CPU time of the child now (zeros once it has ended).
    public var sample: ProcessSample { ProcessSample(pid: pid) }

    deinit {
        stop(signal: SIGKILL)
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    private static func accepts(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// What a child wrote through its pipes, filled by one reader thread per pipe.
private final class Output: @unchecked Sendable {
    enum Next {
        case line(String)
        case closed
        case timedOut
    }

    /// Signalled whenever output arrives or a reader ends.
    private let changed = NSCondition()
    private var out = Data()
    private var err = Data()
    private var all = Data()
    /// How far ``nextLine(until:)`` has read stdout.
    private var readOffset = 0
    private var ended: ProcessResult?
    private var exited = false
    var openReaders = 0

    func markExited() {
        changed.lock()
        exited = true
        changed.broadcast()
        changed.unlock()
    }

    /// Whether the child has exited by `deadline`.
    func waitForExit(until deadline: Date) -> Bool {
        changed.lock()
        defer { changed.unlock() }
        while !exited && changed.wait(until: deadline) {}
        return exited
    }

    /// Adds a chunk read from `stream`; an empty chunk means that reader has reached the end.
    func append(_ chunk: Data, to stream: ChildProcess.Stream) {
        changed.lock()
        defer { changed.unlock() }
        if chunk.isEmpty { openReaders -= 1 }
        if stream == .stdout { out.append(chunk) } else { err.append(chunk) }
        all.append(chunk)
        changed.broadcast()
    }

    func text(_ stream: ChildProcess.Stream) -> String {
        changed.lock()
        defer { changed.unlock() }
        return String(decoding: stream == .stdout ? out : stream == .stderr ? err : all, as: UTF8.self)
    }

    func nextLine(until deadline: Date) -> Next {
        changed.lock()
        defer { changed.unlock() }
        while true {
            let unread = out[(out.startIndex + readOffset)...]
            if let newline = unread.firstIndex(of: UInt8(ascii: "\n")) {
                readOffset = newline + 1 - out.startIndex
                return .line(String(decoding: unread[..<newline], as: UTF8.self))
            }
            guard openReaders > 0 else { return .closed }
            guard changed.wait(until: deadline) || Date() < deadline else { return .timedOut }
        }
    }

    func waitForMore(until deadline: Date) {
        changed.lock()
        _ = changed.wait(until: deadline)
        changed.unlock()
    }

    func waitForReaders(until deadline: Date) {
        changed.lock()
        while openReaders > 0 && changed.wait(until: deadline) {}
        changed.unlock()
    }

    /// The result of the child's end, kept so that stopping again returns the same.
    var result: ProcessResult? {
        changed.lock()
        defer { changed.unlock() }
        return ended
    }

    func keep(_ result: ProcessResult) -> ProcessResult {
        changed.lock()
        defer { changed.unlock() }
        if ended == nil { ended = result }
        return ended ?? result
    }
}

/// How a program ended and what it said.
public struct ProcessResult: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
    /// It did not end in time, or not on the signal that asked it to: it was killed.
    public let timedOut: Bool
    /// A signal ended it (then `status` is the signal's number), not its own exit.
    public let signalled: Bool

    public init(status: Int32, stdout: String, stderr: String, timedOut: Bool, signalled: Bool = false) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
        self.timedOut = timedOut
        self.signalled = signalled
    }
}
