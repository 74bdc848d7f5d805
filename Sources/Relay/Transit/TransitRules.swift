import Mailbox

/// The transit relay's rules (the Magic Wormhole transit relay protocol, as
/// magic-wormhole-transit-relay 0.4 serves it) as a pure state machine: connections, their
/// handshake line, pairing by token, limits and timeouts in; bytes to send, connections to
/// close and pairs to join out. No sockets and no clock: time comes with every event. Once a
/// pair is joined the glue forwards bytes itself, blind, and reports them with
/// ``forwarded(_:bytes:now:)`` for the bandwidth limit, idle timeout and metrics.
///
/// Protocol: a client's first line is `please relay TOKEN for side SIDE\n` (TOKEN 64 and SIDE
/// 16 word characters; the older `please relay TOKEN\n` has no side). Two connections with the
/// same token and different sides (or either without one) are joined: each gets `ok\n` and
/// from then on everything one sends reaches the other. Further connections waiting on that
/// token are closed (redundant). A line that is not a handshake gets `bad handshake\n`; bytes
/// after the line before the partner came get `impatient\n`; both close. Over WebSocket the
/// first binary message is the handshake (a final newline optional) and `ok\n` comes back as
/// one.
public struct TransitRules: Sendable {
    public struct Config: Sendable, Equatable {
        /// Time from connecting to a complete handshake line.
        public var handshakeTimeout: Double = 30
        /// Time a handshaken connection waits for its partner (the reference: 30 s).
        public var partnerTimeout: Double = 60
        /// A joined pair that moves no byte for this long is closed.
        public var idleTimeout: Double = 600
        /// Connections one source address may have open at once.
        public var maximumConnectionsPerAddress = 32
        /// Connections open at once, all addresses together.
        public var maximumConnections = 10_000
        /// Bytes per second one source address may send through the relay (its bursts
        /// included); over it, its connections are read more slowly.
        public var bandwidthPerAddress = RateLimit(burst: 64 * 1024 * 1024, perSecond: 16 * 1024 * 1024)
        /// Addresses the per-address limits skip.
        public var exemptAddresses: Set<SourceAddress> = []

        public init() {}

        /// No per-address limit (benchmarks against the reference, which has none).
        public static var unlimited: Config {
            var config = Config()
            config.maximumConnectionsPerAddress = .max
            config.maximumConnections = .max
            config.bandwidthPerAddress = .unlimited
            return config
        }
    }

    /// How a connection speaks: raw TCP (a line) or WebSocket (messages).
    public enum Framing: Sendable, Equatable { case tcp, webSocket }

    /// What the glue must do.
    public enum Action: Sendable, Hashable {
        case send(ConnectionID, [UInt8])
        case close(ConnectionID)
        /// Join two connections: from now on the glue forwards between them.
        case join(ConnectionID, ConnectionID)
    }

    /// Why a connection ended before or instead of relaying (metrics labels).
    public enum Refusal: String, Sendable, CaseIterable {
        case badHandshake = "bad_handshake"
        case impatient
        case handshakeTimeout = "handshake_timeout"
        case lonely
        case redundant
        case addressLimit = "address_limit"
        case relayFull = "relay_full"
        case idle
    }

    /// Counters for `/metrics`.
    public struct Metrics: Sendable, Equatable {
        public var connectionsOpened = 0
        public var sessionsJoined = 0
        public var bytesRelayed = 0
        public var refusals: [Refusal: Int] = [:]
    }

    private enum Phase: Sendable {
        case handshake(line: [UInt8])
        case waiting(token: [UInt8], side: [UInt8]?, since: Double)
        case joined(partner: ConnectionID)
    }

    private struct Connection: Sendable {
        let source: SourceAddress
        let framing: Framing
        let opened: Double
        var phase: Phase
        var lastActivity: Double
    }

    public let config: Config
    public private(set) var metrics = Metrics()
    private var connections: [ConnectionID: Connection] = [:]
    private var perAddress: [SourceAddress: Int] = [:]
    /// Handshaken connections waiting for a partner, by token, oldest first.
    private var waiting: [[UInt8]: [ConnectionID]] = [:]
    private var bandwidth: RateLimiter

    /// The longest handshake line (the reference's line limit).
    static let maximumLineBytes = 1024
    static let ok = Array("ok\n".utf8)
    static let bad = Array("bad handshake\n".utf8)
    static let impatient = Array("impatient\n".utf8)

    public init(config: Config) {
        self.config = config
        bandwidth = RateLimiter(limit: config.bandwidthPerAddress)
    }

    /// Connections open now, joined pairs, connections waiting for a partner.
    public var gauges: (connections: Int, pairs: Int, waiting: Int) {
        let joined = connections.values.filter { if case .joined = $0.phase { true } else { false } }.count
        return (connections.count, joined / 2, waiting.values.reduce(0) { $0 + $1.count })
    }

    // MARK: Events

    public mutating func opened(_ id: ConnectionID, source: SourceAddress, framing: Framing, now: Double)
        -> [Action]
    {
        metrics.connectionsOpened += 1
        let exempt = config.exemptAddresses.contains(source)
        if connections.count >= config.maximumConnections {
            return refuse(id, .relayFull, registered: false)
        }
        if !exempt, perAddress[source, default: 0] >= config.maximumConnectionsPerAddress {
            return refuse(id, .addressLimit, registered: false)
        }
        perAddress[source, default: 0] += 1
        connections[id] = Connection(
            source: source, framing: framing, opened: now, phase: .handshake(line: []), lastActivity: now)
        return []
    }

    /// Bytes from a connection that is not joined yet (a TCP chunk, or a whole WebSocket
    /// message). Once joined, the glue forwards instead.
    public mutating func received(_ id: ConnectionID, _ bytes: [UInt8], now: Double) -> [Action] {
        guard let connection = connections[id] else { return [] }
        switch connection.phase {
        case .joined:
            return []
        case .waiting:
            return refuse(id, .impatient, reply: Self.impatient)
        case .handshake(var line):
            switch connection.framing {
            case .webSocket:
                var message = bytes
                if message.last == UInt8(ascii: "\n") { message.removeLast() }
                return handshake(id, line: message, rest: [], now: now)
            case .tcp:
                if let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) {
                    line += bytes[..<newline]
                    guard line.count <= Self.maximumLineBytes else {
                        return refuse(id, .badHandshake, reply: Self.bad)
                    }
                    return handshake(id, line: line, rest: Array(bytes[(newline + 1)...]), now: now)
                }
                line += bytes
                guard line.count <= Self.maximumLineBytes else {
                    return refuse(id, .badHandshake, reply: Self.bad)
                }
                connections[id]?.phase = .handshake(line: line)
                return []
            }
        }
    }

    /// The glue forwarded `bytes` from `id` to its partner. Returns how many seconds to stop
    /// reading `id` when its address is over its bandwidth (nil: go on).
    public mutating func forwarded(_ id: ConnectionID, bytes: Int, now: Double) -> Double? {
        guard let connection = connections[id], case .joined(let partner) = connection.phase else {
            return nil
        }
        metrics.bytesRelayed += bytes
        connections[id]?.lastActivity = now
        connections[partner]?.lastActivity = now
        guard !config.exemptAddresses.contains(connection.source) else { return nil }
        let debt = bandwidth.spend(connection.source, Double(bytes), now: RelayInstant(secondsSince1970: now))
        guard debt > 0, config.bandwidthPerAddress.perSecond > 0 else { return nil }
        return debt / config.bandwidthPerAddress.perSecond
    }

    /// The connection is gone: its partner goes too (the relay has no half-close), a waiting
    /// one is forgotten.
    public mutating func closed(_ id: ConnectionID) -> [Action] {
        guard let connection = connections.removeValue(forKey: id) else { return [] }
        release(connection.source)
        switch connection.phase {
        case .handshake:
            return []
        case .waiting(let token, _, _):
            waiting[token]?.removeAll { $0 == id }
            if waiting[token]?.isEmpty == true { waiting[token] = nil }
            return []
        case .joined(let partner):
            return connections[partner] == nil ? [] : [.close(partner)]
        }
    }

    /// Time passed: handshakes, waits and idle pairs that took too long are closed.
    public mutating func tick(now: Double) -> [Action] {
        var actions: [Action] = []
        for id in Array(connections.keys) {
            // Looked up afresh: closing one side of a pair below closes the other too.
            guard let connection = connections[id] else { continue }
            switch connection.phase {
            case .handshake where now - connection.opened > config.handshakeTimeout:
                actions += refuse(id, .handshakeTimeout)
            case .waiting(_, _, let since) where now - since > config.partnerTimeout:
                actions += refuse(id, .lonely)
            case .joined(let partner) where now - connection.lastActivity > config.idleTimeout:
                // Once per pair: closing one side closes the other.
                guard id < partner else { continue }
                actions += refuse(id, .idle)
            default:
                break
            }
        }
        bandwidth.forgetFullBuckets(now: RelayInstant(secondsSince1970: now))
        return actions
    }

    // MARK: Internals

    private mutating func handshake(_ id: ConnectionID, line: [UInt8], rest: [UInt8], now: Double)
        -> [Action]
    {
        guard let (token, side) = Self.parse(line) else { return refuse(id, .badHandshake, reply: Self.bad) }
        guard rest.isEmpty else { return refuse(id, .impatient, reply: Self.impatient) }
        var candidates = waiting[token] ?? []
        if let index = candidates.firstIndex(where: { other in
            guard case .waiting(_, let otherSide, _) = connections[other]?.phase else { return false }
            return otherSide == nil || side == nil || otherSide != side
        }) {
            let partner = candidates.remove(at: index)
            waiting[token] = nil
            var actions: [Action] = []
            // Anyone else waiting on this token lost the race.
            for other in candidates { actions += refuse(other, .redundant) }
            connections[id]?.phase = .joined(partner: partner)
            connections[partner]?.phase = .joined(partner: id)
            connections[id]?.lastActivity = now
            connections[partner]?.lastActivity = now
            metrics.sessionsJoined += 1
            return actions + [.send(partner, Self.ok), .send(id, Self.ok), .join(partner, id)]
        }
        candidates.append(id)
        waiting[token] = candidates
        connections[id]?.phase = .waiting(token: token, side: side, since: now)
        return []
    }

    /// `please relay TOKEN` or `please relay TOKEN for side SIDE` (TOKEN 64, SIDE 16 word
    /// characters: letters, digits, `_`).
    static func parse(_ line: [UInt8]) -> (token: [UInt8], side: [UInt8]?)? {
        let prefix = Array("please relay ".utf8)
        guard line.starts(with: prefix) else { return nil }
        let rest = line.dropFirst(prefix.count)
        let token = Array(rest.prefix(64))
        guard token.count == 64, token.allSatisfy(isWord) else { return nil }
        let after = rest.dropFirst(64)
        if after.isEmpty { return (token, nil) }
        let forSide = Array(" for side ".utf8)
        guard after.starts(with: forSide) else { return nil }
        let side = Array(after.dropFirst(forSide.count))
        guard side.count == 16, side.allSatisfy(isWord) else { return nil }
        return (token, side)
    }

    private static func isWord(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || byte == 0x5F
    }

    /// Closes a connection for `reason` (with a last line for the client, if any).
    private mutating func refuse(
        _ id: ConnectionID, _ reason: Refusal, reply: [UInt8]? = nil, registered: Bool = true
    ) -> [Action] {
        metrics.refusals[reason, default: 0] += 1
        var actions: [Action] = reply.map { [.send(id, $0)] } ?? []
        actions.append(.close(id))
        guard registered else { return actions }
        return actions + closed(id)
    }

    private mutating func release(_ source: SourceAddress) {
        perAddress[source, default: 1] -= 1
        if perAddress[source] == 0 { perAddress[source] = nil }
    }
}
