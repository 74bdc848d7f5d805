import Foundation

/// Shared helpers for the test targets: where the package lives, free loopback ports, programs
/// run to completion (``ChildProcess`` starts and stops the others), and the Python virtualenv
/// that interop tests use.
public enum TestSupport {
    /// The package root, found from this file's path (works from any working directory).
    public static let packageRoot: URL = {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }()

    /// The Python interpreter of the test virtualenv made by `scripts/test`
    /// (`$ELEVEN_TEST_PYTHON`, else `.venv-test/bin/python` at the package root).
    public static var python: String {
        if let p = ProcessInfo.processInfo.environment["ELEVEN_TEST_PYTHON"], !p.isEmpty { return p }
        return packageRoot.appendingPathComponent(".venv-test/bin/python").path
    }

    /// Whether the interop virtualenv exists. Interop tests fail (not skip) without it unless
    /// `ELEVEN_SKIP_INTEROP=1`, so CI can never pass them vacuously.
    public static var interopSkipped: Bool {
        ProcessInfo.processInfo.environment["ELEVEN_SKIP_INTEROP"] == "1"
    }

    /// Ports this test process has handed out already.
    private static let handedOut = NSLock()
    nonisolated(unsafe) private static var portsHandedOut = Set<UInt16>()

    /// A TCP port on 127.0.0.1 that was free a moment ago and that this process has not handed
    /// out before: the kernel may offer a port again as soon as the probe closes, and two tests
    /// starting servers on one port at once would talk to each other's server.
    public static func freePort() throws -> UInt16 {
        for _ in 0..<1000 {
            let port = try unusedPort()
            let fresh = handedOut.withLock { portsHandedOut.insert(port).inserted }
            if fresh { return port }
        }
        throw TestSupportError.server("no fresh loopback port after 1000 tries")
    }

    /// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it back, close).
    private static func unusedPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError.system("socket", errno) }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else { throw TestSupportError.system("bind", errno) }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return UInt16(bigEndian: addr.sin_port)
    }

    /// Runs a program to completion with a time limit; returns exit status and output.
    /// A program still running at the deadline is stopped by its pid and reported as such.
    public static func run(
        _ executable: String, _ arguments: [String], stdin: Data? = nil,
        environment: [String: String] = [:], timeout: TimeInterval = 60
    ) throws -> ProcessResult {
        try ChildProcess.run(executable, arguments, stdin: stdin, environment: environment, timeout: timeout)
    }

    /// The path of a product built next to the test bundle (e.g. `eleven`, `eleven-relay`).
    public static func productPath(_ name: String) -> String {
        // ELEVEN_TEST_PRODUCTS runs the end-to-end tests against other builds of the programs,
        // for example an older commit's, to show an attack test succeeding before its fix.
        if let other = ProcessInfo.processInfo.environment["ELEVEN_TEST_PRODUCTS"], !other.isEmpty {
            return URL(fileURLWithPath: other).appendingPathComponent(name).path
        }
        let bundle = Bundle.main.bundleURL
        // swift test runs the xctest bundle from the build directory (.build/<triple>/debug).
        var dir = bundle
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
            dir = dir.deletingLastPathComponent()
        }
        return packageRoot.appendingPathComponent(".build/debug/\(name)").path
    }
}

public enum TestSupportError: Error, CustomStringConvertible {
    case system(String, Int32)
    case server(String)
    public var description: String {
        switch self {
        case .system(let call, let code): return "\(call) failed: \(String(cString: strerror(code)))"
        case .server(let why): return why
        }
    }
}

extension TestSupport {
    /// A program installed in the interop virtualenv (`twist`, `wormhole`), next to its python.
    public static func venvProgram(_ name: String) -> String {
        URL(fileURLWithPath: python).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// Starts the reference Magic Wormhole mailbox server (PyPI magic-wormhole-mailbox-server)
    /// on `port` (default: a free one) of 127.0.0.1 with a file database in `directory`.
    public static func startReferenceMailboxServer(in directory: URL, port: UInt16? = nil) throws
        -> ChildProcess
    {
        let port = try port ?? freePort()
        return try ChildProcess(
            venvProgram("twist"),
            [
                "wormhole-mailbox", "--port=tcp:\(port):interface=127.0.0.1",
                "--channel-db=\(directory.appendingPathComponent("relay.sqlite").path)",
            ], port: port)
    }

    /// A blocking TCP socket connected to 127.0.0.1:`port`, reads timing out after `receiveTimeout`
    /// seconds (generous: answers that must come may be slow on a loaded machine). A
    /// `receiveBuffer` is set before connecting, where it limits the TCP window.
    public static func connectLoopback(port: UInt16, receiveTimeout: Int = 10, receiveBuffer: Int32? = nil)
        throws -> Int32
    {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            throw TestSupportError.system("connect", errno)
        }
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// A fresh temporary directory, removed by the caller.
    public static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "eleven-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
