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
    /// Given after `--no-limits` (e.g. `--permission hashcash:12`).
    let arguments: [String]
    private var server: ChildProcess

    init(arguments: [String] = []) throws {
        directory = try TestSupport.temporaryDirectory()
        port = try TestSupport.freePort()
        self.arguments = arguments
        server = try Self.start(port: port, directory: directory, arguments: arguments)
    }

    private static func start(port: UInt16, directory: URL, arguments: [String]) throws -> ChildProcess {
        try ChildProcess(
            TestSupport.productPath("eleven-relay"),
            [
                "--listen", "127.0.0.1:\(port)", "--db",
                directory.appendingPathComponent("relay.sqlite").path,
                "--no-limits",
            ] + arguments, port: port)
    }

    var url: String { "ws://127.0.0.1:\(port)/v1" }

    func restart() throws {
        server.stop(signal: SIGKILL)
        server = try Self.start(port: port, directory: directory, arguments: arguments)
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
    private var server: ChildProcess

    init() throws {
        directory = try TestSupport.temporaryDirectory()
        port = try TestSupport.freePort()
        server = try TestSupport.startReferenceMailboxServer(in: directory, port: port)
    }

    var url: String { "ws://127.0.0.1:\(port)/v1" }

    func restart() throws {
        server.stop()
        server = try TestSupport.startReferenceMailboxServer(in: directory, port: port)
    }

    func stop() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
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
    func startElevenSend(_ arguments: [String], stdin: Data? = nil) throws -> (ChildProcess, String) {
        let process = try ChildProcess(
            Self.eleven, ["send", "--relay", relayURL, "--timeout", elevenTimeout] + arguments,
            environment: ["ELEVEN_WORMHOLE_RELAY": ""], input: .data(stdin ?? Data()))
        return (process, try process.value(afterPrefix: "Wormhole code is:"))
    }

    /// `eleven receive … --relay URL` to completion.
    func elevenReceive(_ arguments: [String], stdin: Data? = nil) throws -> ProcessResult {
        try startElevenReceive(arguments, stdin: stdin).finish()
    }

    /// `eleven receive … --relay URL`, running.
    func startElevenReceive(_ arguments: [String], stdin: Data? = nil) throws -> ChildProcess {
        try ChildProcess(
            Self.eleven, ["receive", "--relay", relayURL, "--timeout", elevenTimeout] + arguments,
            input: .data(stdin ?? Data()))
    }

    /// `wormhole send --no-qr …`; returns the running process and the code it printed.
    /// `input: .open` keeps its standard input open for an answer.
    func startWormholeSend(_ arguments: [String], stdin: Data? = nil, input: ChildProcess.Input? = nil) throws
        -> (ChildProcess, String)
    {
        let process = try ChildProcess(
            Self.wormhole, ["--relay-url", relayURL, "send", "--no-qr", "--hide-progress"] + arguments,
            environment: pythonEnvironment, input: input ?? .data(stdin ?? Data()))
        return (process, try process.value(afterPrefix: "Wormhole code is:", in: .stderr))
    }

    /// `wormhole receive CODE` to completion.
    func wormholeReceive(_ code: String, _ arguments: [String] = []) throws -> ProcessResult {
        try ChildProcess(
            Self.wormhole, ["--relay-url", relayURL, "receive", "--hide-progress"] + arguments + [code],
            environment: pythonEnvironment
        ).finish()
    }
}
