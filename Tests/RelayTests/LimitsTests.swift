import Mailbox
import Testing

@testable import Relay

@Suite("Abuse limits")
struct LimitsTests {
    private func config(_ change: (inout RelayLimits) -> Void) -> RelayConfig {
        var limits = RelayLimits()
        change(&limits)
        return RelayConfig(limits: limits)
    }

    @Test("an over-size message is refused before parsing")
    func messageSize() {
        var h = CoreHarness(config: config { $0.maximumMessageBytes = 100 })
        h.bound(1, side: "aaaa")
        h.send(1, ["type": "open", "mailbox": "m"])
        let big = String(repeating: "ab", count: 60)
        let replies = h.send(1, ["type": "add", "phase": "0", "body": .string(big)])
        #expect(replies.count == 1)
        #expect(replies.first?.errorCode == .messageTooLarge)
        #expect(h.core.state.mailboxes.first?.value.messages.isEmpty == true)
        #expect(h.send(1, ["type": "add", "phase": "0", "body": "00"]).last?.stored != nil)
    }

    /// An address that keeps sending oversized messages is counted toward its connection
    /// allowance: three of them (ten tokens each) spend a burst of 30, and its next connection
    /// is refused at the welcome; the same messages from an exempt address cost nothing, and
    /// one dropped unread by the glue (`.oversized`) counts as one arriving whole.
    @Test("repeat senders of oversized messages lose their connection allowance")
    func oversizedMessagesCostConnections() {
        var h = CoreHarness(
            config: config {
                $0.maximumMessageBytes = 100
                $0.connectionRate = RateLimit(burst: 30, perSecond: 0.01)
                $0.exemptAddresses = ["198.51.100.9"]
            })
        let big = String(repeating: "x", count: 200)
        for c in UInt64(1)...2 {
            h.bound(c, side: "s\(c)", host: "198.51.100.1")
            #expect(h.send(c, big).first?.errorCode == .messageTooLarge)
        }
        let dropped = h.handle(.oversized(5_000_000, from: ConnectionID(2)))
        #expect(CoreHarness.messages(dropped, to: 2).first?.errorCode == .messageTooLarge)
        #expect(h.core.metrics.errors[.messageTooLarge] == 3)
        let refused = h.connect(3, host: "198.51.100.1")
        #expect(refused == [.welcome(Welcome(error: RelayError.connectionRateLimited.message))])
        #expect(h.closes(3))
        // Still refused a while later: the penalty is a debt, not just an empty bucket.
        h.now += 60
        #expect(h.connect(4, host: "198.51.100.1").count == 1 && h.closes(4))
        for c in UInt64(10)...15 {
            h.bound(c, side: "e\(c)", host: "198.51.100.9")
            #expect(h.send(c, big).first?.errorCode == .messageTooLarge)
        }
        #expect(!h.connect(20, host: "198.51.100.9").isEmpty && !h.closes(20))
        #expect(h.connect(21, host: "198.51.100.2").count == 1 && !h.closes(21))
    }

    @Test("a mailbox holds a bounded number of messages and bytes")
    func mailboxQuota() {
        var h = CoreHarness(
            config: config {
                $0.maximumMailboxMessages = 3
                $0.maximumMailboxBytes = 10
            })
        h.bound(1, side: "aaaa")
        h.send(1, ["type": "open", "mailbox": "m"])
        #expect(h.send(1, ["type": "add", "phase": "0", "body": "0000"]).last?.stored != nil)
        #expect(h.send(1, ["type": "add", "phase": "1", "body": "000000"]).last?.stored != nil)
        #expect(h.send(1, ["type": "add", "phase": "2", "body": "00"]).last?.errorCode == .mailboxByteLimit)
        #expect(h.send(1, ["type": "add", "phase": "2", "body": ""]).last?.stored != nil)
        #expect(h.send(1, ["type": "add", "phase": "3", "body": ""]).last?.errorCode == .mailboxMessageLimit)
        #expect(h.core.state.mailboxes.first?.value.messages.count == 3)
        #expect(h.core.metrics.errors == [.mailboxByteLimit: 1, .mailboxMessageLimit: 1])
    }

    @Test("all mailboxes together hold a bounded number of bytes")
    func storedBytes() {
        var h = CoreHarness(config: config { $0.maximumStoredBytes = 10 })
        for c in UInt64(1)...3 {
            h.bound(c, side: "s\(c)", host: "192.0.2.\(c)")
            h.send(c, ["type": "open", "mailbox": .string("m\(c)")])
        }
        #expect(h.send(1, ["type": "add", "phase": "0", "body": "000000"]).last?.stored != nil)
        #expect(h.send(2, ["type": "add", "phase": "0", "body": "0000"]).last?.stored != nil)
        #expect(h.send(3, ["type": "add", "phase": "0", "body": "00"]).last?.errorCode == .storageFull)
        #expect(h.core.storedBodyBytes == 10)
        // Closing a mailbox frees its bytes.
        h.send(1, ["type": "close"])
        #expect(h.core.storedBodyBytes == 4)
        #expect(h.send(3, ["type": "add", "phase": "0", "body": "00"]).last?.stored != nil)
        // A restarted core counts what it loaded.
        #expect(CoreHarness(snapshot: h.core.state).core.storedBodyBytes == 6)
    }

    @Test("IPv6 clients are limited per /64, IPv4 per address")
    func sourceKeys() {
        let a = ClientAddress(family: .ipv6, host: "2001:db8:1:2::1", port: 1)
        let b = ClientAddress(family: .ipv6, host: "2001:db8:1:2:ffff:0:0:9", port: 2)
        let c = ClientAddress(family: .ipv6, host: "2001:db8:1:3::1", port: 1)
        #expect(a.source == b.source)
        #expect(a.source != c.source)
        #expect(a.source.rawValue == "2001:db8:1:2::/64")
        #expect(ClientAddress(family: .ipv4, host: "192.0.2.7", port: 9).source == "192.0.2.7")
        #expect(ClientAddress(family: .ipv6, host: "not an address", port: 1).source == "not an address")
    }

    @Test("one address may hold only so many open nameplates")
    func nameplatesPerAddress() {
        var h = CoreHarness(config: config { $0.maximumNameplatesPerAddress = 2 })
        h.bound(1, side: "a1", host: "198.51.100.7")
        h.bound(2, side: "a2", host: "198.51.100.7")
        h.bound(3, side: "a3", host: "198.51.100.7")
        #expect(
            h.send(1, #"{"type":"allocate"}"#).last.map { if case .allocated = $0 { true } else { false } }
                == true)
        h.claim(2, "555")
        #expect(h.send(3, ["type": "claim", "nameplate": "556"]).last?.errorCode == .nameplateLimit)
        // Joining an existing nameplate is not creating one.
        h.bound(4, side: "a4", host: "198.51.100.7")
        h.claim(4, "555")
        // Another address is unaffected.
        h.bound(5, side: "b1", host: "203.0.113.9")
        h.claim(5, "556")
        // Releasing frees the quota.
        h.send(2, #"{"type":"release"}"#)
        h.send(4, #"{"type":"release"}"#)
        h.bound(6, side: "a6", host: "198.51.100.7")
        h.claim(6, "557")
    }

    @Test("connections per address are rate limited with a token bucket")
    func connectionRate() {
        var h = CoreHarness(config: config { $0.connectionRate = RateLimit(burst: 3, perSecond: 0.5) })
        for c in UInt64(1)...3 {
            #expect(
                h.connect(c, host: "198.51.100.1") == [
                    .welcome(
                        Welcome(yourAddress: ClientAddress(family: .ipv4, host: "198.51.100.1", port: 40000)))
                ])
        }
        let refused = h.connect(4, host: "198.51.100.1")
        #expect(refused == [.welcome(Welcome(error: RelayError.connectionRateLimited.message))])
        #expect(h.closes(4))
        #expect(h.send(4, #"{"type":"ping","ping":1}"#).isEmpty, "a refused connection is not served")
        #expect(
            h.connect(5, host: "198.51.100.2").first.map {
                if case .welcome(let w) = $0 { w.error == nil } else { false }
            } == true)
        h.now += 2  // one token back
        #expect(!h.connect(6, host: "198.51.100.1").isEmpty)
        #expect(!h.closes(6))
        #expect(h.connect(7, host: "198.51.100.1").count == 1)
        #expect(h.closes(7))
        #expect(h.core.metrics.errors[.connectionRateLimited] == 2)
        #expect(h.core.metrics.connectionsRejected == 2)
    }

    @Test("allocations and claims per address are rate limited")
    func commandRates() {
        var h = CoreHarness(
            config: config {
                $0.allocationRate = RateLimit(burst: 2, perSecond: 1)
                $0.claimRate = RateLimit(burst: 2, perSecond: 1)
            })
        for c in UInt64(1)...3 { h.bound(c, side: "s\(c)") }
        #expect(h.send(1, #"{"type":"allocate"}"#).last?.errorCode == nil)
        #expect(h.send(2, #"{"type":"allocate"}"#).last?.errorCode == nil)
        #expect(h.send(3, #"{"type":"allocate"}"#).last?.errorCode == .allocationRateLimited)
        h.now += 1
        #expect(
            h.send(3, #"{"type":"allocate"}"#).last?.errorCode == nil, "a refused allocate may be retried")

        for c in UInt64(11)...13 { h.bound(c, side: "t\(c)") }
        h.claim(11, "701")
        h.claim(12, "702")
        #expect(h.send(13, ["type": "claim", "nameplate": "703"]).last?.errorCode == .claimRateLimited)
        h.now += 1
        h.claim(13, "703")
    }

    @Test("exempt addresses skip the per-address limits")
    func exempt() {
        var h = CoreHarness(
            config: config {
                $0.connectionRate = RateLimit(burst: 1, perSecond: 0)
                $0.maximumNameplatesPerAddress = 0
                $0.exemptAddresses = ["127.0.0.1"]
            })
        for c in UInt64(1)...5 {
            h.bound(c, side: "s\(c)", host: "127.0.0.1")
            h.claim(c, "\(c)")
        }
    }

    @Test("the total number of connections is bounded")
    func totalConnections() {
        var h = CoreHarness(config: config { $0.maximumConnections = 2 })
        h.connect(1, host: "192.0.2.1")
        h.connect(2, host: "192.0.2.2")
        #expect(
            h.connect(3, host: "192.0.2.3") == [
                .welcome(Welcome(error: RelayError.tooManyConnections.message))
            ])
        #expect(h.closes(3))
        h.disconnect(1)
        h.connect(4, host: "192.0.2.4")
        #expect(!h.closes(4))
    }

    @Test("a connection that keeps sending garbage is closed")
    func errorBudget() {
        var h = CoreHarness(config: config { $0.maximumErrorsPerConnection = 3 })
        h.connect(1)
        h.send(1, "x")
        h.send(1, "y")
        #expect(!h.closes(1))
        let last = h.send(1, "z")
        #expect(last.map(\.errorCode) == [.notJSON, .tooManyErrors])
        #expect(h.closes(1))
        #expect(h.send(1, #"{"type":"ping","ping":1}"#).isEmpty)
        // Other connections are unaffected.
        h.connect(2)
        #expect(h.send(2, #"{"type":"ping","ping":1}"#).count == 2)
    }

    @Test("idle limiter state is forgotten")
    func limiterMemory() {
        var h = CoreHarness(config: config { $0.connectionRate = RateLimit(burst: 2, perSecond: 1) })
        for c in UInt64(1)...50 { h.connect(c, host: "10.0.0.\(c)") }
        #expect(h.core.connectionLimiter.trackedAddresses == 50)
        _ = h.tick(after: 10)
        #expect(h.core.connectionLimiter.trackedAddresses == 0)
    }
}

@Suite("Expiry")
struct ExpiryTests {
    @Test("idle times per AppID prefix: 72 hours for Eleven, 11 minutes for others")
    func policy() {
        let policy = ExpiryPolicy()
        #expect(policy.idleSeconds(for: "elevenmessenger.com/join") == 72 * 3600)
        #expect(policy.idleSeconds(for: "lothar.com/wormhole/text-or-file-xfer") == 660)
        #expect(policy.idleSeconds(for: "elevenmessenger.co") == 660)
        let custom = ExpiryPolicy(
            rules: [.init(appIDPrefix: "a/", idleSeconds: 10), .init(appIDPrefix: "a/b/", idleSeconds: 20)],
            defaultIdleSeconds: 5)
        #expect(custom.idleSeconds(for: "a/b/c") == 20, "the longest prefix wins")
        #expect(custom.idleSeconds(for: "a/x") == 10)
        #expect(custom.idleSeconds(for: "z") == 5)
    }

    @Test("an unsubscribed mailbox expires after its idle time, with its nameplate")
    func expiry() {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        let mailbox = h.claim(1, "9")
        h.bound(2, side: "bbbb", app: "elevenmessenger.com/join")
        h.claim(2, "9")
        h.disconnect(1)
        h.disconnect(2)
        #expect(h.tick(after: 600).writes.isEmpty)
        let out = h.tick(after: 61)
        #expect(out.writes.contains(.deleteMailbox(MailboxKey(app: AppID(testApp), id: mailbox))))
        #expect(
            out.writes.contains(
                .deleteNameplate(NameplateKey(app: AppID(testApp), name: Nameplate(number: 9)))))
        #expect(h.core.state.nameplates.count == 1, "only the Eleven nameplate is left")
        #expect(h.core.state.mailboxes.count == 1)
        #expect(h.core.metrics.mailboxResults == ["pruney": 1])
        #expect(h.core.metrics.nameplateResults == ["pruney": 1])
        #expect(h.tick(after: 71 * 3600).writes.isEmpty, "Eleven mailboxes wait 72 hours")
        #expect(!h.tick(after: 3600).writes.isEmpty)
        #expect(h.core.state == .empty)
    }

    @Test("a subscribed mailbox never expires; the clock starts when the last listener leaves")
    func subscribed() {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        h.send(1, ["type": "open", "mailbox": "m"])
        #expect(h.tick(after: 5000).writes.isEmpty)
        h.disconnect(1)
        #expect(h.tick(after: 600).writes.isEmpty)
        #expect(!h.tick(after: 61).writes.isEmpty)
        #expect(h.core.state == .empty)
    }

    @Test("activity (add) resets the idle clock")
    func activity() {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        h.send(1, ["type": "open", "mailbox": "m"])
        h.disconnect(1)
        h.now += 600
        h.bound(2, side: "aaaa")
        h.send(2, ["type": "open", "mailbox": "m"])
        h.send(2, ["type": "add", "phase": "0", "body": "00"])
        h.disconnect(2)
        #expect(h.tick(after: 600).writes.isEmpty)
        #expect(!h.tick(after: 61).writes.isEmpty)
    }

    @Test("after a restart, stored mailboxes get a fresh idle period")
    func restartGrace() {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        h.claim(1, "4")
        h.disconnect(1)
        let stored = h.core.state
        var restarted = CoreHarness(snapshot: stored, now: startTime + 10_000)
        #expect(restarted.tick(after: 600).writes.isEmpty, "old `updated` does not expire it at once")
        #expect(!restarted.tick(after: 61).writes.isEmpty)
    }
}

@Suite("Configuration")
struct ConfigTests {
    @Test("the defaults and the unlimited preset are valid")
    func defaults() {
        #expect(RelayConfig().problems.isEmpty)
        #expect(RelayConfig(limits: .unlimited).problems.isEmpty)
        #expect(RelayConfig().allowList == false)
        #expect(RelayConfig().permission == .none)
        #expect(RelayConfig().expiry.idleSeconds(for: "elevenmessenger.com/x") == 259_200)
    }

    @Test("nonsense is reported, one problem each")
    func problems() {
        var config = RelayConfig(permission: .hashcash(bits: 0, resource: "a:b"))
        config.limits.maximumMessageBytes = 0
        config.limits.claimRate = RateLimit(burst: 0, perSecond: 1)
        config.expiry.defaultIdleSeconds = -1
        config.expiry.rules.append(.init(appIDPrefix: "", idleSeconds: 5))
        #expect(config.problems.count == 6, "\(config.problems)")
    }
}
