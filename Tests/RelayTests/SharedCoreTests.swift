import Mailbox
import Testing

@testable import Relay

/// The core's multi-node rules without a database: nameplates come from the store, frames wait
/// for them in order, other nodes' writes are applied and their messages delivered.
@Suite("Relay core shared by several nodes")
struct SharedCoreTests {
    static func request(_ h: CoreHarness) throws -> RelayRequest {
        try #require(h.last.requests.first)
    }

    @Test("allocate on one node and claim on another: one mailbox, messages cross in both directions")
    func twoCores() throws {
        var one = CoreHarness(shared: true)
        var two = CoreHarness(seed: 2, shared: true)
        one.bound(1, side: "aaaa")
        #expect(one.send(1, ["type": "allocate"]) == [.ack(id: .null)], "no answer before the store's")
        let request = try Self.request(one)
        #expect(request.connection == ConnectionID(1) && request.nameplate.isAllocation)
        #expect(Set(request.nameplate.candidates.prefix(9)) == Set((1..<10).map { Nameplate(number: $0) }))
        #expect(request.nameplate.candidates.count == 9 + 32 + 32 + 16, "short ones first, then longer")
        let lengths = request.nameplate.candidates.map(\.value.count)
        #expect(
            Array(lengths.prefix(73)) == lengths.prefix(73).sorted()
                && lengths.dropFirst(73).allSatisfy { $0 >= 4 })
        // Frames sent meanwhile wait, in order.
        #expect(one.send(1, ["type": "claim", "nameplate": "4"]).isEmpty)
        #expect(one.send(1, ["type": "ping", "ping": .number(JSONNumber(9))]).isEmpty)

        let name = Nameplate(number: 4)
        let created = StorageOp.putNameplate(
            NameplateKey(app: AppID(testApp), name: name), mailbox: request.nameplate.mailbox)
        let grant = NameplateGrant(
            app: AppID(testApp), name: name, mailbox: request.nameplate.mailbox, created: true)
        one.handle(.nameplateGranted(grant, to: ConnectionID(1)), durable: [created])
        #expect(
            one.sent(to: 1) == [
                .allocated(name), .ack(id: .null), .claimed(request.nameplate.mailbox), .ack(id: .null),
                .pong(.number(JSONNumber(9))),
            ])
        #expect(!one.last.writes.contains(created), "the store wrote the nameplate itself")
        let mailbox = request.nameplate.mailbox
        one.send(1, ["type": "open", "mailbox": .string(mailbox.value)])
        one.send(1, ["type": "add", "phase": "pake", "body": "a1"])
        #expect(one.sent(to: 1).last?.stored?.body == "a1")

        // Node two follows node one's commits, then serves the peer.
        two.handle(.replicated([created] + one.shadow.diffOps), durable: [created] + one.shadow.diffOps)
        two.bound(2, side: "bbbb")
        // A claim always asks the store (the name may have been reused elsewhere a moment ago).
        #expect(two.send(2, ["type": "claim", "nameplate": "4"]) == [.ack(id: .null)])
        #expect(try Self.request(two).nameplate.candidates == [name])
        two.handle(
            .nameplateGranted(
                NameplateGrant(app: AppID(testApp), name: name, mailbox: mailbox, created: false),
                to: ConnectionID(2)))
        #expect(two.sent(to: 2) == [.claimed(mailbox)])
        #expect(
            two.send(2, ["type": "open", "mailbox": .string(mailbox.value)]).last?.stored?.body == "a1")
        two.send(2, ["type": "add", "phase": "pake", "body": "b2"])
        let fromTwo = two.last.writes
        let delivered = one.handle(.replicated(fromTwo), durable: fromTwo)
        #expect(CoreHarness.messages(delivered, to: 1).map(\.stored?.body) == ["b2"])
        #expect(delivered.writes.isEmpty && delivered.dependsOn == 0, "durable already: nothing to wait for")
    }

    @Test("a claim of a name unknown here asks the store; refusals and departed clients are handled")
    func claimsAndRefusals() throws {
        var h = CoreHarness(shared: true)
        h.bound(1, side: "aaaa")
        h.send(1, ["type": "claim", "nameplate": "77"])
        let request = try Self.request(h)
        #expect(!request.nameplate.isAllocation && request.nameplate.candidates == [Nameplate(number: 77)])
        // Another node made it first: the store answers with that node's mailbox.
        let key = NameplateKey(app: AppID(testApp), name: Nameplate(number: 77))
        let theirs = MailboxID("theirs")
        h.handle(
            .nameplateGranted(
                NameplateGrant(app: AppID(testApp), name: key.name, mailbox: theirs, created: false),
                to: ConnectionID(1)), durable: [.putNameplate(key, mailbox: theirs)])
        #expect(h.sent(to: 1) == [.claimed(theirs)])

        // Every candidate taken: the allocation is refused with the request as `orig`.
        h.bound(2, side: "bbbb")
        h.send(2, ["type": "allocate", "id": "x"])
        h.handle(
            .nameplateGranted(
                NameplateGrant(app: AppID(testApp), name: nil, mailbox: "m", created: false),
                to: ConnectionID(2)))
        #expect(h.sent(to: 2).first?.errorCode == .noFreeNameplate)

        // The client left before the answer: the nameplate made for it is deleted again.
        h.bound(3, side: "cccc")
        h.send(3, ["type": "allocate"])
        let third = try Self.request(h)
        h.disconnect(3)
        let name = try #require(third.nameplate.candidates.first)
        let made = StorageOp.putNameplate(
            NameplateKey(app: AppID(testApp), name: name), mailbox: third.nameplate.mailbox)
        h.handle(
            .nameplateGranted(
                NameplateGrant(
                    app: AppID(testApp), name: name, mailbox: third.nameplate.mailbox, created: true),
                to: ConnectionID(3)), durable: [made])
        #expect(h.last.writes == [.deleteNameplate(NameplateKey(app: AppID(testApp), name: name))])
    }
}

extension SharedCoreTests {
    @Test("the store remade a name every side had released: the old nameplate and its sides are gone here")
    func grantReplacesReleasedNameplate() throws {
        let key = NameplateKey(app: AppID(testApp), name: Nameplate(number: 8))
        let at = RelayInstant(secondsSince1970: startTime)
        var snapshot = RelaySnapshot()
        snapshot.apply([
            .putNameplate(key, mailbox: "m8"),
            .putNameplateSide(key, "a", NameplateSideRecord(claimed: false, added: at)),
            .putNameplateSide(key, "b", NameplateSideRecord(claimed: false, added: at)),
        ])
        var h = CoreHarness(snapshot: snapshot, shared: true)
        h.bound(1, side: "cccc")
        h.send(1, ["type": "claim", "nameplate": "8"])
        let mailbox = try Self.request(h).nameplate.mailbox
        h.handle(
            .nameplateGranted(
                NameplateGrant(app: AppID(testApp), name: key.name, mailbox: mailbox, created: true),
                to: ConnectionID(1)), durable: [.deleteNameplate(key), .putNameplate(key, mailbox: mailbox)])
        #expect(h.sent(to: 1) == [.claimed(mailbox)], "not crowded by the released sides")
        #expect(h.core.state.nameplates[key]?.mailbox == mailbox)
        #expect(h.core.state.nameplates[key]?.sides.keys.map(\.value) == ["cccc"])
    }

    @Test("the expiry leader deletes what sides released and closed on different nodes at once")
    func leaderSweep() {
        let key = NameplateKey(app: AppID(testApp), name: Nameplate(number: 8))
        let mailbox = MailboxKey(app: AppID(testApp), id: "m8")
        let at = RelayInstant(secondsSince1970: startTime)
        var snapshot = RelaySnapshot()
        snapshot.apply([
            .putNameplate(key, mailbox: "m8"),
            .putNameplateSide(key, "a", NameplateSideRecord(claimed: false, added: at)),
            .putNameplateSide(key, "b", NameplateSideRecord(claimed: false, added: at)),
            .putMailbox(mailbox, forNameplate: true, updated: at),
            .putMailboxSide(mailbox, "a", MailboxSideRecord(opened: false, added: at)),
            .putMailboxSide(mailbox, "b", MailboxSideRecord(opened: false, added: at)),
        ])
        var follower = CoreHarness(snapshot: snapshot, shared: true)
        follower.core.expiresMailboxes = false
        #expect(follower.tick(after: 1).writes.isEmpty, "only the leader sweeps")
        var leader = CoreHarness(snapshot: snapshot, shared: true)
        let out = leader.tick(after: 1)
        #expect(out.writes.contains(.deleteNameplate(key)) && out.writes.contains(.deleteMailbox(mailbox)))
        #expect(leader.core.state == .empty)
    }
}

extension RelaySnapshot {
    /// Every row of this state as writes (for replaying one core's state into another).
    var diffOps: [StorageOp] {
        var ops: [StorageOp] = []
        for (key, mailbox) in mailboxes {
            ops.append(.putMailbox(key, forNameplate: mailbox.forNameplate, updated: mailbox.updated))
            for (side, record) in mailbox.sides { ops.append(.putMailboxSide(key, side, record)) }
            for message in mailbox.messages { ops.append(.appendMessage(key, message)) }
        }
        for (key, nameplate) in nameplates {
            for (side, record) in nameplate.sides { ops.append(.putNameplateSide(key, side, record)) }
        }
        return ops
    }
}
