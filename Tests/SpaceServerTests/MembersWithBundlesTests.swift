import ClientCore
import Foundation
import SQLite
import SpaceModel
import Testing

@testable import SpaceServer

/// `POST …/members` with the new members' wrap bundles (`{"events", "bundles"}`): stored in the
/// request's transaction after the events, checked as `POST …/wraps` checks them, and a refused
/// bundle refuses the whole request (the events are not stored either). A server with the field
/// switched off ignores it, as one from before did, and says nothing of wraps in its answer.
@Suite struct MembersWithBundlesTests {
    private struct Scene {
        let harness: APIHarness
        var space: TestSpace
        let sam: TestMember
        let thread: ThreadID
        let key: ThreadKey

        init(storesBundles: Bool = true, checksThreadCount: Bool = true) throws {
            var configuration = SpaceServerConfiguration()
            configuration.storesBundlesWithMembers = storesBundles
            configuration.checksThreadCount = checksThreadCount
            harness = try APIHarness(configuration: configuration)
            space = try TestSpace.create(harness)
            sam = try space.add("Sam")
            (thread, key) = try space.createThread(by: space.owner, for: [space.owner, sam])
        }

        /// A joiner's record and the owner's event adding them onto the chain as the test knows it.
        func joiner(_ name: String) throws -> (record: MemberRecord, event: MembershipEvent) {
            let record = MemberRecord(
                id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: [], name: name)
            return (record, try space.roster.nextEvent(.memberAdded(record), signedBy: space.owner.identity))
        }

        func bundle(for record: MemberRecord, by signer: TestMember? = nil) -> KeyWrapBundle {
            (signer ?? space.owner).identity.wrapBundle([thread: key], for: record, in: space.space)!
        }

        func post(_ body: [String: Any], token: String? = nil) throws -> Reply {
            try harness.send("POST", "\(space.base)/members", token: token ?? space.owner.token, json: body)
        }

        /// Rows of the events and wraps tables.
        func stored() throws -> (events: Int, wraps: Int) {
            let dump = try harness.dump()
            return (dump["events"]?.count ?? -1, dump["wraps"]?.count ?? -1)
        }
    }

    @Test func bundlesAreStoredWithTheirEvents() throws {
        let scene = try Scene()
        let before = try scene.stored()
        let ann = try scene.joiner("Ann")
        let reply = try scene.post(["events": [ann.event], "bundles": [scene.bundle(for: ann.record)]])
        #expect(reply.status == 201, "\(reply.json)")
        #expect(reply["wrapsStored"] as? Int == 1)
        #expect(reply.array("appended").count == 1)
        let after = try scene.stored()
        #expect(after.events == before.events + 1)
        #expect(after.wraps == before.wraps + 1)
        // What the joiner fetches once signed in is the bundle, and it opens on the roster.
        var roster = scene.space.roster
        try roster.apply(ann.event)
        let rows = try scene.harness.dump()["wraps"] ?? []
        #expect(rows.contains { row in row.contains { $0 == .blob(ann.record.id.bytes) } })
    }

    /// Each refusal leaves nothing: not the event, not any bundle, and the chain takes the same
    /// event afterwards.
    @Test func aRefusedBundleRefusesTheWholeRequest() throws {
        let scene = try Scene()
        let before = try scene.stored()
        let ann = try scene.joiner("Ann")
        let stranger = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "")
        let cases: [(String, [String: Any], token: String?, status: Int, code: String)] = [
            (
                "for a non-member", ["events": [ann.event], "bundles": [scene.bundle(for: stranger)]], nil,
                422,
                "wrong_recipient"
            ),
            (
                "signed by another member",
                ["events": [ann.event], "bundles": [scene.bundle(for: ann.record, by: scene.sam)]], nil, 403,
                "signer_mismatch"
            ),
            (
                "the same thread twice",
                [
                    "events": [ann.event],
                    "bundles": [scene.bundle(for: ann.record), scene.bundle(for: ann.record)],
                ], nil, 409, "wrap_exists"
            ),
            (
                "with the admin token", ["events": [ann.event], "bundles": [scene.bundle(for: ann.record)]],
                scene.space.adminToken, 403, "member_required"
            ),
            (
                "with one event", ["event": ann.event, "bundles": [scene.bundle(for: ann.record)]], nil, 400,
                "invalid_request"
            ),
        ]
        for (label, body, token, status, code) in cases {
            let reply = try scene.post(body, token: token)
            #expect(reply.status == status, "\(label): \(reply.json)")
            #expect(reply.error == code, "\(label): \(reply.json)")
            #expect(try scene.stored() == before, "\(label)")
        }
        // A bundle for a member who holds the key already (Sam) refuses Ann's event with it.
        let samAgain = try scene.post([
            "events": [ann.event], "bundles": [scene.bundle(for: scene.sam.record)],
        ])
        #expect(samAgain.status == 409, "\(samAgain.json)")
        #expect(try scene.stored() == before)
        // Nothing was half-written: the same event is still the chain's next.
        let reply = try scene.post(["events": [ann.event], "bundles": [scene.bundle(for: ann.record)]])
        #expect(reply.status == 201, "\(reply.json)")
        #expect(reply["wrapsStored"] as? Int == 1)
    }

    /// Switched off, the server ignores the bundles (as a server from before did): the events
    /// are stored, no wrap is, and the answer does not say `wrapsStored`.
    @Test func aServerThatDoesNotStoreThemSaysNothing() throws {
        let scene = try Scene(storesBundles: false)
        let before = try scene.stored()
        let ann = try scene.joiner("Ann")
        let reply = try scene.post(["events": [ann.event], "bundles": [scene.bundle(for: ann.record)]])
        #expect(reply.status == 201, "\(reply.json)")
        #expect(reply.json["wrapsStored"] == nil)
        #expect(try scene.stored() == (before.events + 1, before.wraps))
    }

    /// `threadCount` (the thread list's length the bundles were chosen on): another number than
    /// the space's refuses the request before anything is stored (409 `threads_changed`); the
    /// right one is echoed with each joiner's messages. Switched off (a server from before), it
    /// is ignored and not echoed.
    @Test(arguments: [true, false]) func aStaleThreadCountRefusesTheRequest(checks: Bool) throws {
        let scene = try Scene(checksThreadCount: checks)
        let threads = try scene.harness.dump()["threads"]?.count ?? -1
        let before = try scene.stored()
        let ann = try scene.joiner("Ann")
        let body: ([String: Any]) -> [String: Any] = { extra in
            ["events": [ann.event], "bundles": [scene.bundle(for: ann.record)]].merging(extra) { $1 }
        }
        if checks {
            for stale in [threads - 1, threads + 1] {
                let reply = try scene.post(body(["threadCount": stale]))
                #expect(reply.status == 409, "\(reply.json)")
                #expect(reply.error == "threads_changed", "\(reply.json)")
                #expect(try scene.stored() == before)
            }
        }
        let reply = try scene.post(body(["threadCount": checks ? threads : threads + 5]))
        #expect(reply.status == 201, "\(reply.json)")
        #expect(reply["wrapsStored"] as? Int == 1)
        #expect(reply["threadCount"] as? Int == (checks ? threads : nil))
        let appended = reply.array("appended")
        #expect(appended.first?["messages"] as? Int == (checks ? 0 : nil))
        #expect(try scene.stored() == (before.events + 1, before.wraps + 1))
    }
}
