import ClientCore
import Foundation
import SpaceModel
import SpaceServer
import Testing

/// One refused request and the answer it must get.
struct BadCase: CustomStringConvertible {
    let name: String
    let method: String
    let target: String
    let token: String?
    let body: [UInt8]
    let status: Int
    let code: String

    var description: String { name }
}

/// A space in a realistic state, and a list of bad requests against it.
struct BadInputFixture {
    let harness: APIHarness
    var space: TestSpace
    let sam: TestMember  // plain member
    let lee: TestMember  // invite right
    let kim: TestMember  // member without any thread key
    let thread: ThreadID
    let key: ThreadKey
    let postedMessage: EncryptedMessage
    let expiredToken: String
    let revokedToken: String

    init() throws {
        harness = try APIHarness()
        space = try TestSpace.create(harness)
        sam = try space.add("Sam")
        lee = try space.add("Lee", rights: .invite)
        kim = try space.add("Kim")
        (thread, key) = try space.createThread(by: space.owner, for: [space.owner, sam, lee])
        postedMessage = sam.identity.encrypt(
            Array("hi".utf8), with: key, in: space.space, thread: thread, as: sam.id)
        #expect(
            try harness.send(
                "POST", "\(space.base)/threads/\(thread)/messages", token: sam.token,
                json: ["message": postedMessage]
            ).status == 201)
        expiredToken = try harness.send(
            "POST", "\(space.base)/tokens", token: sam.token, json: ["expiresIn": 60]
        )
        .string("token")
        let revoked = try harness.send(
            "POST", "\(space.base)/tokens", token: sam.token, json: ["label": "old"])
        revokedToken = revoked.string("token")
        #expect(
            try harness.send("DELETE", "\(space.base)/tokens/\(revoked.string("id"))", token: sam.token)
                .status == 200)
        harness.clock.advance(by: 120)
    }

    func json(_ object: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: harness.plain(object)))
    }

    func bad(
        _ name: String, _ method: String, _ target: String, token: String?, body: [UInt8] = [], _ status: Int,
        _ code: String
    ) -> BadCase {
        BadCase(
            name: name, method: method, target: target, token: token, body: body, status: status, code: code)
    }

    func cases() throws -> [BadCase] {
        let base = space.base
        let owner = space.owner
        let threads = "\(base)/threads"
        let messages = "\(base)/threads/\(thread)/messages"
        let wraps = "\(base)/threads/\(thread)/wraps"
        var list: [BadCase] = []

        // Bodies that are not what the endpoint reads.
        list.append(
            bad(
                "invalid JSON", "POST", threads, token: sam.token, body: Array("{\"thread\":".utf8), 400,
                "invalid_json"))
        list.append(bad("empty body", "POST", threads, token: sam.token, 400, "invalid_json"))
        list.append(
            bad("array body", "POST", threads, token: sam.token, body: Array("[]".utf8), 400, "invalid_json"))
        list.append(
            bad(
                "number for id", "POST", threads, token: sam.token,
                body: try json(["thread": 5, "wraps": []]), 400, "invalid_field"))
        list.append(
            bad(
                "string for array", "POST", threads, token: sam.token,
                body: try json(["thread": ThreadID.random(), "wraps": "x"]), 400, "invalid_field"))
        list.append(
            bad(
                "missing field", "POST", threads, token: sam.token,
                body: try json(["thread": ThreadID.random()]), 400, "missing_field"))
        list.append(
            bad(
                "null field", "POST", threads, token: sam.token,
                body: try json(["thread": NSNull(), "wraps": []]), 400, "invalid_field"))
        list.append(
            bad(
                "bad base64 id", "POST", threads, token: sam.token,
                body: try json(["thread": "!!!", "wraps": []]), 400, "invalid_field"))
        list.append(
            bad(
                "short id", "POST", threads, token: sam.token,
                body: try json(["thread": "AAAA", "wraps": []]), 400, "invalid_field"))
        list.append(
            bad(
                "oversize body", "POST", threads, token: sam.token,
                body: [UInt8](repeating: 0x20, count: (1 << 20) + 1), 413, "body_too_large"))
        list.append(
            bad(
                "oversize metadata", "POST", threads, token: sam.token,
                body: try json([
                    "thread": ThreadID.random(), "wraps": [],
                    "metadata": Base64URL.encode([UInt8](repeating: 1, count: 5000)),
                ]), 413, "metadata_too_large"))
        let bigMessage = sam.identity.encrypt(
            [UInt8](repeating: 7, count: 70_000), with: key, in: space.space, thread: thread, as: sam.id)
        list.append(
            bad(
                "oversize message", "POST", messages, token: sam.token,
                body: try json(["message": bigMessage]), 413, "message_too_large"))

        // Unknown things.
        list.append(
            bad(
                "unknown space", "GET", "/api/spaces/\(SpaceID.random())/threads", token: sam.token, 404,
                "unknown_space"))
        list.append(
            bad(
                "malformed space id", "GET", "/api/spaces/%%%/threads", token: sam.token, 404, "unknown_space"
            ))
        list.append(
            bad(
                "unknown thread", "GET", "\(threads)/\(ThreadID.random())/messages", token: sam.token, 404,
                "unknown_thread"))
        list.append(
            bad("unknown route", "GET", "\(base)/nothing-here", token: sam.token, 404, "unknown_route"))
        list.append(bad("not the api", "GET", "/index.html", token: nil, 404, "unknown_route"))
        list.append(bad("wrong method", "DELETE", threads, token: sam.token, 405, "method_not_allowed"))
        list.append(
            bad("read another inbox", "GET", "\(base)/inbox/1", token: sam.token, 405, "method_not_allowed"))
        list.append(
            bad(
                "delete unknown token", "DELETE", "\(base)/tokens/AAAA", token: sam.token, 404,
                "unknown_token"))

        // Credentials.
        list.append(bad("no token", "GET", threads, token: nil, 401, "token_missing"))
        list.append(bad("garbage token", "GET", threads, token: "not-a-token", 401, "token_invalid"))
        list.append(
            bad(
                "unknown token", "GET", threads, token: Base64URL.encode([UInt8](repeating: 9, count: 32)),
                401, "token_invalid"))
        list.append(bad("expired token", "GET", threads, token: expiredToken, 401, "token_expired"))
        list.append(bad("revoked token", "GET", threads, token: revokedToken, 401, "token_revoked"))
        list.append(
            bad(
                "admin token as member", "POST", threads, token: space.adminToken,
                body: try json(["thread": ThreadID.random(), "wraps": []]), 403, "member_required"))

        // Queries.
        list.append(
            bad("negative since", "GET", "\(messages)?since=-1", token: sam.token, 400, "invalid_query"))
        list.append(bad("zero limit", "GET", "\(messages)?limit=0", token: sam.token, 400, "invalid_query"))
        list.append(bad("text limit", "GET", "\(messages)?limit=ten", token: sam.token, 400, "invalid_query"))

        // Messages.
        var forgedSignature = postedMessage.signature.bytes
        forgedSignature[0] ^= 1
        let fresh = sam.identity.encrypt(
            Array("new".utf8), with: key, in: space.space, thread: thread, as: sam.id)
        let forged = try EncryptedMessage(
            space: fresh.space, thread: fresh.thread, id: fresh.id, author: fresh.author, nonce: fresh.nonce,
            ciphertext: fresh.ciphertext, signature: Signature(bytes: forgedSignature))
        list.append(
            bad(
                "forged message signature", "POST", messages, token: sam.token,
                body: try json(["message": forged]), 422, "bad_signature"))
        let asOwner = sam.identity.encrypt([1], with: key, in: space.space, thread: thread, as: owner.id)
        list.append(
            bad(
                "message as someone else", "POST", messages, token: sam.token,
                body: try json(["message": asOwner]), 403, "author_mismatch"))
        list.append(
            bad(
                "replayed message", "POST", messages, token: sam.token,
                body: try json(["message": postedMessage]), 409, "message_exists"))
        let otherThread = sam.identity.encrypt([1], with: key, in: space.space, thread: .random(), as: sam.id)
        list.append(
            bad(
                "message for another thread", "POST", messages, token: sam.token,
                body: try json(["message": otherThread]), 400, "wrong_context"))

        // Membership events.
        let newcomer = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "New")
        let good = try space.roster.nextEvent(.memberAdded(newcomer), signedBy: owner.identity)
        var eventSignature = good.signature.bytes
        eventSignature[3] ^= 4
        let forgedEvent = MembershipEvent(
            space: good.space, sequence: good.sequence, previous: good.previous, change: good.change,
            signer: good.signer, signature: try Signature(bytes: eventSignature))
        list.append(
            bad(
                "forged event", "POST", "\(base)/members", token: owner.token,
                body: try json(["event": forgedEvent]), 422, "bad_signature"))
        let eventsReply = try harness.send("GET", "\(base)/events", token: owner.token)
        let stored = try JSONDecoder().decode(
            [MembershipEvent].self, from: JSONSerialization.data(withJSONObject: eventsReply["events"] ?? []))
        list.append(
            bad(
                "replayed event", "POST", "\(base)/events", token: owner.token,
                body: try json(["event": stored[1]]), 409, "event_out_of_order"))
        list.append(
            bad(
                "replayed genesis", "POST", "\(base)/events", token: owner.token,
                body: try json(["event": stored[0]]), 409, "space_exists"))
        let bySam = try space.roster.nextEvent(.memberAdded(newcomer), signedBy: sam.identity)
        list.append(
            bad(
                "add without invite right", "POST", "\(base)/members", token: sam.token,
                body: try json(["event": bySam]), 403, "not_authorised"))
        list.append(
            bad(
                "submit someone else's event", "POST", "\(base)/members", token: lee.token,
                body: try json(["event": good]), 403, "signer_mismatch"))
        let removeOwner = try space.roster.nextEvent(.memberRemoved(owner.id), signedBy: owner.identity)
        list.append(
            bad(
                "remove the owner", "DELETE", "\(base)/members/\(owner.id)", token: owner.token,
                body: try json(["event": removeOwner]), 403, "not_authorised"))
        let removeSam = try space.roster.nextEvent(.memberRemoved(sam.id), signedBy: owner.identity)
        list.append(
            bad(
                "remove: path names someone else", "DELETE", "\(base)/members/\(lee.id)", token: owner.token,
                body: try json(["event": removeSam]), 400, "wrong_context"))
        list.append(
            bad(
                "remove via add endpoint", "POST", "\(base)/members", token: owner.token,
                body: try json(["event": removeSam]), 400, "invalid_event"))
        let leeRemoves = try space.roster.nextEvent(.memberRemoved(sam.id), signedBy: lee.identity)
        list.append(
            bad(
                "remove without admin right", "DELETE", "\(base)/members/\(sam.id)", token: lee.token,
                body: try json(["event": leeRemoves]), 403, "not_authorised"))
        var otherSpace = try SpaceFixtureForServer()
        let foreign = try otherSpace.addEvent()
        list.append(
            bad(
                "event of another space", "POST", "\(base)/events", token: owner.token,
                body: try json(["event": foreign]), 400, "wrong_context"))

        // Wraps.
        let leeWrap = lee.identity.wrap(key, for: kim.record, in: space.space, thread: thread)
        list.append(
            bad(
                "wrap signed by someone else", "POST", wraps, token: sam.token,
                body: try json(["wraps": [leeWrap]]), 403, "signer_mismatch"))
        let kimWrap = kim.identity.wrap(.random(), for: sam.record, in: space.space, thread: thread)
        list.append(
            bad(
                "wrap without holding the key", "POST", wraps, token: kim.token,
                body: try json(["wraps": [kimWrap]]), 403, "not_authorised"))
        let samWrap = sam.identity.wrap(key, for: kim.record, in: space.space, thread: thread)
        var wrapSignature = samWrap.signature.bytes
        wrapSignature[20] ^= 2
        let forgedWrap = try KeyWrap(
            space: samWrap.space, thread: samWrap.thread, recipient: samWrap.recipient,
            signer: samWrap.signer,
            sealed: samWrap.sealed, signature: Signature(bytes: wrapSignature))
        list.append(
            bad(
                "forged wrap", "POST", wraps, token: sam.token, body: try json(["wraps": [forgedWrap]]), 422,
                "bad_signature"))
        list.append(
            bad(
                "duplicate wrap in request", "POST", wraps, token: sam.token,
                body: try json(["wraps": [samWrap, samWrap]]), 409, "wrap_exists"))
        let samAgain = owner.identity.wrap(key, for: sam.record, in: space.space, thread: thread)
        list.append(
            bad(
                "wrap already stored", "POST", wraps, token: owner.token,
                body: try json(["wraps": [samAgain]]), 409, "wrap_exists"))
        list.append(
            bad(
                "no wraps", "POST", wraps, token: owner.token, body: try json(["wraps": []]), 400,
                "invalid_field"))
        let newThread = ThreadID.random()
        let goodWrap = owner.identity.wrap(key, for: owner.record, in: space.space, thread: newThread)
        let badWrap = owner.identity.wrap(key, for: sam.record, in: space.space, thread: .random())
        list.append(
            bad(
                "new thread with one bad wrap", "POST", threads, token: owner.token,
                body: try json(["thread": newThread, "wraps": [goodWrap, badWrap]]), 400, "wrong_context"))
        list.append(
            bad(
                "existing thread id", "POST", threads, token: owner.token,
                body: try json(["thread": thread, "wraps": []]), 409, "thread_exists"))

        // Inbox.
        let noteFromSam = try sam.identity.note([1, 2, 3], to: lee.record, in: space.space, from: sam.id)
        list.append(
            bad(
                "note as someone else", "POST", "\(base)/inbox", token: kim.token,
                body: try json(["note": noteFromSam]), 403, "sender_mismatch"))
        let stranger = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys)
        let toStranger = try sam.identity.note([1], to: stranger, in: space.space, from: sam.id)
        list.append(
            bad(
                "note to a non-member", "POST", "\(base)/inbox", token: sam.token,
                body: try json(["note": toStranger]), 404, "unknown_member"))
        let spoofed = try InboxNote(
            space: noteFromSam.space, sender: noteFromSam.sender, recipient: kim.id,
            sealed: noteFromSam.sealed,
            signature: noteFromSam.signature)
        list.append(
            bad(
                "forged note", "POST", "\(base)/inbox", token: sam.token, body: try json(["note": spoofed]),
                422, "bad_signature"))

        // A note bigger than any sealed note may be (16 KiB) is refused before anything else.
        var oversized = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(noteFromSam)) as? [String: Any])
        oversized["sealed"] = String(repeating: "A", count: 40_000)
        list.append(
            bad(
                "oversized note", "POST", "\(base)/inbox", token: sam.token,
                body: try json(["note": oversized]),
                400, "invalid_field"))

        // Spaces, branding, tokens, sign-in.
        list.append(
            bad(
                "space exists", "POST", "/api/spaces", token: nil,
                body: try json(["name": "Again", "genesis": stored[0]]), 409, "space_exists"))
        let forgedGenesis = MembershipEvent(
            space: .random(), sequence: 0, previous: .genesis, change: stored[0].change,
            signer: stored[0].signer,
            signature: stored[0].signature)
        list.append(
            bad(
                "forged genesis", "POST", "/api/spaces", token: nil,
                body: try json(["name": "Fake", "genesis": forgedGenesis]), 422, "bad_signature"))
        let fresh2 = DeviceIdentity.generate().createSpace(.random(), as: .random())
        list.append(
            bad(
                "empty space name", "POST", "/api/spaces", token: nil,
                body: try json(["name": " ", "genesis": fresh2]), 400, "invalid_field"))
        list.append(
            bad(
                "long space name", "POST", "/api/spaces", token: nil,
                body: try json(["name": String(repeating: "n", count: 300), "genesis": fresh2]), 400,
                "invalid_field"))
        list.append(
            bad(
                "avatar of wrong type", "PUT", "\(base)/branding", token: owner.token,
                body: try json(["avatar": ["contentType": "text/html", "data": "PGgxPg"]]), 400,
                "invalid_field"))
        list.append(
            bad(
                "avatar not a PNG", "PUT", "\(base)/branding", token: owner.token,
                body: try json(["avatar": ["contentType": "image/png", "data": "PGgxPg"]]), 400,
                "invalid_field"))
        let huge = Base64URL.encode(
            [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 0, count: 300_000))
        list.append(
            bad(
                "avatar too large", "PUT", "\(base)/branding", token: owner.token,
                body: try json(["avatar": ["contentType": "image/png", "data": huge]]), 413,
                "avatar_too_large"))
        list.append(
            bad(
                "rename by plain member", "PUT", "\(base)/branding", token: sam.token,
                body: try json(["name": "Mine"]), 403, "not_authorised"))
        list.append(
            bad(
                "token lifetime too long", "POST", "\(base)/tokens", token: sam.token,
                body: try json(["expiresIn": 999_999_999_999]), 400, "invalid_field"))
        list.append(
            bad(
                "token label with control", "POST", "\(base)/tokens", token: sam.token,
                body: try json(["label": "a\u{1B}[31m"]), 400, "invalid_field"))
        let unknownChallenge = try sam.identity.signIn(
            to: space.space, as: sam.id, challenge: [UInt8](repeating: 5, count: 32))
        list.append(
            bad(
                "sign-in with unknown challenge", "POST", "\(base)/sign-in", token: nil,
                body: try json(["proof": unknownChallenge]), 401, "challenge_invalid"))
        return list
    }
}

/// A second, independent space (for cross-space splices).
struct SpaceFixtureForServer {
    let owner = DeviceIdentity.generate()
    var roster: Roster

    init() throws {
        roster = try Roster(genesis: owner.createSpace(.random(), as: .random()))
    }

    mutating func addEvent() throws -> MembershipEvent {
        let record = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys)
        let event = try roster.nextEvent(.memberAdded(record), signedBy: owner)
        try roster.apply(event)
        return event
    }
}

@Suite struct BadInputTests {
    @Test func everyBadRequestIsRefusedAndChangesNothing() throws {
        let fixture = try BadInputFixture()
        let cases = try fixture.cases()
        #expect(cases.count > 60)
        let before = try fixture.harness.dump()
        for bad in cases {
            var headers: [String: String] = [:]
            if let token = bad.token { headers["Authorization"] = "Bearer \(token)" }
            let response = fixture.harness.api.handle(
                APIRequest(method: bad.method, target: bad.target, headers: headers, body: bad.body))
            #expect(response.status == bad.status, "\(bad.name)")
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            #expect(
                object?["error"] as? String == bad.code,
                "\(bad.name): \(String(decoding: response.body, as: UTF8.self))")
            #expect((object?["message"] as? String)?.isEmpty == false, "\(bad.name)")
            #expect(object?.count == 2, "\(bad.name)")
            #expect(try fixture.harness.dump() == before, "\(bad.name) changed the database")
        }
    }

    @Test func schemaIsVersionedAndReopens() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        _ = try space.add("Sam")
        #expect(try harness.api.schemaVersion() == 10)
        let reopened = try SpaceAPI(databasePath: harness.databasePath)
        #expect(try reopened.schemaVersion() == 10)
        #expect(try reopened.dumpTables() == harness.dump())
        // A cold server rebuilds and re-verifies the roster from stored events.
        let reply = reopened.handle(
            APIRequest(
                method: "GET", target: space.base, headers: ["Authorization": "Bearer \(space.owner.token)"]))
        #expect(reply.status == 200)
    }

    @Test func refusesADatabaseFromTheFuture() throws {
        let harness = try APIHarness()
        _ = try TestSpace.create(harness)
        // Raise user_version behind the server's back with the sqlite3 shell if it is present; else
        // write the header field directly (offset 60, big-endian) in the checkpointed file.
        let future = harness.directory.appendingPathComponent("future.sqlite").path
        _ = try SpaceAPI(databasePath: future)
        try bumpUserVersion(path: future, to: 99)
        #expect(throws: SpaceStoreError.self) { _ = try SpaceAPI(databasePath: future) }
    }
}

/// Sets SQLite's `user_version` header field (offset 60, 4 bytes big-endian) of a closed database.
func bumpUserVersion(path: String, to version: UInt32) throws {
    // Make sure no WAL content overrides the header.
    for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    var data = try Data(contentsOf: URL(fileURLWithPath: path))
    let bytes = withUnsafeBytes(of: version.bigEndian) { Array($0) }
    data.replaceSubrange(60..<64, with: bytes)
    try data.write(to: URL(fileURLWithPath: path))
}
