import Mailbox
import Testing

@testable import Relay

@Suite("Mailbox rules")
struct RulesTests {
    @Test("the welcome is sent on connect, before any bind")
    func welcome() {
        var h = CoreHarness(config: RelayConfig(welcome: WelcomeConfig(motd: "hello from test")))
        let sent = h.connect(1, host: "127.0.0.1", port: 40802)
        #expect(
            sent == [
                .welcome(
                    Welcome(
                        motd: "hello from test",
                        yourAddress: ClientAddress(family: .ipv4, host: "127.0.0.1", port: 40802)))
            ])
        var quiet = CoreHarness(config: RelayConfig(welcome: WelcomeConfig(includeYourAddress: false)))
        #expect(quiet.connect(1) == [.welcome(Welcome())])
    }

    @Test("the observed two-client exchange (§11), frame by frame")
    func observedExchange() throws {
        var h = CoreHarness()
        let a: UInt64 = 1
        let b: UInt64 = 2
        h.connect(a)
        #expect(
            h.send(
                a,
                #"{"appid":"example.com/test-app","side":"82c9d4bf7a","client_version":["python","0.24.0"],"id":"8cc4","type":"bind"}"#
            )
                == [.ack(id: "8cc4")])
        let allocated = h.send(a, #"{"id":"35f8","type":"allocate"}"#)
        #expect(allocated.count == 2)
        #expect(allocated.first == .ack(id: "35f8"))
        guard case .allocated(let nameplate) = allocated.last else {
            Issue.record("no allocation: \(allocated)")
            return
        }
        #expect((1...9).contains(Int(nameplate.value) ?? 0), "first allocation is one digit")
        let claimedA = h.send(a, ["type": "claim", "nameplate": .string(nameplate.value), "id": "7165"])
        guard claimedA.count == 2, case .claimed(let mailbox) = claimedA[1] else {
            Issue.record("claim failed: \(claimedA)")
            return
        }
        #expect(claimedA[0] == .ack(id: "7165"))
        #expect(mailbox.value.count == 13)
        #expect(mailbox.value.allSatisfy { "abcdefghijklmnopqrstuvwxyz234567".contains($0) })
        #expect(
            h.send(a, ["type": "open", "mailbox": .string(mailbox.value), "id": "6762"]) == [
                .ack(id: "6762")
            ])
        h.now += 1
        let echo = h.send(
            a, #"{"phase":"pake","body":"7b2270616b655f7631223a2022353361227d","id":"7f82","type":"add"}"#)
        let pakeA = StoredMessage(
            side: "82c9d4bf7a", phase: "pake", body: "7b2270616b655f7631223a2022353361227d",
            serverRX: h.instant,
            messageID: "7f82")
        #expect(echo == [.ack(id: "7f82"), .message(pakeA)], "the sender hears its own message")

        // B joins: claims the same nameplate, gets the same mailbox, and the replay.
        h.connect(b)
        h.send(b, ["type": "bind", "appid": "example.com/test-app", "side": "5d489821d6"])
        #expect(h.claim(b, nameplate.value) == mailbox)
        #expect(
            h.send(b, ["type": "open", "mailbox": .string(mailbox.value)]) == [
                .ack(id: .null), .message(pakeA),
            ])
        h.now += 1
        h.send(b, ["type": "add", "phase": "pake", "body": "bbbb"])
        let pakeB = StoredMessage(
            side: "5d489821d6", phase: "pake", body: "bbbb", serverRX: h.instant, messageID: .null)
        #expect(h.sent(to: a) == [.message(pakeB)], "live delivery to the other side")
        #expect(h.sent(to: b) == [.ack(id: .null), .message(pakeB)])

        // Both release: the nameplate goes away, the mailbox stays.
        #expect(
            h.send(b, ["type": "release", "nameplate": .string(nameplate.value)]) == [
                .ack(id: .null), .released,
            ])
        #expect(h.core.state.nameplates.count == 1)
        #expect(h.send(a, ["type": "release"]) == [.ack(id: .null), .released])
        #expect(h.core.state.nameplates.isEmpty)
        #expect(h.core.metrics.nameplateResults == ["happy": 1])
        #expect(h.core.state.mailboxes.count == 1)

        // Both close happy: the first close keeps the mailbox, the second deletes it.
        #expect(
            h.send(a, ["type": "close", "mailbox": .string(mailbox.value), "mood": "happy"]) == [
                .ack(id: .null), .closed,
            ])
        #expect(h.core.state.mailboxes.count == 1)
        h.send(b, ["type": "add", "phase": "0", "body": "cc"])
        #expect(h.sent(to: a).isEmpty, "a closed connection is unsubscribed")
        #expect(h.send(b, ["type": "close", "mood": "happy"]) == [.ack(id: .null), .closed])
        #expect(h.core.state.mailboxes.isEmpty)
        #expect(h.core.metrics.mailboxResults == ["happy": 1])
        #expect(h.core.metrics.closeMoods == ["happy": 2])
    }

    @Test("outputs say which event's writes their frames depend on")
    func dependsOn() {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        #expect(h.last.dependsOn == 0, "bind changes nothing durable")
        h.send(1, #"{"type":"allocate"}"#)
        let allocation = h.last.event
        #expect(h.last.dependsOn == allocation)
        guard case .allocated(let name) = h.sent(to: 1).last else {
            Issue.record("no allocation")
            return
        }
        let mailbox = h.claim(1, name.value)
        #expect(h.last.dependsOn == allocation, "re-claiming only reveals the allocation")
        h.send(1, ["type": "open", "mailbox": .string(mailbox.value)])
        #expect(h.last.dependsOn == allocation, "opening a mailbox the side already has only touches it")
        h.send(1, ["type": "add", "phase": "0", "body": "00"])
        let add = h.last.event
        #expect(h.last.dependsOn == add)
        h.bound(2, side: "bbbb")
        h.claim(2, name.value)
        #expect(h.last.dependsOn == h.last.event, "a new side row is durable")
        h.send(2, #"{"type":"ping","ping":1}"#)
        #expect(h.last.dependsOn == 0)
        h.bound(3, side: "bbbb")
        h.send(3, ["type": "open", "mailbox": .string(mailbox.value)])
        #expect(h.last.dependsOn > add, "the replay reveals the messages and the side rows")
    }

    @Test("ping works before bind and echoes any JSON value")
    func ping() {
        var h = CoreHarness()
        h.connect(1)
        #expect(
            h.send(1, #"{"type":"ping","ping":5,"id":"x"}"#) == [
                .ack(id: "x"), .pong(.number(JSONNumber(5))),
            ])
        #expect(
            h.send(1, #"{"type":"ping","ping":{"a":[1.50,"b"]}}"#)
                == [.ack(id: .null), .pong(try! JSONParser.parse(#"{"a":[1.50,"b"]}"#))])
        let missing = h.send(1, #"{"type":"ping"}"#)
        #expect(missing.map(\.errorText) == [nil, "ping requires 'ping'"])
    }

    @Test(
        "every command but ping and bind needs a bind first",
        arguments: [
            "list", "allocate", "claim", "release", "open", "add", "close", "frobnicate", "submit-permission",
        ])
    func mustBindFirst(_ type: String) {
        var h = CoreHarness()
        h.connect(1)
        let replies = h.send(1, #"{"type":"\#(type)","nameplate":"1","mailbox":"m","phase":"p","body":"b"}"#)
        #expect(replies.count == 2)
        #expect(replies.first == .ack(id: .null))
        #expect(replies.last?.errorText == "must bind first")
        #expect(h.core.state == .empty)
    }

    @Test("errors echo the offending command as orig")
    func origEcho() throws {
        var h = CoreHarness()
        h.connect(1)
        let text = #"{"type":"list","id":"ab12","extra":[1,2.0,{"k":null}]}"#
        let replies = h.send(1, text)
        #expect(replies == [.ack(id: "ab12"), .error(.mustBindFirst, orig: try JSONParser.parse(text))])
    }

    /// (commands on one bound connection, the error text the last one must get)
    static let orderCases: [([String], String)] = [
        ([#"{"type":"bind","appid":"x","side":"y"}"#], "already bound"),
        ([#"{"type":"allocate"}"#, #"{"type":"allocate"}"#], "you already allocated one, don't be greedy"),
        (
            [#"{"type":"claim","nameplate":"5"}"#, #"{"type":"claim","nameplate":"5"}"#],
            "only one claim per connection"
        ),
        ([#"{"type":"claim","nameplate":"5"}"#, #"{"type":"claim"}"#], "claim requires 'nameplate'"),
        (
            [#"{"type":"claim","nameplate":"5"}"#, #"{"type":"claim","nameplate":"6"}"#],
            "only one claim per connection"
        ),
        (
            [#"{"type":"release","nameplate":"5"}"#, #"{"type":"release","nameplate":"5"}"#],
            "only one release per connection"
        ),
        (
            [#"{"type":"claim","nameplate":"5"}"#, #"{"type":"release","nameplate":"6"}"#],
            "release and claim must use same nameplate"
        ),
        ([#"{"type":"release"}"#], "release without nameplate must follow claim"),
        ([#"{"type":"allocate"}"#, #"{"type":"release"}"#], "release without nameplate must follow claim"),
        (
            [#"{"type":"open","mailbox":"m1"}"#, #"{"type":"open","mailbox":"m1"}"#],
            "only one open per connection"
        ),
        ([#"{"type":"open"}"#], "open requires 'mailbox'"),
        ([#"{"type":"add","phase":"0","body":"00"}"#], "must open mailbox before adding"),
        ([#"{"type":"open","mailbox":"m1"}"#, #"{"type":"add","body":"00"}"#], "missing 'phase'"),
        ([#"{"type":"open","mailbox":"m1"}"#, #"{"type":"add","phase":"0"}"#], "missing 'body'"),
        (
            [#"{"type":"close","mailbox":"m1"}"#, #"{"type":"close","mailbox":"m1"}"#],
            "only one close per connection"
        ),
        (
            [#"{"type":"open","mailbox":"m1"}"#, #"{"type":"close","mailbox":"m2"}"#],
            "open and close must use same mailbox"
        ),
        ([#"{"type":"close"}"#], "close without mailbox must follow open"),
        ([#"{"type":"close","mood":"happy"}"#], "close without mailbox must follow open"),
        ([#"{"type":"frobnicate"}"#], "unknown type"),
        ([#"{"type":null}"#], "unknown type"),
        ([#"{"type":"submit-permissions","method":"hashcash"}"#], "unknown type"),
        ([#"{"type":"claim","nameplate":"abc"}"#], RelayError.invalidNameplate.message),
        ([#"{"type":"claim","nameplate":""}"#], RelayError.invalidNameplate.message),
        ([#"{"type":"claim","nameplate":"12a"}"#], RelayError.invalidNameplate.message),
        ([#"{"type":"claim","nameplate":"٣"}"#], RelayError.invalidNameplate.message),
        (
            [#"{"type":"claim","nameplate":"\#(String(repeating: "1", count: 41))"}"#],
            RelayError.invalidNameplate.message
        ),
        (
            [#"{"type":"claim","nameplate":"abc"}"#, #"{"type":"claim","nameplate":"5"}"#],
            "only one claim per connection"
        ),
        ([#"{"type":"claim","nameplate":7}"#], "'nameplate' must be a string, not a number"),
        (
            [#"{"type":"claim","nameplate":7}"#, #"{"type":"claim","nameplate":"5"}"#],
            "only one claim per connection"
        ),
        ([#"{"type":"bind","appid":"a"}"#], "already bound"),
        ([#"{"type":"open","mailbox":null}"#], "'mailbox' must be a string, not null"),
        (
            [#"{"type":"open","mailbox":"m1"}"#, #"{"type":"add","phase":"0","body":{}}"#],
            "'body' must be a string, not an object"
        ),
        ([#"{"type":"release","nameplate":5}"#], "'nameplate' must be a string, not a number"),
        (
            [#"{"type":"open","mailbox":"m1"}"#, #"{"type":"close","mood":["happy"]}"#],
            "'mood' must be a string, not an array"
        ),
        (
            [#"{"type":"list","id":"a"}"#, #"{"type":"list","id":"b"}"#, #"{"type":"ping"}"#],
            "ping requires 'ping'"
        ),
    ]

    @Test("commands in the wrong order get the deployed server's errors", arguments: orderCases)
    func wrongOrder(_ commands: [String], _ expected: String) {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        var last: [ServerMessage] = []
        for command in commands { last = h.send(1, command) }
        #expect(last.first == .ack(id: .null), "typed commands are acknowledged first")
        #expect(last.last?.errorText == expected)
    }

    @Test("bad payloads get an error without ack and the connection keeps working")
    func badPayloads() {
        var h = CoreHarness()
        h.connect(1)
        for payload in [
            "", "garbage", "[]", "\"bind\"", "42", "{\"type\":\"bind\"", #"{"appid":"x","side":"y"}"#,
        ] {
            let replies = h.send(1, payload)
            #expect(replies.count == 1, "\(payload)")
            #expect(replies.first?.errorCode != nil)
            #expect(!h.closes(1))
        }
        let binary = h.handle(.received([0xFF, 0x00, 0x81, 0x7B], from: ConnectionID(1)))
        #expect(CoreHarness.messages(binary, to: 1).first?.errorCode == .notJSON)
        // Still serving.
        #expect(h.send(1, #"{"type":"ping","ping":1}"#) == [.ack(id: .null), .pong(.number(JSONNumber(1)))])
        #expect(h.core.metrics.errors[.notJSON] == 4)
    }

    @Test("mutated commands never crash the core or split its state from its writes")
    func mutationFuzz() {
        var h = CoreHarness(config: RelayConfig(limits: .unlimited))
        var random = SeededRandom(seed: 5)
        let seeds = [
            #"{"type":"bind","appid":"a/b","side":"s1"}"#, #"{"type":"claim","nameplate":"4"}"#,
            #"{"type":"open","mailbox":"m"}"#, #"{"type":"add","phase":"0","body":"00","id":"x"}"#,
            #"{"type":"release"}"#, #"{"type":"close","mood":"happy"}"#, #"{"type":"allocate"}"#,
        ]
        for c in UInt64(1)...4 { h.connect(c) }
        for _ in 0..<400 {
            var bytes = Array(seeds.randomElement(using: &random)!.utf8)
            for _ in 0..<Int.random(in: 0...3, using: &random) where !bytes.isEmpty {
                let i = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[i] = UInt8.random(in: 0...255, using: &random)
                case 1: bytes.remove(at: i)
                default: bytes.insert(bytes[i], at: i)
                }
            }
            let c = UInt64.random(in: 1...4, using: &random)
            let out = h.handle(.received(bytes, from: ConnectionID(c)))
            // Every frame is answered: an ack, an error, or both.
            #expect(!CoreHarness.messages(out, to: c).isEmpty)
        }
        #expect(h.core.metrics.framesReceived > 0)
    }

    @Test("frames from unknown or closed connections are ignored")
    func unknownConnection() {
        var h = CoreHarness()
        #expect(h.handle(.received(Array(#"{"type":"ping","ping":1}"#.utf8), from: ConnectionID(9))).isEmpty)
        h.connect(1)
        h.disconnect(1)
        #expect(h.send(1, #"{"type":"ping","ping":1}"#).isEmpty)
        h.disconnect(1)
    }

    @Test("allocation picks the shortest free nameplate, randomly")
    func allocation() throws {
        var h = CoreHarness(config: RelayConfig(limits: .unlimited), seed: 7)
        var names: [String] = []
        for c in UInt64(1)...12 {
            h.bound(c, side: "side\(c)")
            let replies = h.send(c, #"{"type":"allocate"}"#)
            guard case .allocated(let name) = replies.last else {
                Issue.record("allocate failed: \(replies)")
                return
            }
            names.append(name.value)
        }
        #expect(Set(names.prefix(9)) == Set((1...9).map(String.init)), "all of 1-9 before two digits")
        #expect(names.suffix(3).allSatisfy { $0.count == 2 })
        #expect(names.prefix(9).map { $0 } != (1...9).map(String.init), "random order, not sequential")
        // A released short name rests before it is handed out again: with 1-9 otherwise
        // taken, the next allocation has two digits.
        #expect(h.send(3, ["type": "release", "nameplate": .string(names[2])]).last == .released)
        h.now += 599
        h.bound(20, side: "side20")
        guard case .allocated(let during) = h.send(20, #"{"type":"allocate"}"#).last else {
            Issue.record("allocate failed")
            return
        }
        #expect(during.value.count == 2)
        // Once the resting time is over, it comes back.
        h.now += 2
        h.bound(21, side: "side21")
        #expect(h.send(21, #"{"type":"allocate"}"#).last == .allocated(Nameplate(validating: names[2])!))
        #expect(h.core.gauges.restingNameplates == 0)
    }

    @Test("a resting nameplate can still be claimed; with no delay it is allocated again at once")
    func restingNameplates() throws {
        var h = CoreHarness(config: RelayConfig(limits: .unlimited), seed: 11)
        // Only "5" is free among 1-9, and it has just been deleted.
        for n in 1...9 where n != 5 {
            h.bound(UInt64(n), side: "s\(n)")
            _ = h.claim(UInt64(n), "\(n)")
        }
        h.bound(10, side: "attendant")
        _ = h.claim(10, "5")
        #expect(h.send(10, ["type": "release", "nameplate": "5"]).last == .released)
        #expect(h.core.state.nameplates.keys.contains { $0.name.value == "5" } == false)
        // A stranger's allocation does not get it...
        h.bound(11, side: "stranger")
        guard case .allocated(let given) = h.send(11, #"{"type":"allocate"}"#).last else {
            Issue.record("allocate failed")
            return
        }
        #expect(given.value != "5")
        #expect(h.core.gauges.restingNameplates == 1)
        // ...while the attendant (a fresh side, as for the next use of an invite) claims it back.
        h.bound(12, side: "attendant-next")
        let mailbox = h.claim(12, "5")
        #expect(h.core.state.nameplates.first { $0.key.name.value == "5" }?.value.mailbox == mailbox)

        var reference = CoreHarness(config: RelayConfig(limits: .unlimited, nameplateReuseDelay: 0), seed: 11)
        for n in 1...9 where n != 5 {
            reference.bound(UInt64(n), side: "s\(n)")
            _ = reference.claim(UInt64(n), "\(n)")
        }
        reference.bound(10, side: "attendant")
        _ = reference.claim(10, "5")
        reference.send(10, ["type": "release", "nameplate": "5"])
        reference.bound(11, side: "stranger")
        #expect(reference.send(11, #"{"type":"allocate"}"#).last == .allocated(Nameplate(validating: "5")!))
    }

    @Test("the counts of unavailable short names follow the live and resting ones through random traffic")
    func unavailableShortCounts() throws {
        var h = CoreHarness(config: RelayConfig(limits: .unlimited, nameplateReuseDelay: 30), seed: 5)
        var random = SeededRandom(seed: 9)
        var next: UInt64 = 1
        var holding: [(connection: UInt64, name: String)] = []
        let app = AppID(testApp)
        for _ in 0..<1500 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3:
                h.bound(next, side: "s\(next)")
                if case .allocated(let name) = h.send(next, #"{"type":"allocate"}"#).last {
                    holding.append((next, name.value))
                }
                next += 1
            case 3..<5:
                // Canonical short names, and ones allocation never makes ("05", "0", "1234").
                let name = [
                    "7", "42", "512", "05", "0", "1234", "\(Int.random(in: 1..<120, using: &random))",
                ]
                .randomElement(using: &random)!
                h.bound(next, side: "s\(next)")
                if case .claimed = h.send(next, ["type": "claim", "nameplate": .string(name)]).last {
                    holding.append((next, name))
                }
                next += 1
            case 5..<8 where !holding.isEmpty:
                let (connection, name) = holding.remove(at: Int.random(in: 0..<holding.count, using: &random))
                h.send(connection, ["type": "release", "nameplate": .string(name)])
            default:
                h.now += Double.random(in: 0..<8, using: &random)
                if Bool.random(using: &random) { _ = h.tick(after: 0) }
            }
            let live = h.core.namesByApp[app] ?? []
            let resting = h.core.restingNames[app] ?? [:]
            let expected = (1...3).map { length in
                live.filter { NameplateAllocator.shortLength($0) == length }.count
                    + resting.keys.filter { NameplateAllocator.shortLength($0) == length }.count
            }
            #expect(h.core.unavailableShort[app] ?? [0, 0, 0] == expected)
            #expect(Set(resting.keys).isDisjoint(with: live))
        }
        #expect(next > 400)
    }

    @Test("allocation falls back to long random names and fails cleanly when full")
    func allocatorEdges() {
        var random = SeededRandom(seed: 3)
        let all999 = Set((1...999).map { Nameplate(number: $0) })
        // One and two digits taken: three digits, found by draws.
        let short99 = Set((1..<100).map { Nameplate(number: $0) })
        for _ in 0..<50 {
            #expect(
                NameplateAllocator.allocate(taken: .init(live: short99), using: &random)?.value.count == 3)
        }
        // Every short name resting (none live): a long one.
        var resting: [Nameplate: RelayInstant] = [:]
        for name in all999 { resting[name] = RelayInstant(secondsSince1970: 0) }
        let pastRest = NameplateAllocator.allocate(taken: .init(live: [], resting: resting), using: &random)
        #expect((pastRest?.value.count ?? 0) >= 4)
        let long = NameplateAllocator.allocate(taken: .init(live: all999), using: &random)
        #expect((long?.value.count ?? 0) >= 4)
        #expect((long?.value.count ?? 99) <= 6)
        // A generator stuck at its maximum always proposes 999999: when that is taken too,
        // allocation gives up after its 1000 tries instead of looping.
        var stuck = ConstantRandom()
        #expect(NameplateAllocator.allocate(taken: .init(live: all999), using: &stuck)?.value == "999999")
        #expect(
            NameplateAllocator.allocate(
                taken: .init(live: all999.union([Nameplate(number: 999_999)])), using: &stuck)
                == nil)
    }

    @Test("a third side is crowded out, on claim and on open, and nothing is written for it")
    func crowded() throws {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        h.bound(2, side: "bbbb")
        h.bound(3, side: "cccc")
        let mailbox = h.claim(1, "4")
        #expect(h.claim(2, "4") == mailbox)
        let before = h.core.state
        #expect(h.send(3, ["type": "claim", "nameplate": "4"]).last?.errorText == "crowded")
        #expect(h.core.state == before)
        h.bound(4, side: "cccc")
        #expect(
            h.send(4, ["type": "open", "mailbox": .string(mailbox.value)]).last?.errorText == "crowded")
        h.bound(5, side: "cccc")
        #expect(
            h.send(5, ["type": "close", "mailbox": .string(mailbox.value)]).last?.errorText == "crowded")
        #expect(h.core.state == before)
        #expect(h.core.metrics.errors[.crowded] == 3)
        // The two real sides finish normally and everything is deleted.
        h.send(1, ["type": "close", "mailbox": .string(mailbox.value), "mood": "happy"])
        h.send(2, ["type": "close", "mailbox": .string(mailbox.value), "mood": "happy"])
        #expect(h.core.state == .empty)
    }

    @Test("a side that released may not claim again, on any connection")
    func reclaimed() throws {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        h.bound(2, side: "bbbb")
        _ = h.claim(1, "8")
        _ = h.claim(2, "8")
        #expect(h.send(1, ["type": "release"]).last == .released)
        h.bound(3, side: "aaaa")
        #expect(h.send(3, ["type": "claim", "nameplate": "8"]).last?.errorText == "reclaimed")
    }

    @Test("reconnecting with the same side: claim is idempotent and open replays everything")
    func reconnect() throws {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        let mailbox = h.claim(1, "12")
        h.send(1, ["type": "open", "mailbox": .string(mailbox.value)])
        h.send(1, ["type": "add", "phase": "pake", "body": "01"])
        let pake = try #require(h.sent(to: 1).last?.stored)
        h.disconnect(1)
        #expect(h.core.gauges.subscribedConnections == 0)

        h.bound(2, side: "bbbb")
        #expect(h.claim(2, "12") == mailbox)
        h.send(2, ["type": "open", "mailbox": .string(mailbox.value)])
        h.send(2, ["type": "add", "phase": "pake", "body": "02"])
        let pakeB = try #require(h.sent(to: 2).last?.stored)

        // A comes back on a new connection: same side, same nameplate, same mailbox, full replay.
        h.bound(3, side: "aaaa")
        #expect(h.claim(3, "12") == mailbox)
        #expect(
            h.send(3, ["type": "open", "mailbox": .string(mailbox.value)]) == [
                .ack(id: .null), .message(pake), .message(pakeB),
            ])
        // A re-sends an add whose echo it missed: stored twice (clients de-duplicate).
        h.send(3, ["type": "add", "phase": "pake", "body": "01"])
        #expect(h.sent(to: 2).count == 1)
        #expect(h.core.state.mailboxes.first?.value.messages.count == 3)
        // A repeated close from a new connection still gets `closed`.
        h.send(3, ["type": "close", "mood": "happy"])
        h.bound(4, side: "aaaa")
        #expect(
            h.send(4, ["type": "close", "mailbox": .string(mailbox.value), "mood": "happy"]) == [
                .ack(id: .null), .closed,
            ])
    }

    @Test("a standalone mailbox can be opened by any name and closing it deletes it")
    func standalone() {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        h.send(1, ["type": "open", "mailbox": "anything at all"])
        let key = MailboxKey(app: AppID(testApp), id: "anything at all")
        #expect(h.core.state.mailboxes[key]?.forNameplate == false)
        h.send(1, ["type": "close", "mood": "lonely"])
        #expect(h.core.state.mailboxes.isEmpty)
        #expect(h.core.metrics.mailboxResults == ["lonely": 1])
    }

    @Test("closing without opening on this connection opens implicitly, then closes")
    func closeWithoutOpen() throws {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        let mailbox = h.claim(1, "3")
        h.bound(2, side: "bbbb")
        #expect(h.claim(2, "3") == mailbox)
        #expect(
            h.send(1, ["type": "close", "mailbox": .string(mailbox.value), "mood": "scary"]).last
                == .closed)
        #expect(
            h.send(2, ["type": "close", "mailbox": .string(mailbox.value), "mood": "happy"]).last
                == .closed)
        #expect(h.core.state == .empty)
        #expect(h.core.metrics.mailboxResults == ["scary": 1])
        // Closing a mailbox that no longer exists is harmless.
        h.bound(3, side: "aaaa")
        #expect(h.send(3, ["type": "close", "mailbox": .string(mailbox.value)]).last == .closed)
        #expect(h.core.state == .empty)
    }

    @Test(
        "mailbox results follow the reference's precedence",
        arguments: [
            ([String?](), "quiet"), (["happy"], "lonely"), (["happy", "happy"], "happy"),
            (["happy", "lonely"], "lonely"),
            (["lonely", "errory"], "errory"), (["errory", "scary"], "scary"), (["scary", nil], "scary"),
            (["happy", nil], "happy"),
        ])
    func results(_ moods: [String?], _ expected: String) {
        var sides: [Side: MailboxSideRecord] = [:]
        for (i, mood) in moods.enumerated() {
            sides[Side("s\(i)")] = MailboxSideRecord(
                opened: false, added: RelayInstant(secondsSince1970: 0), mood: mood)
        }
        let mailbox = MailboxRecord(
            forNameplate: true, updated: RelayInstant(secondsSince1970: 0), sides: sides)
        #expect(RelayCore.result(of: mailbox, pruned: false) == expected)
        #expect(RelayCore.result(of: mailbox, pruned: true) == "pruney")
    }

    @Test("moods are counted by kind")
    func moods() {
        var h = CoreHarness()
        for (i, mood) in ["happy", "lonely", "scary", "errory", "unwelcome", "weird"].enumerated() {
            let c = UInt64(i + 1)
            h.bound(c, side: "s\(c)")
            h.send(c, ["type": "open", "mailbox": .string("m\(c)")])
            h.send(c, ["type": "close", "mood": .string(mood)])
        }
        h.bound(10, side: "s10")
        h.send(10, ["type": "open", "mailbox": "m10"])
        h.send(10, ["type": "close"])
        #expect(
            h.core.metrics.closeMoods
                == ["happy": 1, "lonely": 1, "scary": 1, "errory": 1, "unwelcome": 1, "other": 1, "none": 1])
    }

    @Test("list answers an empty list unless enabled")
    func list() throws {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        _ = h.claim(1, "17")
        #expect(h.send(1, #"{"type":"list"}"#) == [.ack(id: .null), .nameplates([])])

        var open = CoreHarness(config: RelayConfig(allowList: true))
        open.bound(1, side: "aaaa")
        open.bound(2, side: "bbbb")
        open.bound(3, side: "cccc", app: "other.example/app")
        _ = open.claim(1, "17")
        _ = open.claim(2, "100")
        _ = open.claim(3, "5")
        #expect(
            open.send(1, #"{"type":"list"}"#)
                == [
                    .ack(id: .null),
                    .nameplates([Nameplate(validating: "100")!, Nameplate(validating: "17")!]),
                ])
    }

    @Test("AppIDs are separate worlds")
    func appIsolation() throws {
        var h = CoreHarness()
        h.bound(1, side: "aaaa", app: "one.example/a")
        h.bound(2, side: "bbbb", app: "two.example/b")
        let m1 = h.claim(1, "4")
        let m2 = h.claim(2, "4")
        #expect(m1 != m2)
        #expect(h.core.state.nameplates.count == 2)
    }

    @Test("add after every side closed the mailbox gets an error, not an orphan message")
    func addToClosedMailbox() throws {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        h.send(1, ["type": "open", "mailbox": "mb"])
        h.bound(2, side: "bbbb")
        h.send(2, ["type": "open", "mailbox": "mb"])
        h.send(1, ["type": "close"])
        h.bound(3, side: "aaaa")
        h.send(3, ["type": "open", "mailbox": "mb"])  // re-open: the side stays closed
        h.send(2, ["type": "close"])  // the last open side closes: deleted
        #expect(h.core.state.mailboxes.isEmpty)
        #expect(h.send(3, ["type": "add", "phase": "0", "body": "00"]).last?.errorCode == .mailboxGone)
        #expect(
            h.send(3, ["type": "open", "mailbox": "mb"]).last?.errorText == "only one open per connection")
        #expect(h.core.state == .empty)
    }

    @Test("an open right after its claim records no activity of its own; one a second later does")
    func openAfterClaimWritesNoTouch() {
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        h.bound(2, side: "bbbb")
        let mailbox = h.claim(1, "42")
        let key = MailboxKey(app: AppID(testApp), id: mailbox)
        h.now += 0.3
        h.claim(2, "42")
        // The claim attached the side: the mailbox's activity is recorded with it.
        #expect(h.last.writes.contains(.touchMailbox(key, updated: h.instant)))
        h.now += 0.5
        h.send(1, ["type": "open", "mailbox": .string(mailbox.value)])
        #expect(h.last.writes.isEmpty, "\(h.last.writes)")
        #expect(h.core.state.mailboxes[key]?.updated == RelayInstant(secondsSince1970: startTime + 0.3))
        h.now += RelayCore.touchResolution
        h.send(2, ["type": "open", "mailbox": .string(mailbox.value)])
        #expect(h.last.writes == [.touchMailbox(key, updated: h.instant)])
    }
}

struct ConstantRandom: RandomNumberGenerator {
    mutating func next() -> UInt64 { .max }
}
