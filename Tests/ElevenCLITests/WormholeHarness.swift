import Foundation
import TestSupport

/// A relay the Wormhole interop scenarios run against: the reference mailbox server here;
/// `eleven-relay` can conform too, so the same scenarios cover both.
protocol WormholeTestRelay: AnyObject {
    /// `ws://127.0.0.1:PORT/v1`.
    var url: String { get }
    /// Stops the relay by process id and starts it again on the same port and database.
    func restart() throws
    /// Stops it for good.
    func stop()
}

/// Our `eleven-relay` with its SQLite file in a temporary directory.
final class ElevenRelayUnderTest: WormholeTestRelay {
    let directory: URL
    let port: UInt16
    private var server: ServerProcess

    init() throws {
        directory = try TestSupport.temporaryDirectory()
        port = try TestSupport.freePort()
        server = try Self.start(port: port, directory: directory)
    }

    private static func start(port: UInt16, directory: URL) throws -> ServerProcess {
        try ServerProcess(
            TestSupport.productPath("eleven-relay"),
            [
                "--listen", "127.0.0.1:\(port)", "--db",
                directory.appendingPathComponent("relay.sqlite").path,
                "--no-limits",
            ], port: port)
    }

    var url: String { "ws://127.0.0.1:\(port)/v1" }

    func restart() throws {
        server.stop(signal: SIGKILL)
        server = try Self.start(port: port, directory: directory)
    }

    func stop() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

/// The reference Magic Wormhole mailbox server (PyPI magic-wormhole-mailbox-server) with its
/// SQLite file in a temporary directory.
final class ReferenceMailboxRelay: WormholeTestRelay {
    let directory: URL
    let port: UInt16
    private var server: ServerProcess

    init() throws {
        directory = try TestSupport.temporaryDirectory()
        server = try TestSupport.startReferenceMailboxServer(in: directory)
        port = server.port
    }

    var url: String { "ws://127.0.0.1:\(port)/v1" }

    func restart() throws {
        server.stop()
        server = try ServerProcess(
            TestSupport.venvProgram("twist"),
            [
                "wormhole-mailbox", "--port=tcp:\(port):interface=127.0.0.1",
                "--channel-db=\(directory.appendingPathComponent("relay.sqlite").path)",
            ], port: port)
    }

    func stop() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

/// A program running in the background with both outputs collected as they come, so a test can
/// wait for a line (the code) while it runs. Stopped by process id if it outlives the test.
final class BackgroundProcess: @unchecked Sendable {
    let process = Process()
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    private let readers = DispatchGroup()

    private let input = Pipe()

    /// Starts the program. `stdin` is written and closed at once unless `keepInputOpen`, in which
    /// case ``send(_:)`` writes more and closes it later.
    init(
        _ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:],
        keepInputOpen: Bool = false
    ) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let outPipe = Pipe()
        let errPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        if !keepInputOpen { try? input.fileHandleForWriting.close() }
        for (handle, isErr) in [(outPipe.fileHandleForReading, false), (errPipe.fileHandleForReading, true)] {
            readers.enter()
            DispatchQueue.global().async {
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    self.lock.lock()
                    if isErr { self.err.append(chunk) } else { self.out.append(chunk) }
                    self.lock.unlock()
                }
                self.readers.leave()
            }
        }
    }

    /// Writes `data` to the program's standard input and closes it.
    func send(_ data: Data) {
        input.fileHandleForWriting.write(data)
        try? input.fileHandleForWriting.close()
    }

    var stdout: String { snapshot().0 }
    var stderr: String { snapshot().1 }

    private func snapshot() -> (String, String) {
        lock.lock()
        defer { lock.unlock() }
        return (String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    /// Waits until a line of stdout (or stderr) starts with `prefix`; returns the rest of it.
    func value(afterPrefix prefix: String, inStderr: Bool = false, timeout: TimeInterval = 60) throws
        -> String
    {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let text = inStderr ? stderr : stdout
            for line in text.split(separator: "\n") where line.hasPrefix(prefix) {
                return String(line.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
            }
            if !process.isRunning {
                // One last look after the pipes are drained.
                readers.wait()
                let final = inStderr ? stderr : stdout
                if let line = final.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                    return String(line.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
                }
                break
            }
            usleep(20_000)
        }
        throw TestSupportError.server(
            "no line starting with '\(prefix)' from \(process.executableURL?.lastPathComponent ?? "?"):\n"
                + "stdout: \(stdout)\nstderr: \(stderr)")
    }

    /// Waits for the exit (killing it by pid at the deadline) and returns what it said.
    func finish(timeout: TimeInterval = 60) -> Finished {
        let deadline = Date().addingTimeInterval(timeout)
        var timedOut = false
        while process.isRunning {
            if Date() > deadline {
                timedOut = true
                kill(process.processIdentifier, SIGKILL)
                break
            }
            usleep(10_000)
        }
        process.waitUntilExit()
        readers.wait()
        let (o, e) = snapshot()
        return Finished(status: process.terminationStatus, stdout: o, stderr: e, timedOut: timedOut)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// How a background program ended.
struct Finished: Sendable {
    let status: Int32
    let stdout: String
    let stderr: String
    let timedOut: Bool
}

/// Runs `eleven send/receive` and the Python `wormhole` CLI against one relay.
struct WormholeHarness {
    let relayURL: String
    /// `HOME` for the Python CLI (it may write state there).
    let home: URL
    /// Time limit given to `eleven` (`--timeout`) so a broken test ends instead of hanging.
    var elevenTimeout = "45s"

    static var eleven: String { TestSupport.productPath("eleven") }
    static var wormhole: String { TestSupport.venvProgram("wormhole") }

    var pythonEnvironment: [String: String] { ["HOME": home.path, "WORMHOLE_QR": "0"] }

    /// `eleven send … --relay URL`; returns the running process and the code it printed.
    func startElevenSend(_ arguments: [String], stdin: Data? = nil) throws -> (BackgroundProcess, String) {
        let process = try BackgroundProcess(
            Self.eleven, ["send", "--relay", relayURL, "--timeout", elevenTimeout] + arguments, stdin: stdin,
            environment: ["ELEVEN_WORMHOLE_RELAY": ""])
        return (process, try process.value(afterPrefix: "Wormhole code is:"))
    }

    /// `eleven receive … --relay URL` to completion.
    func elevenReceive(_ arguments: [String], stdin: Data? = nil) throws -> Finished {
        try startElevenReceive(arguments, stdin: stdin).finish()
    }

    /// `eleven receive … --relay URL`, running.
    func startElevenReceive(_ arguments: [String], stdin: Data? = nil) throws -> BackgroundProcess {
        try BackgroundProcess(
            Self.eleven, ["receive", "--relay", relayURL, "--timeout", elevenTimeout] + arguments,
            stdin: stdin)
    }

    /// `wormhole send --no-qr …`; returns the running process and the code it printed.
    func startWormholeSend(_ arguments: [String], stdin: Data? = nil, keepInputOpen: Bool = false) throws
        -> (BackgroundProcess, String)
    {
        let process = try BackgroundProcess(
            Self.wormhole, ["--relay-url", relayURL, "send", "--no-qr", "--hide-progress"] + arguments,
            stdin: stdin, environment: pythonEnvironment, keepInputOpen: keepInputOpen)
        return (process, try process.value(afterPrefix: "Wormhole code is:", inStderr: true))
    }

    /// `wormhole receive CODE` to completion.
    func wormholeReceive(_ code: String, _ arguments: [String] = []) throws -> Finished {
        try BackgroundProcess(
            Self.wormhole, ["--relay-url", relayURL, "receive", "--hide-progress"] + arguments + [code],
            environment: pythonEnvironment
        ).finish()
    }
}
