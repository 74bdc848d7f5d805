import Foundation
import SpaceModel
import SpaceServer
import Testing

@testable import ClientCore

/// `POST …/members` with several `member_added` events: applied in order, all or none, and
/// refused clearly when malformed.
@Suite struct MemberBatchTests {
    private func newcomers(_ count: Int) -> [MemberRecord] {
        (0..<count).map {
            MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "N\($0)")
        }
    }

    /// Events signed one onto the other, from `roster` on.
    private func chain(_ records: [MemberRecord], on roster: Roster, by signer: DeviceIdentity) throws
        -> [MembershipEvent]
    {
        var running = roster
        return try records.map { record in
            let event = try running.nextEvent(.memberAdded(record), signedBy: signer)
            try running.apply(event)
            return event
        }
    }

    @Test func aBatchIsAppliedInOrderWithoutTokens() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let records = newcomers(3)
        let events = try chain(records, on: space.roster, by: space.owner.identity)
        let reply = try harness.send(
            "POST", "\(space.base)/members", token: space.owner.token, json: ["events": events])
        #expect(reply.status == 201, "\(reply.json)")
        let appended = reply.array("appended")
        #expect(appended.map { $0["sequence"] as? Int } == events.map { Int($0.sequence) })
        #expect(appended.allSatisfy { $0["deviceToken"] == nil })
        #expect(appended.last?["hash"] as? String == events.last?.hash.description)
        for event in events { try space.roster.apply(event) }

        let listed = try harness.send("GET", "\(space.base)/members", token: space.owner.token)
        let names = Set(listed.array("members").compactMap { $0["name"] as? String })
        #expect(names.isSuperset(of: ["N0", "N1", "N2"]))
        // The chain goes on from the batch's last event.
        _ = try space.add("After")
    }

    @Test func aBatchWithOneBadEventChangesNothing() throws {
        let harness = try APIHarness()
        let space = try TestSpace.create(harness)
        let before = try harness.dump()
        var events = try chain(newcomers(3), on: space.roster, by: space.owner.identity)
        // The third does not follow the second: signed on the roster before the batch.
        events[2] = try space.roster.nextEvent(.memberAdded(newcomers(1)[0]), signedBy: space.owner.identity)
        let reply = try harness.send(
            "POST", "\(space.base)/members", token: space.owner.token, json: ["events": events])
        #expect(reply.status == 409, "\(reply.json)")
        #expect(reply.error == "event_out_of_order")
        #expect(reply.string("message").hasPrefix("Event 2: "), "\(reply.json)")
        #expect(try harness.dump() == before)
    }

    @Test func malformedBatchesAreRefused() throws {
        var configuration = SpaceServerConfiguration()
        configuration.maximumEventsPerRequest = 4
        let harness = try APIHarness(configuration: configuration)
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let token = space.owner.token
        let before = try harness.dump()
        let two = try chain(newcomers(2), on: space.roster, by: space.owner.identity)
        let removal = try space.roster.nextEvent(.memberRemoved(sam.id), signedBy: space.owner.identity)
        let cases: [(String, [String: Any], Int, String)] = [
            ("empty", ["events": [Any]()], 400, "invalid_field"),
            ("both forms", ["event": two[0], "events": [two[1]]], 400, "invalid_request"),
            ("neither", ["deviceLabel": "x"], 400, "missing_field"),
            ("a removal in a batch", ["events": [removal]], 400, "invalid_event"),
            (
                "too many", ["events": try chain(newcomers(5), on: space.roster, by: space.owner.identity)],
                413,
                "too_many_events"
            ),
            ("not a list", ["events": "x"], 400, "invalid_field"),
        ]
        for (name, body, status, code) in cases {
            let reply = try harness.send("POST", "\(space.base)/members", token: token, json: body)
            #expect(reply.status == status, "\(name): \(reply.json)")
            #expect(reply.error == code, "\(name): \(reply.json)")
        }
        #expect(try harness.dump() == before)
        // Someone else's events in a batch: a member submits only what they signed.
        let bySam = try harness.send("POST", "\(space.base)/members", token: sam.token, json: ["events": two])
        #expect(bySam.status == 403)
        #expect(bySam.error == "signer_mismatch")
        #expect(try harness.dump() == before)
    }
}
