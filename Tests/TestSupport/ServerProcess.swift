import Foundation

/// A server started by a test: launched with its arguments, considered ready once its loopback
/// port accepts TCP connections, and stopped by process id (SIGTERM, then SIGKILL) by `stop()`
/// or when dropped.
public final class ServerProcess: @unchecked Sendable {
    public let process: Process
    public let port: UInt16
    private let logURL: URL

    /// Starts `executable` and waits up to `timeout` seconds for 127.0.0.1:`port` to accept.
    public init(
        _ executable: String, _ arguments: [String], port: UInt16,
        environment: [String: String]? = nil, timeout: TimeInterval = 30
    ) throws {
        self.port = port
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        logURL = FileManager.default.temporaryDirectory.appendingPathComponent(
            "server-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while !Self.accepts(port: port) {
            guard process.isRunning else {
                throw TestSupportError.server("\(executable) exited early:\n\(self.log)")
            }
            guard Date() < deadline else {
                stop()
                throw TestSupportError.server(
                    "\(executable) did not listen on \(port) in \(timeout) s:\n\(self.log)")
            }
            usleep(20_000)
        }
    }

    /// What the server wrote to stdout and stderr so far.
    public var log: String {
        (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
    }

    /// Stops the server by its process id and waits for it.
    public func stop(signal: Int32 = SIGTERM) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: logURL)
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    public static func accepts(port: UInt16) -> Bool {
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

extension TestSupport {
    /// A program installed in the interop virtualenv (`twist`, `wormhole`), next to its python.
    public static func venvProgram(_ name: String) -> String {
        URL(fileURLWithPath: python).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// Starts the reference Magic Wormhole mailbox server (PyPI magic-wormhole-mailbox-server)
    /// on a free loopback port with a file database in `directory`.
    public static func startReferenceMailboxServer(in directory: URL) throws -> ServerProcess {
        let port = try freePort()
        return try ServerProcess(
            venvProgram("twist"),
            [
                "wormhole-mailbox", "--port=tcp:\(port):interface=127.0.0.1",
                "--channel-db=\(directory.appendingPathComponent("relay.sqlite").path)",
            ], port: port)
    }

    /// A fresh temporary directory, removed by the caller.
    public static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "eleven-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
