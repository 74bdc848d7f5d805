import ClientCore
import Foundation
import SpaceModel
import SpaceServer
import Testing

@Suite struct SessionTests {
    @Test func realisticSession() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)

        // Public branding for welcome cards, with and without ?space= (a single space is the default).
        let group = try harness.send("GET", "/api/group")
        #expect(group.status == 200)
        #expect(group.string("name") == "Family")
        #expect(
            try harness.send("GET", "/api/group?space=\(space.space)").string("space")
                == space.space.base64URL)
        #expect(try harness.send("GET", "/api/server-avatar").error == "no_avatar")

        // Add Sam by public key; Sam also signs in with a challenge from a second device.
        var sam = try space.add("Sam")
        let challenge = try harness.send("POST", "\(space.base)/sign-in/challenge", json: ["member": sam.id])
        #expect(challenge.status == 201)
        let challengeBytes = try #require(Base64URL.decode(challenge.string("challenge")))
        let proof = try sam.identity.signIn(to: space.space, as: sam.id, challenge: challengeBytes)
        let signIn = try harness.send(
            "POST", "\(space.base)/sign-in", json: ["proof": proof, "label": "phone"])
        #expect(signIn.status == 201, "\(signIn.json)")
        let samPhoneToken = signIn.string("token")
        // The challenge works once.
        #expect(
            try harness.send("POST", "\(space.base)/sign-in", json: ["proof": proof]).error
                == "challenge_invalid")

        let members = try harness.send("GET", "\(space.base)/members", token: samPhoneToken)
        #expect(members.array("members").count == 2)

        // A thread for both, messages both ways, list since a cursor.
        let (thread, key) = try space.createThread(by: space.owner, for: [space.owner, sam])
        let first = try space.post("Welcome, Sam!", by: space.owner, thread: thread, key: key)
        try space.post("Thanks Paul", by: sam, thread: thread, key: key)
        #expect(try space.read(as: sam, thread: thread) == ["Welcome, Sam!", "Thanks Paul"])
        #expect(try space.read(as: space.owner, thread: thread, since: first) == ["Thanks Paul"])
        let page = try harness.send(
            "GET", "\(space.base)/threads/\(thread)/messages?since=0&limit=1", token: sam.token)
        #expect(page.array("messages").count == 1)
        #expect((page["next"] as? NSNumber)?.int64Value == first)

        // Sam, holding the key, wraps it for Lee, added later by the owner.
        let lee = try space.add("Lee", rights: .invite)
        let leeWrap = sam.identity.wrap(key, for: lee.record, in: space.space, thread: thread)
        let wrapReply = try harness.send(
            "POST", "\(space.base)/threads/\(thread)/wraps", token: sam.token, json: ["wraps": [leeWrap]])
        #expect(wrapReply.status == 201, "\(wrapReply.json)")
        #expect(try space.read(as: lee, thread: thread).count == 2)

        // Lee (invite right) adds Kim; Kim reads nothing until someone wraps the key to her.
        let kim = try space.add("Kim", by: lee)
        #expect(
            try harness.send("GET", "\(space.base)/threads/\(thread)/wraps", token: kim.token).array("wraps")
                .isEmpty)

        // Inbox: Paul sends Lee a note; only Lee can read it; Lee deletes it.
        let note = try space.owner.identity.note(
            Array("invite policy".utf8), to: lee.record, in: space.space, from: space.owner.id)
        let posted = try harness.send(
            "POST", "\(space.base)/inbox", token: space.owner.token, json: ["note": note])
        #expect(posted.status == 201, "\(posted.json)")
        #expect(try harness.send("GET", "\(space.base)/inbox", token: sam.token).array("notes").isEmpty)
        let inbox = try harness.send("GET", "\(space.base)/inbox", token: lee.token)
        let entry = try #require(inbox.array("notes").first)
        let received = try JSONDecoder().decode(
            InboxNote.self, from: JSONSerialization.data(withJSONObject: entry["note"] ?? [:]))
        #expect(
            try received.open(with: lee.identity, verifyingAgainst: space.roster)
                == Array("invite policy".utf8))
        let noteID = (entry["id"] as? NSNumber)?.int64Value ?? -1
        #expect(
            try harness.send("DELETE", "\(space.base)/inbox/\(noteID)", token: sam.token).error
                == "unknown_note")
        #expect(try harness.send("DELETE", "\(space.base)/inbox/\(noteID)", token: lee.token).status == 200)
        #expect(try harness.send("GET", "\(space.base)/inbox", token: lee.token).array("notes").isEmpty)

        // Remove Sam. Both of Sam's tokens stop working at once.
        try space.remove(sam)
        for token in [sam.token, samPhoneToken] {
            let refused = try harness.send("GET", "\(space.base)/threads", token: token)
            #expect(refused.status == 401)
            #expect(refused.error == "token_revoked")
        }
        // Sam cannot sign in again either.
        let again = try harness.send("POST", "\(space.base)/sign-in/challenge", json: ["member": sam.id])
        let againProof = try sam.identity.signIn(
            to: space.space, as: sam.id, challenge: try #require(Base64URL.decode(again.string("challenge"))))
        #expect(
            try harness.send("POST", "\(space.base)/sign-in", json: ["proof": againProof]).error
                == "not_member")

        // A thread created after the removal: nobody can store a wrap for Sam.
        let (later, laterKey) = try space.createThread(by: space.owner, for: [space.owner, lee])
        let samWrap = space.owner.identity.wrap(laterKey, for: sam.record, in: space.space, thread: later)
        let refused = try harness.send(
            "POST", "\(space.base)/threads/\(later)/wraps", token: space.owner.token,
            json: ["wraps": [samWrap]])
        #expect(refused.status == 422)
        #expect(refused.error == "wrong_recipient")
        let storedWraps = try harness.dump()["wraps"] ?? []
        let samWrapsForLater = storedWraps.filter {
            $0[1] == .blob(later.bytes) && $0[2] == .blob(sam.id.bytes)
        }
        #expect(samWrapsForLater.isEmpty)
        #expect(storedWraps.filter { $0[2] == .blob(sam.id.bytes) }.count == 1)
        sam.token = ""
        try space.post("After Sam left", by: space.owner, thread: later, key: laterKey)
        #expect(try space.read(as: lee, thread: later) == ["After Sam left"])

        // Lee's wrap for the first thread was signed by Sam, who has left: clients refuse it, and
        // a current member may replace it. Sam's old messages still verify (former members stay
        // in the roster).
        #expect(
            throws: KeyModelError(
                .signerNotMember, "This key wrap was signed by someone who is not a member.")
        ) {
            _ = try space.read(as: lee, thread: thread)
        }
        let leeAgain = space.owner.identity.wrap(key, for: lee.record, in: space.space, thread: thread)
        let rewrap = try harness.send(
            "POST", "\(space.base)/threads/\(thread)/wraps", token: space.owner.token,
            json: ["wraps": [leeAgain]])
        #expect(rewrap.status == 201, "\(rewrap.json)")
        #expect(try space.read(as: lee, thread: thread).contains("Thanks Paul"))
        // A wrap signed by a current member cannot be replaced.
        let duplicate = try harness.send(
            "POST", "\(space.base)/threads/\(thread)/wraps", token: space.owner.token,
            json: ["wraps": [leeAgain]])
        #expect(duplicate.error == "wrap_exists")

        // The roster as the server reports it matches what clients verified.
        let list = try harness.send("GET", "\(space.base)/members", token: lee.token)
        #expect(list.array("members").count == 3)
        #expect(list.array("formerMembers").count == 1)
        let info = try harness.send("GET", space.base, token: lee.token)
        #expect(info.string("you") == lee.id.base64URL)
        #expect((info.object("head")["sequence"] as? NSNumber)?.intValue == 4)
    }

    @Test func brandingAndTokens() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]
        let avatar: [String: Any] = ["contentType": "image/png", "data": Base64URL.encode(png)]
        // Plain members may not change branding; the owner and the admin token may.
        #expect(
            try harness.send("PUT", "\(space.base)/branding", token: sam.token, json: ["name": "X"]).status
                == 403)
        let updated = try harness.send(
            "PUT", "\(space.base)/branding", token: space.owner.token,
            json: ["name": "Family 2", "avatar": avatar])
        #expect(updated.status == 200, "\(updated.json)")
        let image = try harness.send("GET", "/api/server-avatar?space=\(space.space)")
        #expect(image.status == 200)
        #expect(image.raw.contentType == "image/png")
        #expect(image.raw.body == png)
        #expect(
            try harness.send(
                "PUT", "\(space.base)/branding", token: space.adminToken, json: ["removeAvatar": true]
            ).status == 200)
        #expect(try harness.send("GET", "/api/group").string("avatar") == "")

        // Tokens: a member makes a second one, lists only their own, revokes it.
        let second = try harness.send(
            "POST", "\(space.base)/tokens", token: sam.token, json: ["label": "tablet", "expiresIn": 3600])
        #expect(second.status == 201)
        let mine = try harness.send("GET", "\(space.base)/tokens", token: sam.token).array("tokens")
        #expect(mine.count == 2)
        #expect(mine.allSatisfy { $0["member"] as? String == sam.id.base64URL })
        #expect(
            try harness.send("GET", "\(space.base)/tokens", token: space.adminToken).array("tokens").count
                == 3)
        let ownerTokenID = try #require(
            try harness.send("GET", "\(space.base)/tokens", token: space.owner.token).array("tokens").first?[
                "id"] as? String)
        #expect(
            try harness.send("DELETE", "\(space.base)/tokens/\(ownerTokenID)", token: sam.token).error
                == "unknown_token")
        #expect(
            try harness.send("DELETE", "\(space.base)/tokens/\(second.string("id"))", token: sam.token).status
                == 200)
        #expect(
            try harness.send("GET", "\(space.base)/threads", token: second.string("token")).error
                == "token_revoked")
        #expect(try harness.send("GET", "\(space.base)/threads", token: sam.token).status == 200)

        // Expiry.
        let short = try harness.send(
            "POST", "\(space.base)/tokens", token: sam.token, json: ["expiresIn": 60])
        #expect(try harness.send("GET", "\(space.base)/threads", token: short.string("token")).status == 200)
        harness.clock.advance(by: 61)
        #expect(
            try harness.send("GET", "\(space.base)/threads", token: short.string("token")).error
                == "token_expired")
    }

    @Test func severalSpacesInOneServer() throws {
        let harness = try APIHarness()
        let one = try TestSpace.create(harness, name: "One")
        let two = try TestSpace.create(harness, name: "Two")
        #expect(try harness.send("GET", "/api/group").error == "space_required")
        #expect(try harness.send("GET", "/api/group?space=\(two.space)").string("name") == "Two")
        // A token of one space is worthless in the other, admin tokens included.
        #expect(
            try harness.send("GET", "\(two.base)/threads", token: one.owner.token).error == "token_invalid")
        #expect(
            try harness.send("GET", "\(two.base)/members", token: one.adminToken).error == "token_invalid")
    }

    @Test func concurrentCallersAreSerialised() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let (thread, key) = try space.createThread(by: space.owner, for: [space.owner, sam])
        let messages = (0..<40).map { index in
            (index % 2 == 0 ? space.owner : sam).identity.encrypt(
                Array("m\(index)".utf8), with: key, in: space.space, thread: thread,
                as: (index % 2 == 0 ? space.owner : sam).id)
        }
        let bodies = try messages.map {
            try JSONSerialization.data(withJSONObject: harness.plain(["message": $0]))
        }
        let tokens = (0..<40).map { $0 % 2 == 0 ? space.owner.token : sam.token }
        let api = harness.api
        let base = space.base
        let statuses = StatusBox()
        DispatchQueue.concurrentPerform(iterations: 40) { index in
            let response = api.handle(
                APIRequest(
                    method: "POST", target: "\(base)/threads/\(thread)/messages",
                    headers: ["authorization": "Bearer \(tokens[index])"], body: Array(bodies[index])))
            statuses.append(response.status)
        }
        #expect(statuses.values.count == 40)
        #expect(statuses.values.allSatisfy { $0 == 201 })
        let texts = try space.read(as: sam, thread: thread)
        #expect(Set(texts) == Set((0..<40).map { "m\($0)" }))
    }
}

@Suite struct ChangeObserverTests {
    @Test func reportsCommittedChangesOnly() throws {
        let changes = ChangeBox()
        let harness = try APIHarness(observer: { changes.append($0) })
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let (thread, key) = try space.createThread(by: space.owner, for: [space.owner, sam])
        let cursor = try space.post("hello", by: sam, thread: thread, key: key)
        #expect(
            changes.values == [
                .membership(space: space.space, sequence: 0), .membership(space: space.space, sequence: 1),
                .wraps(space: space.space, thread: thread),
                .message(space: space.space, thread: thread, cursor: cursor),
            ])
        // A refused request reports nothing.
        let message = sam.identity.encrypt(
            [1], with: key, in: space.space, thread: thread, as: space.owner.id)
        let refused = try harness.send(
            "POST", "\(space.base)/threads/\(thread)/messages", token: sam.token, json: ["message": message])
        #expect(refused.status == 403)
        #expect(changes.values.count == 4)
    }
}

/// Collects reported changes.
final class ChangeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [SpaceChange] = []
    func append(_ value: SpaceChange) { lock.withLock { storage.append(value) } }
    var values: [SpaceChange] { lock.withLock { storage } }
}

/// Collects values from concurrent callers.
final class StatusBox: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Int] = []
    func append(_ value: Int) { lock.withLock { storage.append(value) } }
    var values: [Int] { lock.withLock { storage } }
}
