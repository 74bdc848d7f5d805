import ClientCore
import Foundation
import Net
import SpaceModel
import SpaceServer
import TestSupport
import Testing

/// A client that deviates from the sign-in protocol: replays a signed challenge, alters or
/// forges one, uses one after it expired, uses one another member asked for, or signs in after
/// the server restarted. Each gets `challenge_invalid`, and the honest path still works.
@Suite struct SignInChallengeTests {
    private func challenge(_ harness: APIHarness, _ space: TestSpace, for member: TestMember) throws
        -> [UInt8]
    {
        let reply = try harness.send(
            "POST", "\(space.base)/sign-in/challenge", json: ["member": member.id])
        #expect(reply.status == 201, "\(reply.json)")
        return try #require(Base64URL.decode(reply.string("challenge")))
    }

    private func signIn(
        _ harness: APIHarness, _ space: TestSpace, _ member: TestMember, challenge: [UInt8],
        to target: SpaceID? = nil
    ) throws -> Reply {
        let proof = try member.identity.signIn(to: target ?? space.space, as: member.id, challenge: challenge)
        return try harness.send("POST", "\(space.base)/sign-in", json: ["proof": proof, "label": "phone"])
    }

    @Test("the same signed challenge twice: the second is refused")
    func replay() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let bytes = try challenge(harness, space, for: sam)
        let proof = try sam.identity.signIn(to: space.space, as: sam.id, challenge: bytes)
        let first = try harness.send("POST", "\(space.base)/sign-in", json: ["proof": proof])
        #expect(first.status == 201, "\(first.json)")
        let second = try harness.send("POST", "\(space.base)/sign-in", json: ["proof": proof])
        #expect(second.status == 401)
        #expect(second.error == "challenge_invalid")
    }

    @Test("a challenge altered in any byte, or made up, is refused; the original still works")
    func alteredOrForged() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let bytes = try challenge(harness, space, for: sam)
        // Every byte: whatever the server keeps in it (nonce, expiry, its own tag) is covered.
        for index in bytes.indices {
            var altered = bytes
            altered[index] ^= 0x01
            let reply = try signIn(harness, space, sam, challenge: altered)
            #expect(reply.error == "challenge_invalid", "byte \(index): \(reply.json)")
        }
        let forged = try signIn(
            harness, space, sam, challenge: (0..<bytes.count).map { _ in UInt8.random(in: 0...255) })
        #expect(forged.error == "challenge_invalid")
        #expect(try signIn(harness, space, sam, challenge: bytes).status == 201)
    }

    @Test("a challenge from one space is refused in another")
    func otherSpace() throws {
        let harness = try APIHarness()
        var family = try TestSpace.create(harness)
        var work = try TestSpace.create(harness, name: "Work")
        let sam = try family.add("Sam")
        _ = try work.add("Lee")
        let bytes = try challenge(harness, family, for: sam)
        // Signed for the other space and sent there: the challenge is the family's.
        let proof = try sam.identity.signIn(to: work.space, as: sam.id, challenge: bytes)
        let reply = try harness.send("POST", "\(work.base)/sign-in", json: ["proof": proof])
        #expect(reply.status == 401)
        #expect(reply.error == "challenge_invalid")
        #expect(try signIn(harness, family, sam, challenge: bytes).status == 201)
    }

    @Test("an expired challenge is refused")
    func expired() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let bytes = try challenge(harness, space, for: sam)
        harness.clock.advance(by: Double(SpaceServerConfiguration().challengeLifetime + 1))
        let reply = try signIn(harness, space, sam, challenge: bytes)
        #expect(reply.status == 401)
        #expect(reply.error == "challenge_invalid")
    }

    @Test("a challenge asked for by one member is refused to another")
    func otherMember() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let lee = try space.add("Lee")
        let samsChallenge = try challenge(harness, space, for: sam)
        let reply = try signIn(harness, space, lee, challenge: samsChallenge)
        #expect(reply.status == 401, "\(reply.json)")
        #expect(reply.error == "challenge_invalid")
        #expect(try signIn(harness, space, sam, challenge: samsChallenge).status == 201)
    }

    @Test("an admission's challenges each sign in their own member only, once")
    func admissionChallenges() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        func joiner(_ name: String) -> TestMember {
            TestMember(identity: DeviceIdentity.generate(), id: .random(), token: "", rights: [], name: name)
        }
        let sam = joiner("Sam")
        let lee = joiner("Lee")
        let ann = joiner("Ann")
        var events: [MembershipEvent] = []
        for member in [sam, lee] {
            events.append(
                try space.roster.nextEvent(.memberAdded(member.record), signedBy: space.owner.identity))
            try space.roster.apply(events[events.count - 1])
        }
        // Two added in one request, then one alone: each answer carries a challenge.
        let together = try harness.send(
            "POST", "\(space.base)/members", token: space.owner.token, json: ["events": events])
        #expect(together.status == 201, "\(together.json)")
        let alone = try space.roster.nextEvent(.memberAdded(ann.record), signedBy: space.owner.identity)
        let single = try harness.send(
            "POST", "\(space.base)/members", token: space.owner.token, json: ["event": alone])
        #expect(single.status == 201, "\(single.json)")
        try space.roster.apply(alone)
        let challenges = try (together.array("appended") + [single.json]).map {
            try #require(Base64URL.decode($0["signInChallenge"] as? String ?? ""))
        }
        #expect(challenges.count == 3 && Set(challenges).count == 3)
        // Each is bound to the member it was issued for.
        #expect(try signIn(harness, space, lee, challenge: challenges[0]).error == "challenge_invalid")
        #expect(try signIn(harness, space, sam, challenge: challenges[1]).error == "challenge_invalid")
        #expect(try signIn(harness, space, sam, challenge: challenges[2]).error == "challenge_invalid")
        #expect(try signIn(harness, space, sam, challenge: challenges[0]).status == 201)
        #expect(try signIn(harness, space, lee, challenge: challenges[1]).status == 201)
        #expect(try signIn(harness, space, ann, challenge: challenges[2]).status == 201)
        // And good once.
        #expect(try signIn(harness, space, sam, challenge: challenges[0]).error == "challenge_invalid")
        // They expire as any other.
        let bea = joiner("Bea")
        let late = try space.roster.nextEvent(.memberAdded(bea.record), signedBy: space.owner.identity)
        let reply = try harness.send(
            "POST", "\(space.base)/members", token: space.owner.token, json: ["event": late])
        #expect(reply.status == 201, "\(reply.json)")
        harness.clock.advance(by: Double(SpaceServerConfiguration().challengeLifetime + 1))
        let expired = try #require(Base64URL.decode(reply.string("signInChallenge")))
        #expect(try signIn(harness, space, bea, challenge: expired).error == "challenge_invalid")
    }

    @Test("a sign-in with eventAt answers with that event as the list gives it, and none past the head")
    func signInWithEvent() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let sequence = space.roster.nextSequence - 1
        let listed = try harness.send(
            "GET", "\(space.base)/events?from=\(sequence)&limit=1", token: space.owner.token)
        let listedText = String(decoding: listed.raw.body, as: UTF8.self)
        func signIn(eventAt: UInt64?) throws -> Reply {
            let proof = try sam.identity.signIn(
                to: space.space, as: sam.id, challenge: challenge(harness, space, for: sam))
            var body: [String: Any] = ["proof": proof]
            if let eventAt { body["eventAt"] = Int(eventAt) }
            return try harness.send("POST", "\(space.base)/sign-in", json: body)
        }
        let answer = try signIn(eventAt: sequence)
        #expect(answer.status == 201, "\(answer.json)")
        // The very bytes the list holds, and the token as before.
        let text = String(decoding: answer.raw.body, as: UTF8.self)
        let stored = String(listedText.dropFirst(#"{"events":["#.count).dropLast(2))
        #expect(text.hasPrefix(#"{"event":"# + stored + ","))
        #expect(Set(answer.json.keys) == ["event", "token", "id", "member", "expiresAt"])
        let decoded = try WireJSON.decode(SpaceWire.SignedIn.self, from: answer.raw.body)
        let event = try #require(try SpaceWire.EventList.decode(listed.raw.body, keysVouched: false).first)
        #expect(decoded.event == event && event.sequence == sequence && event.change.adds(sam.id))
        #expect(try harness.send("GET", "\(space.base)", token: decoded.token).status == 200)
        // What `JSONEncoder` writes for the same answer.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(Array(try encoder.encode(decoded)) == answer.raw.body)
        // Past the head: no event. Without the question: the answer as before.
        let past = try signIn(eventAt: sequence + 1)
        #expect(past.status == 201 && Set(past.json.keys) == ["token", "id", "member", "expiresAt"])
        let plain = try signIn(eventAt: nil)
        #expect(plain.status == 201 && Set(plain.json.keys) == ["token", "id", "member", "expiresAt"])
    }

    @Test("a server restarted between challenge and sign-in accepts it once, and not again")
    func restart() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let bytes = try challenge(harness, space, for: sam)
        let proof = try sam.identity.signIn(to: space.space, as: sam.id, challenge: bytes)
        // A second server on the same file: what a restarted process reads.
        let restarted = try SpaceAPI(databasePath: harness.databasePath, clock: harness.clock)
        let body = try JSONSerialization.data(withJSONObject: harness.plain(["proof": proof]))
        let request = APIRequest(
            method: "POST", target: "\(space.base)/sign-in", headers: ["content-type": "application/json"],
            body: Array(body))
        #expect(restarted.handle(request).status == 201)
        // The first server sees it used, too.
        #expect(
            try harness.send("POST", "\(space.base)/sign-in", json: ["proof": proof]).error
                == "challenge_invalid")
        #expect(restarted.handle(request).status == 401)
    }

    @Test("used challenges are kept until they expire, then cleared")
    func usedAreCleared() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let lifetime = SpaceServerConfiguration().challengeLifetime
        #expect(try signIn(harness, space, sam, challenge: challenge(harness, space, for: sam)).status == 201)
        let first = try #require(harness.dump()["used_sign_in_challenges"])
        #expect(first.count == 1)
        harness.clock.advance(by: Double(lifetime + 1))
        #expect(try signIn(harness, space, sam, challenge: challenge(harness, space, for: sam)).status == 201)
        let second = try #require(harness.dump()["used_sign_in_challenges"])
        #expect(second.count == 1)
        #expect(second != first)
    }

    /// Sam signs in with a proof an eavesdropper keeps; past its expiry another sign-in clears
    /// the used challenge. Returns the kept proof, a replay of which must stay refused.
    private func proofWhoseChallengeWasCleared(_ harness: APIHarness) throws -> (TestSpace, SignInProof) {
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let bytes = try challenge(harness, space, for: sam)
        let proof = try sam.identity.signIn(to: space.space, as: sam.id, challenge: bytes)
        #expect(try harness.send("POST", "\(space.base)/sign-in", json: ["proof": proof]).status == 201)
        harness.clock.advance(by: Double(SpaceServerConfiguration().challengeLifetime + 1))
        #expect(try signIn(harness, space, sam, challenge: challenge(harness, space, for: sam)).status == 201)
        return (space, proof)
    }

    @Test("a used challenge cleared after it expired stays refused when the clock goes back")
    func clockGoesBack() throws {
        let harness = try APIHarness()
        let (space, proof) = try proofWhoseChallengeWasCleared(harness)
        harness.clock.advance(by: -Double(SpaceServerConfiguration().challengeLifetime))
        let replay = try harness.send("POST", "\(space.base)/sign-in", json: ["proof": proof])
        #expect(replay.status == 401, "\(replay.json)")
        #expect(replay.error == "challenge_invalid")
    }

    @Test("a used challenge cleared before a restart stays refused when the clock then goes back")
    func clockGoesBackAfterARestart() throws {
        let harness = try APIHarness()
        let (space, proof) = try proofWhoseChallengeWasCleared(harness)
        // The process restarts (a new server on the file knows nothing of the clearing), and
        // the clock is set back to when the captured proof was fresh.
        let restarted = try SpaceAPI(databasePath: harness.databasePath, clock: harness.clock)
        harness.clock.advance(by: -Double(SpaceServerConfiguration().challengeLifetime))
        let body = try JSONSerialization.data(withJSONObject: harness.plain(["proof": proof]))
        let reply = restarted.handle(
            APIRequest(
                method: "POST", target: "\(space.base)/sign-in",
                headers: ["content-type": "application/json"],
                body: Array(body)))
        #expect(reply.status == 401)
    }

    @Test("the real eleven-server killed between challenge and sign-in accepts it once when back")
    func killedServer() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let port = try TestSupport.freePort()
            let server = RestartingServer(
                TestSupport.productPath("eleven-server"),
                [
                    "--listen", "127.0.0.1:\(port)", "--db", dir.appendingPathComponent("s.sqlite").path,
                    "--quiet",
                ],
                port: port)
            try server.start()
            defer { server.stop() }
            let url = "http://127.0.0.1:\(port)"
            let identity = DeviceIdentity.generate()
            let saved = try SpaceSession.createSpace(
                name: "Family", server: url, identity: identity, ownerName: "Paul")
            let base = "\(url)/api/spaces/\(saved.space)"
            let asked = try HTTPClient.send(
                .post, url: base + "/sign-in/challenge",
                json: SpaceWire.ChallengeRequest(member: saved.member))
            #expect(asked.status.code == 201)
            let challenge = try JSONDecoder().decode(SpaceWire.Challenge.self, from: Data(asked.body))
            let proof = try identity.signIn(
                to: saved.space, as: saved.member,
                challenge: try #require(Base64URL.decode(challenge.challenge)))

            try server.killAndRestart()
            let request = SpaceWire.SignInRequest(proof: proof, label: "phone")
            let first = try HTTPClient.send(.post, url: base + "/sign-in", json: request)
            #expect(first.status.code == 201, "\(String(decoding: first.body, as: UTF8.self))")
            let again = try HTTPClient.send(.post, url: base + "/sign-in", json: request)
            #expect(again.status.code == 401)
            #expect(String(decoding: again.body, as: UTF8.self).contains("challenge_invalid"))
        }
    }
}
