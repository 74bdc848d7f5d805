import Foundation

/// A child process driven line by line over its standard input and output (e.g. one Python
/// interpreter answering many requests), with a deadline on every read. The child is stopped by
/// its process id when closed or dropped.
public final class LineProcess {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private var buffer: [UInt8] = []

    /// Starts `executable` with `arguments`.
    public init(_ executable: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    /// Writes `line` and a newline to the child's standard input.
    public func send(_ line: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// The next line of the child's standard output (without the newline). Throws if the child
    /// closes its output or `timeout` passes first.
    public func readLine(timeout: TimeInterval = 30) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        let fd = output.fileHandleForReading.fileDescriptor
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw LineProcessError.timedOut(stderr: drainErrors()) }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining, 1) * 1000))
            if ready < 0 && errno != EINTR { throw TestSupportError.system("poll", errno) }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno != EINTR { throw TestSupportError.system("read", errno) }
            if count == 0 { throw LineProcessError.closedOutput(stderr: drainErrors()) }
            if count > 0 { buffer += chunk[..<count] }
        }
    }

    /// Closes the child's input, gives it `timeout` to exit, then kills it by process id.
    /// Returns its exit status.
    @discardableResult
    public func close(timeout: TimeInterval = 10) -> Int32 {
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Whatever the child wrote to standard error so far (after it exited, everything).
    public func drainErrors() -> String {
        let fd = errors.fileHandleForReading.fileDescriptor
        var collected: [UInt8] = []
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while poll(&poller, 1, 0) > 0 {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            collected += chunk[..<count]
        }
        return String(decoding: collected, as: UTF8.self)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

public enum LineProcessError: Error, CustomStringConvertible {
    case timedOut(stderr: String)
    case closedOutput(stderr: String)

    public var description: String {
        switch self {
        case .timedOut(let stderr): "child process did not answer in time; stderr: \(stderr)"
        case .closedOutput(let stderr): "child process closed its output; stderr: \(stderr)"
        }
    }
}
