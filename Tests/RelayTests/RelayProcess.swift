import Foundation
import Net
import TestSupport
import Testing

/// The real `eleven-relay` executable on a loopback port with a file database, stopped by
/// process id.
final class RelayProcess {
    let server: ChildProcess
    let port: UInt16
    let metricsPort: UInt16?
    let databasePath: String

    var url: String { "ws://127.0.0.1:\(port)/v1" }
    var metricsURL: String? { metricsPort.map { "http://127.0.0.1:\($0)" } }
    var pid: Int32 { server.pid }
    /// Everything the relay wrote to stdout and stderr so far.
    var log: String { server.log }

    static var executable: String { TestSupport.productPath("eleven-relay") }

    init(
        databasePath: String, port: UInt16? = nil, metrics: Bool = false, arguments: [String] = [],
        environment: [String: String]? = nil
    ) throws {
        let port = try port ?? TestSupport.freePort()
        let metricsPort = metrics ? try TestSupport.freePort() : nil
        var args = ["--listen", "127.0.0.1:\(port)", "--db", databasePath]
        if let metricsPort { args += ["--metrics-listen", "127.0.0.1:\(metricsPort)"] }
        server = try ChildProcess(
            Self.executable, args + arguments, environment: environment ?? [:], port: port, timeout: 30)
        self.port = port
        self.metricsPort = metricsPort
        self.databasePath = databasePath
        // Ready means the line the demo and tests wait for has been printed. The port accepted
        // already; the line follows it, but on a loaded machine (load 20-48 on 2 cores) it was
        // seen to take more than 10 s to get through the pipe: the same 30 s as for the port.
        let deadline = Date().addingTimeInterval(30)
        while !server.log.contains("eleven-relay listening on ws://127.0.0.1:\(port)/v1")
            && !server.log.contains("eleven-relay listening on wss://127.0.0.1:\(port)/v1")
        {
            guard Date() < deadline, server.isRunning else {
                throw TestSupportError.server("no ready line:\n\(server.log)")
            }
            usleep(10_000)
        }
    }

    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> ProcessResult { server.stop(signal: signal) }

    /// One unlabelled sample from `/metrics` (`eleven_relay_…`), or one with `labels` such as
    /// `reason="message_too_large"`; -1 when absent or without a metrics listener.
    func metric(_ name: String, labels: String = "") -> Int {
        guard let base = metricsURL, let text = try? HTTPClient.send(.get, url: base + "/metrics").bodyText
        else { return -1 }
        let key = labels.isEmpty ? name + " " : name + "{" + labels + "} "
        let line = text.split(separator: "\n").first { $0.hasPrefix(key) }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
    }
}

/// A mailbox-protocol client speaking raw JSON over Net's WebSocket client.
final class WireClient {
    let socket: WebSocket
    private(set) var welcome: [String: Any] = [:]

    init(
        _ url: String, headers: HTTPHeaders = HTTPHeaders(),
        tls: TLSClientConfiguration = TLSClientConfiguration()
    ) throws {
        socket = try WebSocketClient.connect(url: url, headers: headers, tls: tls, timeout: .seconds(30))
        welcome = try next()
    }

    func send(_ text: String) { socket.send(text: text) }
    func send(_ object: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        socket.send(text: String(decoding: data, as: UTF8.self))
    }

    /// The next frame as a JSON object. Every wait here is for something that must come (no
    /// test waits for a frame that must not), so the deadline is one a loaded 2-core machine
    /// meets: an honest client was seen starved at 5 s under load, and never is when idle.
    func next(timeout: Double = 30) throws -> [String: Any] {
        let message = try socket.receive(timeout: .milliseconds(Int64(timeout * 1000)))
        let data: Data
        switch message {
        case .text(let text): data = Data(text.utf8)
        case .binary(let bytes): data = Data(bytes)
        }
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw TestSupportError.server("not an object: \(message)")
        }
        return object
    }

    /// The next frame of `type`, skipping acks and anything else.
    func next(type: String, timeout: Double = 30) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw TestSupportError.server("no \(type) in time") }
            let frame = try next(timeout: remaining)
            if frame["type"] as? String == type { return frame }
        }
    }

    /// The next frame that is not an ack.
    func nextReply(timeout: Double = 30) throws -> [String: Any] {
        while true {
            let frame = try next(timeout: timeout)
            if frame["type"] as? String != "ack" { return frame }
        }
    }

    /// Proves the connection is still served: ping → pong.
    func isAlive(_ value: Int = 7) -> Bool {
        guard (try? send(["type": "ping", "ping": value])) != nil else { return false }
        guard let pong = try? next(type: "pong") else { return false }
        return (pong["pong"] as? Int) == value
    }

    func close() { socket.close() }
}

/// A temporary directory removed at the end.
struct ScratchDirectory {
    let url: URL
    init() throws { url = try TestSupport.temporaryDirectory() }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// ``TestSupport/eventually(timeout:_:)``, for the relay tests.
func eventually(timeout: Double = 10, _ condition: () -> Bool) -> Bool {
    TestSupport.eventually(timeout: timeout, condition)
}
