import ClientCore
import Foundation
import PAKE
import SpaceModel
import SpaceServer
import Testing

/// The `/api/key-invite` endpoints on a real SQLite file with a settable clock: expiry, single use,
/// authorisation, and bad input that changes nothing.
@Suite struct KeyInviteAPITests {
    /// A filed device invite and the link secret behind it.
    struct Filed {
        let secret: LinkSecret
        var keys: LinkKeys { secret.derive() }
        var path: String { "/api/key-invite/\(keys.id)" }
        var claimBody: [String: Any] {
            [
                "claimSecret": keys.claimSecret.withUnsafeBytes { Base64URL.encode($0) },
                "deviceLabel": "phone",
            ]
        }
    }

    static func mintRequest(
        _ secret: LinkSecret, space: SpaceID, shape: InviteShape = .device, expiresIn: Int64 = 3600,
        uses: Int = 1, spaceName: String? = nil, sealedCount: Int = 64
    ) -> KeyInviteWire.MintRequest {
        let keys = secret.derive()
        return KeyInviteWire.MintRequest(
            id: keys.id, space: space, shape: shape,
            sealed: Base64URL.encode([UInt8](repeating: 9, count: sealedCount)),
            verifier: Base64URL.encode(keys.verifier), expiresIn: expiresIn, uses: uses, spaceName: spaceName)
    }

    static func mint(_ space: TestSpace, by member: TestMember, expiresIn: Int64 = 3600) throws -> Filed {
        let secret = LinkSecret.random()
        let reply = try space.harness.send(
            "POST", "/api/key-invite", token: member.token,
            body: Array(
                try JSONEncoder().encode(mintRequest(secret, space: space.space, expiresIn: expiresIn))))
        #expect(reply.status == 201, "\(reply.json)")
        return Filed(secret: secret)
    }

    @Test func expiredInvitesAreRefusedDistinctly() throws {
        let harness = try APIHarness()
        let space = try TestSpace.create(harness)
        let invite = try Self.mint(space, by: space.owner, expiresIn: 600)
        #expect(try harness.send("GET", invite.path).status == 200)
        harness.clock.advance(by: 600)
        let shown = try harness.send("GET", invite.path)
        #expect(shown.status == 410)
        #expect(shown.error == "invite_expired")
        let before = try harness.dump()
        let claimed = try harness.send("POST", invite.path + "/claim", json: invite.claimBody)
        #expect(claimed.status == 410)
        #expect(claimed.error == "invite_expired")
        #expect(try harness.dump() == before)
        // A wrong secret is told apart from an expired invite, and learns nothing more.
        var wrong = invite.claimBody
        wrong["claimSecret"] = Base64URL.encode([UInt8](repeating: 1, count: 32))
        #expect(try harness.send("POST", invite.path + "/claim", json: wrong).error == "claim_invalid")
        // The next mint forgets the expired invite's payload; the invite still answers expired.
        let sealedBefore = try #require(try harness.dump()["key_invites"]).filter {
            $0.contains(.blob([UInt8](repeating: 9, count: 64)))
        }
        #expect(sealedBefore.count == 1)
        _ = try Self.mint(space, by: space.owner)
        let rows = try #require(try harness.dump()["key_invites"])
        #expect(rows.count == 2)
        #expect(rows.filter { $0.contains(.blob([])) }.count == 1, "the expired payload is forgotten")
        #expect(try harness.send("GET", invite.path).error == "invite_expired")
    }

    @Test func usedInvitesAreRefusedDistinctlyAndForgetTheirPayload() throws {
        let harness = try APIHarness()
        let space = try TestSpace.create(harness)
        let invite = try Self.mint(space, by: space.owner)
        let shown = try harness.send("GET", invite.path)
        #expect(shown.status == 200)
        #expect(shown.string("sealed") == Base64URL.encode([UInt8](repeating: 9, count: 64)))
        #expect(shown.string("shape") == "device")
        #expect((shown["usesLeft"] as? Int) == 1)
        // Looking twice consumes nothing.
        #expect(try harness.send("GET", invite.path).status == 200)
        let first = try harness.send("POST", invite.path + "/claim", json: invite.claimBody)
        #expect(first.status == 201, "\(first.json)")
        #expect(first.string("member") == space.owner.id.base64URL)
        let second = try harness.send("POST", invite.path + "/claim", json: invite.claimBody)
        #expect(second.status == 410)
        #expect(second.error == "invite_used")
        #expect(try harness.send("GET", invite.path).error == "invite_used")
        let rows = try #require(try harness.dump()["key_invites"])
        #expect(rows.count == 1)
        #expect(rows[0].contains(.blob([])), "the sealed payload is forgotten after the last use")
        // The owner now has a second device token labelled "phone".
        let tokens = try harness.send("GET", "\(space.base)/tokens", token: space.owner.token)
        #expect(tokens.array("tokens").compactMap { $0["label"] as? String }.sorted() == ["laptop", "phone"])
    }

    @Test func mintingNeedsAnEntitledMember() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let secret = LinkSecret.random()
        func send(_ request: KeyInviteWire.MintRequest, token: String?) throws -> Reply {
            try harness.send(
                "POST", "/api/key-invite", token: token, body: Array(try JSONEncoder().encode(request)))
        }
        // A member invite without the invite right, without a token, with the admin token.
        let member = Self.mintRequest(secret, space: space.space, shape: .member)
        #expect(try send(member, token: sam.token).error == "not_authorised")
        #expect(try send(member, token: nil).error == "token_missing")
        #expect(try send(member, token: space.adminToken).error == "member_required")
        // The owner may invite, but must file the invite's signer with it.
        #expect(try send(member, token: space.owner.token).error == "invalid_event")
        // Setup invites name a space that does not exist yet.
        let setup = Self.mintRequest(secret, space: space.space, shape: .setup, spaceName: "Club")
        #expect(try send(setup, token: nil).error == "space_exists")
        // A device invite for yourself is fine for any member; its id is then taken.
        #expect(try send(Self.mintRequest(secret, space: space.space), token: sam.token).status == 201)
        #expect(
            try send(Self.mintRequest(secret, space: space.space), token: sam.token).error == "invite_exists")
    }

    @Test func setupMintingHonoursTheCreationToken() throws {
        var configuration = SpaceServerConfiguration()
        configuration.spaceCreationToken = "let-me-create"
        let harness = try APIHarness(configuration: configuration)
        let request = Self.mintRequest(.random(), space: .random(), shape: .setup, spaceName: "Club")
        let body = Array(try JSONEncoder().encode(request))
        #expect(try harness.send("POST", "/api/key-invite", body: body).error == "token_invalid")
        #expect(try harness.send("POST", "/api/key-invite", token: "let-me-create", body: body).status == 201)
    }

    @Test func badInputGetsAClearErrorAndChangesNothing() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let invite = try Self.mint(space, by: space.owner)
        _ = try space.add("Sam")
        let owner = space.owner.token
        let good = Self.mintRequest(.random(), space: space.space)
        func mutated(_ change: (inout [String: Any]) -> Void) throws -> [UInt8] {
            var object = try #require(
                try JSONSerialization.jsonObject(with: JSONEncoder().encode(good)) as? [String: Any])
            change(&object)
            return Array(try JSONSerialization.data(withJSONObject: object))
        }
        let cases: [(String, String, String, [UInt8], String?, Int, String)] = [
            ("unknown id", "GET", "/api/key-invite/\(KeyInviteID.random())", [], nil, 404, "unknown_invite"),
            ("malformed id", "GET", "/api/key-invite/not-an-id!", [], nil, 404, "unknown_invite"),
            ("wrong method", "DELETE", invite.path, [], nil, 405, "method_not_allowed"),
            ("unknown sub-route", "POST", invite.path + "/burn", [], nil, 404, "unknown_route"),
            ("no body", "POST", "/api/key-invite", [], owner, 400, "invalid_json"),
            (
                "short verifier", "POST", "/api/key-invite", try mutated { $0["verifier"] = "AAAA" }, owner,
                400,
                "invalid_field"
            ),
            (
                "tiny payload", "POST", "/api/key-invite", try mutated { $0["sealed"] = "AAAA" }, owner, 400,
                "invalid_field"
            ),
            (
                "huge payload", "POST", "/api/key-invite",
                try mutated { $0["sealed"] = Base64URL.encode([UInt8](repeating: 1, count: 20_000)) }, owner,
                400,
                "invalid_field"
            ),
            (
                "too long", "POST", "/api/key-invite", try mutated { $0["expiresIn"] = 999_999_999 }, owner,
                400,
                "invalid_field"
            ),
            (
                "too short", "POST", "/api/key-invite", try mutated { $0["expiresIn"] = 1 }, owner, 400,
                "invalid_field"
            ),
            (
                "device uses", "POST", "/api/key-invite", try mutated { $0["uses"] = 2 }, owner, 400,
                "invalid_field"
            ),
            (
                "zero uses", "POST", "/api/key-invite", try mutated { $0["uses"] = 0 }, owner, 400,
                "invalid_field"
            ),
            (
                "bad shape", "POST", "/api/key-invite", try mutated { $0["shape"] = "admin" }, owner, 400,
                "invalid_field"
            ),
            (
                "control name", "POST", "/api/key-invite", try mutated { $0["personName"] = "a\u{7}" }, owner,
                400,
                "invalid_field"
            ),
            (
                "unknown space", "POST", "/api/key-invite",
                try mutated { $0["space"] = SpaceID.random().base64URL },
                owner, 404, "unknown_space"
            ),
            ("claim without body", "POST", invite.path + "/claim", [], nil, 400, "invalid_json"),
            (
                "claim bad secret encoding", "POST", invite.path + "/claim",
                Array(#"{"claimSecret":"%%"}"#.utf8), nil,
                400, "invalid_field"
            ),
            (
                "claim short secret", "POST", invite.path + "/claim", Array(#"{"claimSecret":"AAAA"}"#.utf8),
                nil,
                403, "claim_invalid"
            ),
        ]
        let before = try harness.dump()
        for (name, method, target, body, token, status, code) in cases {
            var headers: [String: String] = [:]
            if let token { headers["Authorization"] = "Bearer \(token)" }
            let response = harness.api.handle(
                APIRequest(method: method, target: target, headers: headers, body: body))
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            #expect(response.status == status, "\(name): \(String(decoding: response.body, as: UTF8.self))")
            #expect(object?["error"] as? String == code, "\(name)")
            #expect(try harness.dump() == before, "\(name) changed the database")
        }
    }

    @Test func inviteSignersCannotSignIn() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        // File a member invite by hand: the owner adds the invite's signer with the invite right.
        let signer = DeviceIdentity.generate()
        let record = MemberRecord(id: .random(), keys: signer.publicKeys, rights: .invite, name: "(invite)")
        let uses = space.owner.identity.signInvite(
            space: space.space, inviter: space.owner.id, nameplate: SignedInvite.linkNameplate, createdAt: 0,
            expiresAt: Int64.max, uses: 1)
        let event = try space.roster.nextEvent(
            .memberAdded(record), signedBy: space.owner.identity, invite: uses)
        let secret = LinkSecret.random()
        let keys = secret.derive()
        let request = KeyInviteWire.MintRequest(
            id: keys.id, space: space.space, shape: .member,
            sealed: Base64URL.encode([UInt8](repeating: 3, count: 64)),
            verifier: Base64URL.encode(keys.verifier), expiresIn: 3600, uses: 1, rights: [],
            inviteEvent: event)
        let minted = try harness.send(
            "POST", "/api/key-invite", token: space.owner.token,
            body: Array(try JSONEncoder().encode(request)))
        #expect(minted.status == 201, "\(minted.json)")
        try space.roster.apply(event)
        let challenge = try harness.send(
            "POST", "\(space.base)/sign-in/challenge", json: ["member": record.id])
        let bytes = try #require(Base64URL.decode(challenge.string("challenge")))
        let proof = try signer.signIn(to: space.space, as: record.id, challenge: bytes)
        let signIn = try harness.send("POST", "\(space.base)/sign-in", json: ["proof": proof])
        #expect(signIn.status == 403)
        #expect(signIn.error == "not_member")
    }
}
