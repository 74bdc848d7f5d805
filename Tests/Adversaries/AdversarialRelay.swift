import ClientCore
import Foundation
import JoinProtocol
import Net
import PAKE
import SpaceModel
import TestSupport

/// One mailbox-protocol frame as the adversarial relay sees it: which connection, which way,
/// and the JSON text, with accessors for the fields the adversaries care about.
public struct RelayFrame: Sendable {
    public enum Direction: Sendable { case toRelay, toClient }

    public let link: Int
    public let direction: Direction
    public let text: String

    private var object: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    public var type: String { object["type"] as? String ?? "" }
    public var phase: Rendezvous.Phase? { (object["phase"] as? String).map { Rendezvous.Phase($0) } }
    public var body: [UInt8]? { (object["body"] as? String).flatMap(Hex.decode) }
    public var side: String? { object["side"] as? String }
    public var nameplate: String? { object["nameplate"] as? String }

    /// A mailbox message (`add` to the relay, `message` to a client): the ones a network may
    /// reorder or repeat without breaking the connection.
    public var isMailboxMessage: Bool { type == "add" || type == "message" }

    /// The same frame with `key` set to `value` (a string field).
    public func replacing(_ key: String, with value: String) -> String {
        var copy = object
        copy[key] = value
        let data = (try? JSONSerialization.data(withJSONObject: copy, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// The same frame with another body.
    public func replacingBody(_ body: [UInt8]) -> String { replacing("body", with: Hex.encode(body)) }

    /// A relay-to-client mailbox message, as the relay would send it.
    public static func message(side: String, phase: Rendezvous.Phase, body: [UInt8]) -> String {
        let object: [String: Any] = [
            "type": "message", "side": side, "phase": phase.value, "body": Hex.encode(body), "id": "adv",
            "server_rx": Date().timeIntervalSince1970,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

/// What the adversary does with a frame (on the frame's own connection).
public enum RelayEmission: Sendable {
    /// Deliver `text` in `direction` after `delayMs`. `inOrder` frames never overtake earlier
    /// frames of the same direction; the others may (reordering).
    case deliver(RelayFrame.Direction, String, delayMs: Int, inOrder: Bool)
    /// Lose everything from now on on this connection and cut it after `afterMs`.
    case silenceAndCut(afterMs: Int)
}

/// The policy of an adversarial relay. Called for every frame, one call at a time.
public protocol RelayAdversary: AnyObject, Sendable {
    func intercept(_ frame: RelayFrame, proxy: AdversarialRelay) -> [RelayEmission]
}

extension RelayAdversary {
    /// Forward unchanged, now.
    public func pass(_ frame: RelayFrame) -> [RelayEmission] {
        [.deliver(frame.direction, frame.text, delayMs: 0, inOrder: true)]
    }
}

/// A WebSocket proxy (the `Net` module's server and client) in front of a real relay: every
/// frame either way goes through a ``RelayAdversary``, which can read, drop, delay, duplicate,
/// reorder, substitute or inject frames and cut connections. Every frame is recorded, so a
/// later run can replay an earlier one.
public final class AdversarialRelay: @unchecked Sendable {
    public let upstream: String
    public let adversary: any RelayAdversary
    private let server: Server
    private let lock = NSLock()
    private let decide = NSLock()
    private var links: [Int: Link] = [:]
    private var nextLink = 0
    private var recorded: [RelayFrame] = []
    private var isStopped = false

    private final class Link: @unchecked Sendable {
        let id: Int
        let client: WebSocket
        var upstream: WebSocket?
        var pendingToRelay: [String] = []
        var silenced = false
        var lastRelease: [Bool: DispatchTime] = [:]
        var outbox: [(at: DispatchTime, seq: Int, direction: RelayFrame.Direction, text: String)] = []
        var sequence = 0
        let queue: DispatchQueue

        init(id: Int, client: WebSocket) {
            self.id = id
            self.client = client
            queue = DispatchQueue(label: "adversarial-link-\(id)")
        }
    }

    public init(upstream: String, adversary: any RelayAdversary) throws {
        self.upstream = upstream
        self.adversary = adversary
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 1
        server = Server(configuration: configuration)
        server.webSocket(path: "/v1") { [weak self] socket, _ in self?.open(socket) }
        try server.start()
    }

    public var url: String { "ws://127.0.0.1:\(server.port)/v1" }

    /// Every frame seen so far, in arrival order.
    public var frames: [RelayFrame] { lock.withLock { recorded } }

    public func stop() {
        let all = lock.withLock {
            isStopped = true
            return Array(links.values)
        }
        for link in all { cut(link) }
        server.shutdown(timeout: .milliseconds(100))
    }

    /// Sends `text` on connection `link` now (an injection).
    public func inject(link id: Int, _ direction: RelayFrame.Direction, _ text: String) {
        guard let link = lock.withLock({ links[id] }) else { return }
        send(link, direction, text)
    }

    private func open(_ client: WebSocket) {
        let link = lock.withLock { () -> Link? in
            guard !isStopped else { return nil }
            nextLink += 1
            let link = Link(id: nextLink, client: client)
            links[link.id] = link
            return link
        }
        guard let link else {
            client.close()
            return
        }
        client.onMessage { [weak self] _, message in self?.arrived(link, .toRelay, message) }
        client.onClose { [weak self] _, _, _ in self?.cut(link) }
        WebSocketClient.connect(url: upstream) { [weak self] result in
            guard let self else {
                if case .success(let socket) = result { socket.close() }
                return
            }
            guard case .success(let socket) = result else {
                self.cut(link)
                return
            }
            socket.onMessage { [weak self] _, message in self?.arrived(link, .toClient, message) }
            socket.onClose { [weak self] _, _, _ in self?.cut(link) }
            // Under the lock, so nothing sent meanwhile overtakes what waited for the connection.
            let opened = self.lock.withLock { () -> Bool in
                guard !link.silenced else { return false }
                link.upstream = socket
                for text in link.pendingToRelay { socket.send(text: text) }
                link.pendingToRelay = []
                return true
            }
            if !opened { socket.close() }
        }
    }

    private func arrived(_ link: Link, _ direction: RelayFrame.Direction, _ message: WebSocketMessage) {
        let text: String
        switch message {
        case .text(let t): text = t
        case .binary(let b): text = String(decoding: b, as: UTF8.self)
        }
        let frame = RelayFrame(link: link.id, direction: direction, text: text)
        let silenced = lock.withLock { () -> Bool in
            recorded.append(frame)
            return link.silenced
        }
        guard !silenced else { return }
        let emissions = decide.withLock { adversary.intercept(frame, proxy: self) }
        for emission in emissions {
            switch emission {
            case .deliver(let way, let text, let delay, let inOrder):
                schedule(link, way, text, delayMs: delay, inOrder: inOrder)
            case .silenceAndCut(let after):
                lock.withLock { link.silenced = true }
                link.queue.asyncAfter(deadline: .now() + .milliseconds(after)) { [weak self] in
                    self?.cut(link)
                }
            }
        }
    }

    private func schedule(
        _ link: Link, _ direction: RelayFrame.Direction, _ text: String, delayMs: Int, inOrder: Bool
    ) {
        let key = direction == .toRelay
        let at = lock.withLock { () -> DispatchTime in
            // Nothing overtakes an earlier in-order frame; a reordered frame may be overtaken.
            var at = DispatchTime.now() + .milliseconds(delayMs)
            if let last = link.lastRelease[key], last > at { at = last }
            if inOrder { link.lastRelease[key] = at }
            link.sequence += 1
            link.outbox.append((at, link.sequence, direction, text))
            return at
        }
        link.queue.asyncAfter(deadline: at) { [weak self] in self?.flush(link) }
    }

    /// Sends every frame that is due, in (time, arrival) order.
    private func flush(_ link: Link) {
        lock.withLock {
            let now = DispatchTime.now()
            let due = link.outbox.filter { $0.at <= now }.sorted { ($0.at, $0.seq) < ($1.at, $1.seq) }
            link.outbox.removeAll { $0.at <= now }
            for (_, _, direction, text) in due { sendLocked(link, direction, text) }
        }
    }

    private func send(_ link: Link, _ direction: RelayFrame.Direction, _ text: String) {
        lock.withLock { sendLocked(link, direction, text) }
    }

    /// Sending only enqueues on the socket's loop, so it is done under the lock to keep order.
    private func sendLocked(_ link: Link, _ direction: RelayFrame.Direction, _ text: String) {
        guard !link.silenced else { return }
        if direction == .toClient {
            link.client.send(text: text)
        } else if let upstream = link.upstream {
            upstream.send(text: text)
        } else {
            link.pendingToRelay.append(text)
        }
    }

    private func cut(_ link: Link) {
        let upstream = lock.withLock { () -> WebSocket? in
            link.silenced = true
            links[link.id] = nil
            return link.upstream
        }
        link.client.close(code: .goingAway)
        upstream?.close(code: .goingAway)
    }
}

/// `eleven-relay` on a free port with limits loose enough for hundreds of runs from loopback.
public enum AdversarialRelayFixture {
    public static func startRelay(in directory: URL) throws -> ChildProcess {
        let port = try TestSupport.freePort()
        return try ChildProcess(
            TestSupport.productPath("eleven-relay"),
            [
                "--listen", "127.0.0.1:\(port)", "--db",
                directory.appendingPathComponent("relay.sqlite").path,
                "--sync", "normal", "--connection-rate", "100000/100000", "--allocation-rate",
                "100000/100000",
                "--claim-rate", "100000/100000", "--max-nameplates-per-address", "100000",
                "--max-connections-per-address", "10000",
            ], port: port)
    }
}
