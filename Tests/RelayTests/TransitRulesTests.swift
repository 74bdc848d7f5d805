import Testing

@testable import Relay

/// The transit relay's rules, pure: handshakes, pairing by token and side, the refusals the
/// reference sends, timeouts, per-address limits and the bandwidth budget.
@Suite("Transit relay rules")
struct TransitRulesTests {
    static let token = String(repeating: "ab", count: 32)
    static func line(_ token: String = token, side: String? = nil) -> [UInt8] {
        Array(("please relay \(token)" + (side.map { " for side \($0)" } ?? "") + "\n").utf8)
    }
    static let sideA = "aaaaaaaaaaaaaaaa"
    static let sideB = "bbbbbbbbbbbbbbbb"
    static func id(_ n: UInt64) -> ConnectionID { ConnectionID(n) }
    static let ok = Array("ok\n".utf8)

    @Test func twoSidesOfOneTokenAreJoined() {
        var rules = TransitRules(config: .init())
        #expect(rules.opened(Self.id(1), source: "192.0.2.1", framing: .tcp, now: 0).isEmpty)
        #expect(rules.opened(Self.id(2), source: "192.0.2.2", framing: .webSocket, now: 0).isEmpty)
        // The line may arrive in pieces.
        let line = Self.line(side: Self.sideA)
        #expect(rules.received(Self.id(1), Array(line.prefix(10)), now: 1).isEmpty)
        #expect(rules.received(Self.id(1), Array(line.dropFirst(10)), now: 1).isEmpty)
        #expect(rules.gauges.waiting == 1)
        // Over WebSocket the message is the line; its newline is optional.
        let joined = rules.received(Self.id(2), Array(Self.line(side: Self.sideB).dropLast()), now: 2)
        #expect(
            joined == [.send(Self.id(1), Self.ok), .send(Self.id(2), Self.ok), .join(Self.id(1), Self.id(2))])
        #expect(rules.gauges.pairs == 1 && rules.gauges.waiting == 0)
        #expect(rules.forwarded(Self.id(1), bytes: 1000, now: 3) == nil)
        #expect(rules.metrics.bytesRelayed == 1000 && rules.metrics.sessionsJoined == 1)
        // One side gone: the other is closed (no half-close).
        #expect(rules.closed(Self.id(2)) == [.close(Self.id(1))])
        #expect(rules.closed(Self.id(1)).isEmpty)
        #expect(rules.gauges.connections == 0)
    }

    @Test func theSameSideWaitsAndLegacyHandshakesMatchAnything() {
        var rules = TransitRules(config: .init())
        for n in UInt64(1)...4 { _ = rules.opened(Self.id(n), source: "192.0.2.1", framing: .tcp, now: 0) }
        #expect(rules.received(Self.id(1), Self.line(side: Self.sideA), now: 0).isEmpty)
        // Another connection of the same side is not its partner.
        #expect(rules.received(Self.id(2), Self.line(side: Self.sideA), now: 0).isEmpty)
        // A legacy handshake (no side) matches the first waiting; the other one is redundant.
        let joined = rules.received(Self.id(3), Self.line(), now: 0)
        #expect(joined.contains(.join(Self.id(1), Self.id(3))))
        #expect(joined.contains(.close(Self.id(2))))
        #expect(rules.metrics.refusals[.redundant] == 1)
        // A different token does not match.
        #expect(rules.received(Self.id(4), Self.line(String(repeating: "cd", count: 32)), now: 0).isEmpty)
    }

    @Test func badHandshakesAndImpatienceGetTheReferencesAnswers() {
        var rules = TransitRules(config: .init())
        let cases: [[UInt8]] = [
            Array("GET / HTTP/1.1\n".utf8),
            Array("please relay short\n".utf8),
            Array("please relay \(Self.token) for side tooshort\n".utf8),
            Array("please relay \(String(repeating: "!", count: 64))\n".utf8),
            [UInt8](repeating: 0x61, count: 2000),
        ]
        for (n, bytes) in cases.enumerated() {
            let id = Self.id(UInt64(n + 1))
            _ = rules.opened(id, source: "192.0.2.1", framing: .tcp, now: 0)
            #expect(
                rules.received(id, bytes, now: 0) == [.send(id, Array("bad handshake\n".utf8)), .close(id)])
        }
        // Bytes after the line before the partner came: impatient (in the same chunk or later).
        _ = rules.opened(Self.id(10), source: "192.0.2.1", framing: .tcp, now: 0)
        #expect(
            rules.received(Self.id(10), Self.line(side: Self.sideA) + [1, 2], now: 0) == [
                .send(Self.id(10), Array("impatient\n".utf8)), .close(Self.id(10)),
            ])
        _ = rules.opened(Self.id(11), source: "192.0.2.1", framing: .tcp, now: 0)
        _ = rules.received(Self.id(11), Self.line(side: Self.sideA), now: 0)
        #expect(rules.received(Self.id(11), [1], now: 0).last == .close(Self.id(11)))
        #expect(rules.gauges.connections == 0)
        #expect(rules.metrics.refusals == [.badHandshake: 5, .impatient: 2])
    }

    @Test func silentWaitingAndIdleConnectionsTimeOut() {
        var config = TransitRules.Config()
        config.handshakeTimeout = 10
        config.partnerTimeout = 20
        config.idleTimeout = 30
        var rules = TransitRules(config: config)
        for n in UInt64(1)...4 { _ = rules.opened(Self.id(n), source: "192.0.2.1", framing: .tcp, now: 0) }
        _ = rules.received(Self.id(2), Self.line(side: Self.sideA), now: 0)
        _ = rules.received(
            Self.id(3), Self.line(String(repeating: "cd", count: 32), side: Self.sideA), now: 0)
        _ = rules.received(
            Self.id(4), Self.line(String(repeating: "cd", count: 32), side: Self.sideB), now: 0)
        #expect(rules.tick(now: 5).isEmpty)
        // The one that never finished its line.
        #expect(rules.tick(now: 11) == [.close(Self.id(1))])
        // The one whose partner never came.
        #expect(rules.tick(now: 21) == [.close(Self.id(2))])
        // The pair that moved bytes at 25 lives until 55.
        _ = rules.forwarded(Self.id(3), bytes: 1, now: 25)
        #expect(rules.tick(now: 50).isEmpty)
        #expect(Set(rules.tick(now: 56)) == [.close(Self.id(3)), .close(Self.id(4))])
        #expect(rules.metrics.refusals == [.handshakeTimeout: 1, .lonely: 1, .idle: 1])
        // The glue closes the partner, which it then reports.
        #expect(rules.gauges.connections == 1)
        #expect(rules.closed(Self.id(4)).isEmpty)
        #expect(rules.gauges.connections == 0)
    }

    @Test func perAddressConnectionsAndBandwidthAreLimitedExceptForExemptAddresses() {
        var config = TransitRules.Config()
        config.maximumConnectionsPerAddress = 2
        config.bandwidthPerAddress = RateLimit(burst: 1000, perSecond: 100)
        config.exemptAddresses = ["198.51.100.9"]
        var rules = TransitRules(config: config)
        #expect(rules.opened(Self.id(1), source: "192.0.2.1", framing: .tcp, now: 0).isEmpty)
        #expect(rules.opened(Self.id(2), source: "192.0.2.1", framing: .tcp, now: 0).isEmpty)
        #expect(rules.opened(Self.id(3), source: "192.0.2.1", framing: .tcp, now: 0) == [.close(Self.id(3))])
        for n in UInt64(4)...6 {
            #expect(rules.opened(Self.id(n), source: "198.51.100.9", framing: .tcp, now: 0).isEmpty)
        }
        _ = rules.received(Self.id(1), Self.line(side: Self.sideA), now: 0)
        _ = rules.received(Self.id(2), Self.line(side: Self.sideB), now: 0)
        // The burst passes; beyond it, the sender waits its debt off (300 bytes at 100/s).
        #expect(rules.forwarded(Self.id(1), bytes: 1000, now: 0) == nil)
        #expect(rules.forwarded(Self.id(2), bytes: 300, now: 0) == 3)
        // A closed connection frees its place.
        _ = rules.closed(Self.id(2))
        #expect(rules.opened(Self.id(7), source: "192.0.2.1", framing: .tcp, now: 0).isEmpty)
        #expect(rules.metrics.refusals == [.addressLimit: 1])
        // Exempt connections are never slowed.
        _ = rules.received(Self.id(4), Self.line(side: Self.sideA), now: 0)
        _ = rules.received(Self.id(5), Self.line(side: Self.sideB), now: 0)
        #expect(rules.forwarded(Self.id(4), bytes: 1_000_000, now: 0) == nil)
    }
}
