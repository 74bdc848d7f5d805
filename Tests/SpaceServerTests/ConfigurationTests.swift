import ClientCore
import Foundation
import SpaceModel
import SpaceServer
import Testing

@Suite struct ConfigurationTests {
    @Test func creationTokenGuardsSpaceCreation() throws {
        var configuration = SpaceServerConfiguration()
        configuration.spaceCreationToken = "operator-secret"
        let harness = try APIHarness(configuration: configuration)
        let genesis = DeviceIdentity.generate().createSpace(.random(), as: .random())
        let body: [String: Any] = ["name": "Family", "genesis": genesis]
        #expect(try harness.send("POST", "/api/spaces", json: body).error == "token_invalid")
        #expect(
            try harness.send("POST", "/api/spaces", token: "operator-secreT", json: body).error
                == "token_invalid")
        #expect(try harness.dump()["spaces"]?.isEmpty == true)
        #expect(try harness.send("POST", "/api/spaces", token: "operator-secret", json: body).status == 201)
    }

    @Test func threadsListWithOpaqueMetadata() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let thread = ThreadID.random()
        let key = ThreadKey.random()
        let metadata = Base64URL.encode(
            sam.identity.encrypt(
                Array("Holidays".utf8), with: key, in: space.space, thread: thread, as: sam.id
            ).ciphertext)
        let created = try harness.send(
            "POST", "\(space.base)/threads", token: sam.token,
            json: [
                "thread": thread,
                "wraps": [sam.identity.wrap(key, for: sam.record, in: space.space, thread: thread)],
                "metadata": metadata,
            ])
        #expect(created.status == 201, "\(created.json)")
        let list = try harness.send("GET", "\(space.base)/threads", token: space.adminToken).array("threads")
        #expect(list.count == 1)
        #expect(list.first?["id"] as? String == thread.base64URL)
        #expect(list.first?["createdBy"] as? String == sam.id.base64URL)
        #expect(list.first?["metadata"] as? String == metadata)
        let all = try harness.send("GET", "\(space.base)/wraps", token: sam.token).array("wraps")
        #expect(all.count == 1)
    }

    @Test func limitsFromConfiguration() throws {
        var configuration = SpaceServerConfiguration()
        configuration.maximumWrapsPerRequest = 2
        let harness = try APIHarness(configuration: configuration)
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let lee = try space.add("Lee")
        let thread = ThreadID.random()
        let key = ThreadKey.random()
        let wraps = [space.owner, sam, lee].map {
            space.owner.identity.wrap(key, for: $0.record, in: space.space, thread: thread)
        }
        let refused = try harness.send(
            "POST", "\(space.base)/threads", token: space.owner.token,
            json: ["thread": thread, "wraps": wraps])
        #expect(refused.status == 413)
        #expect(refused.error == "too_many_wraps")
        // A challenge names the member it is for.
        #expect(try harness.send("POST", "\(space.base)/sign-in/challenge").error == "invalid_json")
    }

    @Test func moreRefusals() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let before = try harness.dump()
        let basic = harness.api.handle(
            APIRequest(
                method: "GET", target: "\(space.base)/threads", headers: ["authorization": "Basic abc"]))
        #expect(basic.status == 401)
        let challenge = try harness.send("POST", "\(space.base)/sign-in/challenge", json: ["member": sam.id])
        let afterChallenge = try harness.dump()
        let proof = try sam.identity.signIn(
            to: .random(), as: sam.id,
            challenge: try #require(Base64URL.decode(challenge.string("challenge"))))
        #expect(
            try harness.send("POST", "\(space.base)/sign-in", json: ["proof": proof]).error == "wrong_context"
        )
        let png = Base64URL.encode([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let both = try harness.send(
            "PUT", "\(space.base)/branding", token: space.owner.token,
            json: ["avatar": ["contentType": "image/png", "data": png], "removeAvatar": true])
        #expect(both.error == "invalid_field")
        let notBase64 = try harness.send(
            "PUT", "\(space.base)/branding", token: space.owner.token,
            json: ["avatar": ["contentType": "image/png", "data": "***"]])
        #expect(notBase64.error == "invalid_field")
        #expect(try harness.dump() == afterChallenge)
        #expect(before["used_sign_in_challenges"]?.isEmpty == true)
    }
}
