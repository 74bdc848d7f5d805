import ClientCore
import Foundation
import SpaceModel
import SpaceServer
import Testing

/// One device of a home account, as a client drives the home API.
struct HomeDevice {
    let identity = DeviceIdentity.generate()
    let accountKey: AccountKey
    var anchor: AnchorKeys { identity.anchor() }
    var id: AnchorID { anchor.id(accountKey: accountKey) }

    func upload(_ key: VaultKey) -> HomeWire.AnchorUpload {
        HomeWire.AnchorUpload(id: id, keys: anchor, wrap: key.wrap(for: anchor))
    }

    func sessionBody(at now: Int64) -> HomeWire.SessionRequest {
        HomeWire.SessionRequest(proof: identity.homeProof(.session, anchor: id, payload: [], now: now))
    }
}

@Suite struct HomeAPITests {
    static func home() throws -> APIHarness {
        var configuration = SpaceServerConfiguration()
        configuration.homeEnabled = true
        return try APIHarness(configuration: configuration)
    }

    /// Creates an account for a new device with `plaintext` sealed as the vault.
    /// `emailTicket` attaches a proved address; `status` is the answer expected.
    static func account(
        _ harness: APIHarness, plaintext: String = "first", emailTicket: String? = nil, status: Int = 201
    ) throws
        -> (HomeDevice, VaultKey, String)
    {
        let device = HomeDevice(accountKey: .random())
        let key = VaultKey.random(generation: 1)
        let vault = key.seal(Array(plaintext.utf8))
        let upload = device.upload(key)
        let payload = HomeWire.CreateAccountRequest.payload(anchor: upload, generation: 1, vault: vault)
        let body = HomeWire.CreateAccountRequest(
            anchor: upload, generation: 1, vault: vault,
            proof: device.identity.homeProof(
                .createAccount, anchor: device.id, payload: payload, now: harness.clock.seconds()))
        var json: [String: Any] = [
            "anchor": body.anchor, "generation": 1, "vault": body.vault, "proof": body.proof,
        ]
        json["emailTicket"] = emailTicket
        let reply = try harness.send("POST", "/api/home/account", json: json)
        #expect(reply.status == status, "\(reply.json)")
        return (device, key, reply.string("token"))
    }

    private static func session(_ harness: APIHarness, _ device: HomeDevice) throws -> Reply {
        try harness.send(
            "POST", "/api/home/session",
            json: ["proof": device.sessionBody(at: harness.clock.seconds()).proof])
    }

    @Test func createPullPushWithCompareAndSwap() throws {
        let harness = try Self.home()
        let (device, key, token) = try Self.account(harness)
        let got = try harness.send("GET", "/api/home/vault", token: token)
        #expect(got.status == 200)
        #expect(got["version"] as? Int == 1)
        let opened = try key.open(Base64URL.decode(got.string("vault")) ?? [])
        #expect(String(decoding: opened, as: UTF8.self) == "first")
        let unwrapped = try device.identity.unwrapVaultKey(Base64URL.decode(got.string("wrap")) ?? [])
        #expect(unwrapped == key)

        let second = Base64URL.encode(key.seal(Array("second".utf8)))
        let put = try harness.send(
            "PUT", "/api/home/vault", token: token, json: ["version": 1, "generation": 1, "vault": second])
        #expect(put.status == 200, "\(put.json)")
        #expect(put["version"] as? Int == 2)
        // A stale version is refused and changes nothing.
        let stale = try harness.send(
            "PUT", "/api/home/vault", token: token,
            json: ["version": 1, "generation": 1, "vault": Base64URL.encode(key.seal(Array("lost".utf8)))])
        #expect(stale.status == 409)
        #expect(stale.error == "version_conflict")
        let after = try harness.send("GET", "/api/home/vault", token: token)
        #expect(after["version"] as? Int == 2)
        #expect(after.string("vault") == second)
        // A wrong generation too.
        let wrongGeneration = try harness.send(
            "PUT", "/api/home/vault", token: token, json: ["version": 2, "generation": 2, "vault": second])
        #expect(wrongGeneration.status == 400)
    }

    @Test func signedRequestsRefuseReplayStaleUnknownAndForged() throws {
        let harness = try Self.home()
        let (device, _, _) = try Self.account(harness)
        let body = device.sessionBody(at: harness.clock.seconds())
        let first = try harness.send("POST", "/api/home/session", json: ["proof": body.proof])
        #expect(first.status == 201, "\(first.json)")
        let replayed = try harness.send("POST", "/api/home/session", json: ["proof": body.proof])
        #expect(replayed.status == 409)
        #expect(replayed.error == "replayed_signature")

        let old = device.sessionBody(at: harness.clock.seconds() - HomeProof.window - 1)
        let stale = try harness.send("POST", "/api/home/session", json: ["proof": old.proof])
        #expect(stale.status == 401)
        #expect(stale.error == "signature_expired")

        let stranger = HomeDevice(accountKey: .random())
        let unknown = try Self.session(harness, stranger)
        #expect(unknown.status == 401)
        #expect(unknown.error == "unknown_device")

        // Signed by another key in the device's name.
        let forged = stranger.identity.homeProof(
            .session, anchor: device.id, payload: [], now: harness.clock.seconds())
        let refused = try harness.send("POST", "/api/home/session", json: ["proof": forged])
        #expect(refused.status == 401)
        #expect(refused.error == "signature_invalid")

        // No session, a made-up session, an expired session.
        #expect(try harness.send("GET", "/api/home/vault").error == "session_missing")
        #expect(
            try harness.send(
                "GET", "/api/home/vault", token: Base64URL.encode([UInt8](repeating: 7, count: 32))
            )
            .error == "session_invalid")
        harness.clock.advance(by: 601)
        let expired = try harness.send("GET", "/api/home/vault", token: first.string("token"))
        #expect(expired.status == 401)
        #expect(expired.error == "session_expired")
    }

    @Test func enrolThenRemoveRotatesAndLocksTheRemovedDeviceOut() throws {
        let harness = try Self.home()
        let (a, key, token) = try Self.account(harness)
        let b = HomeDevice(accountKey: a.accountKey)
        let enrol = try harness.send(
            "POST", "/api/home/anchors", token: token, json: ["anchor": b.upload(key), "generation": 1])
        #expect(enrol.status == 201, "\(enrol.json)")
        let again = try harness.send(
            "POST", "/api/home/anchors", token: token, json: ["anchor": b.upload(key), "generation": 1])
        #expect(again.error == "device_exists")
        let bSession = try Self.session(harness, b)
        #expect(bSession.status == 201)
        let bVault = try harness.send("GET", "/api/home/vault", token: bSession.string("token"))
        #expect(try b.identity.unwrapVaultKey(Base64URL.decode(bVault.string("wrap")) ?? []) == key)
        let listed = try harness.send("GET", "/api/home/anchors", token: token)
        #expect(listed.array("anchors").count == 2)

        let newKey = VaultKey.random(generation: 2)
        let vault = Base64URL.encode(newKey.seal(Array("rotated".utf8)))
        // B cannot remove A's device by leaving A's wrap out, nor remove itself.
        let missing = try harness.send(
            "POST", "/api/home/rotate", token: token,
            json: ["revoke": [b.id], "version": 1, "generation": 2, "vault": vault, "wraps": [] as [Any]])
        #expect(missing.error == "devices_changed")
        let selfRemoval = try harness.send(
            "POST", "/api/home/rotate", token: token,
            json: [
                "revoke": [a.id], "version": 1, "generation": 2, "vault": vault,
                "wraps": [HomeWire.AnchorWrap(anchor: b.id, wrap: newKey.wrap(for: b.anchor))],
            ])
        #expect(selfRemoval.error == "cannot_remove_self")
        let rotated = try harness.send(
            "POST", "/api/home/rotate", token: token,
            json: [
                "revoke": [b.id], "version": 1, "generation": 2, "vault": vault,
                "wraps": [HomeWire.AnchorWrap(anchor: a.id, wrap: newKey.wrap(for: a.anchor))],
            ])
        #expect(rotated.status == 200, "\(rotated.json)")
        // B's session ended and B cannot start another.
        let bOld = try harness.send("GET", "/api/home/vault", token: bSession.string("token"))
        #expect(bOld.status == 401)
        let bNew = try Self.session(harness, b)
        #expect(bNew.status == 403)
        #expect(bNew.error == "device_revoked")
        // A reads the new generation with its new wrap.
        let aVault = try harness.send("GET", "/api/home/vault", token: token)
        #expect(aVault["generation"] as? Int == 2)
        let aKey = try a.identity.unwrapVaultKey(Base64URL.decode(aVault.string("wrap")) ?? [])
        #expect(try aKey.open(Base64URL.decode(aVault.string("vault")) ?? []) == Array("rotated".utf8))
        // B's old row keeps no wrap.
        let anchors = try harness.dump()["home_anchors"] ?? []
        #expect(anchors.contains { $0[0] == .blob(b.id.bytes) && $0[5] == .blob([]) })
    }

    @Test func homeRoutesAreOffUnlessEnabled() throws {
        let harness = try APIHarness()
        let reply = try harness.send("POST", "/api/home/session", json: ["proof": "x"])
        #expect(reply.status == 404)
        #expect(reply.error == "unknown_route")
        let on = try Self.home()
        #expect(try on.send("GET", "/api/home/session").status == 405)
        #expect(try on.send("POST", "/api/home/session", json: ["proof": "x"]).status == 400)
    }

    @Test func databaseHoldsNothingReadable() throws {
        let harness = try Self.home()
        let secret = "Family-space-name-and-token-XYZ"
        let (_, key, _) = try Self.account(harness, plaintext: secret)
        let files = try harness.rawFiles()
        #expect(!files.isEmpty)
        let text = String(decoding: files, as: UTF8.self)
        #expect(!text.contains(secret))
        #expect(!text.contains(key.base64URL))
    }
}
