import ClientCore
import Foundation
import PAKE
import SpaceModel
import TestSupport
import Testing

/// Issue #20 item 5: a full-length member link carries its signer's private key, and the signer is
/// a member who may add people. The adversary here is the link's holder (who keeps that key after
/// claiming, or after the link expired unclaimed) together with the space server, which stores in
/// its own database whatever it likes: it signs with the link's key an event adding Mallory at the
/// head of the stored chain (first dropping the signer's removal of itself, which the same key
/// signed) and serves it. The real `eleven-server` is stopped, its SQLite file rewritten, started
/// again; then Paul's device (`eleven members`) verifies the chain as every member does.
@Suite(.serialized) struct LinkSignerAttackTests {
    typealias Server = LinkEndToEndTests.LoggedServer

    /// The space's chain as the server's database holds it (one space per test server).
    static func storedEvents(_ server: Server) throws -> [MembershipEvent] {
        try TestSupport.querySQL(database: server.database, "SELECT body FROM events ORDER BY sequence").map {
            try JSONDecoder().decode(MembershipEvent.self, from: Data($0[0].utf8))
        }
    }

    /// The link's signer identity, as whoever holds the link opens it from the payload the server
    /// was given at minting (the server keeps a copy of the sealed payload, the holder has the key).
    static func linkSigner(_ server: Server, link: String) throws -> (MemberID, DeviceIdentity) {
        let space = try #require(try storedEvents(server).first?.space)
        let keys = try InviteLink(parsing: link).secret.derive()
        let rows = try TestSupport.querySQL(
            database: server.database, "SELECT sealed FROM key_invites WHERE id = X'\(keys.id.bytes.hex)'")
        let sealed = try #require(rows.first?.first.flatMap(Self.bytes(hex:)))
        let payload = try InvitePayload.open(
            sealed, id: keys.id, shape: .member, space: space, wrapKey: keys.wrapKey)
        return (try #require(payload.member), try #require(payload.identity))
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        return stride(from: 0, to: digits.count, by: 2).compactMap {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)
        }
    }

    /// The attack: Mallory added with the link's key at the head of the stored chain, the signer's
    /// removal of itself (if stored last) dropped first. Returns Mallory's member id.
    static func forgeAddition(_ server: Server, signer: (MemberID, DeviceIdentity)) throws -> MemberID {
        var events = try storedEvents(server)
        let space = try #require(events.first?.space)
        let (signerID, signer) = signer
        if case .memberRemoved(let id) = events.last?.change, id == signerID, events.last?.signer == signerID
        {
            events.removeLast()
        }
        let last = try #require(events.last)
        let mallory = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "Mallory")
        let forged = MembershipEvent.make(
            space: space, sequence: last.sequence + 1, previous: last.hash, change: .memberAdded(mallory),
            signer: signerID, identity: signer)
        let body = String(decoding: try JSONEncoder().encode(forged), as: UTF8.self)
            .replacingOccurrences(of: "'", with: "''")
        try server.restart {
            try TestSupport.runSQL(
                database: server.database, "DELETE FROM events WHERE sequence > \(last.sequence)")
            let inserted = try TestSupport.runSQL(
                database: server.database,
                "INSERT INTO events (space_id, sequence, hash, body) VALUES (X'\(space.bytes.hex)', "
                    + "\(forged.sequence), X'\(forged.hash.bytes.hex)', '\(body)')")
            #expect(inserted == 1)
        }
        return mallory.id
    }

    /// What Paul's device makes of the chain the server now serves: the attack succeeded when it
    /// lists Mallory as a member.
    static func paulsView(_ paul: ElevenHome, mallory: MemberID) throws -> (accepted: Bool, output: String) {
        let result = try paul.run(["members", "--json"])
        let accepted = result.status == 0 && result.stdout.contains(mallory.base64URL)
        return (accepted, "eleven members: exit \(result.status); \(result.stdout)\(result.stderr)")
    }

    /// After the link's one use, its key adds nobody: the claim that spent the use retired it.
    @Test func aUsedUpLinksKeyAddsNobodyEvenWithTheServer() async throws {
        try await LinkEndToEndTests().withServer { server in
            let paul = try LinkEndToEndTests.paul(server)
            let link = try LinkEndToEndTests.mint(paul, ["--name", "Lee"])
            let signer = try Self.linkSigner(server, link: link)
            let lee = try ElevenHome("lee")
            let joined = try LinkEndToEndTests.join(lee, link, ["--yes"])
            #expect(joined.status == 0, "\(joined.stderr)")

            let mallory = try Self.forgeAddition(server, signer: signer)
            let (accepted, output) = try Self.paulsView(paul, mallory: mallory)
            print("used-up link, forged addition of Mallory: \(accepted ? "ACCEPTED" : "refused"); \(output)")
            #expect(!accepted, "Paul's device accepted Mallory, added with a used-up link's key: \(output)")
            // Lee, who joined honestly, is in the chain the server served before the forgery.
            #expect(try Self.storedEvents(server).count >= 3)
        }
    }

    /// After the link expired unclaimed and the inviter's device read the space, its key adds
    /// nobody: that device retired the signer by the expiry the inviter signed, not the server's word.
    @Test func anExpiredLinksKeyAddsNobodyOnceTheInvitersDeviceReadTheSpace() async throws {
        try await LinkEndToEndTests().withServer { server in
            let paul = try LinkEndToEndTests.paul(server)
            let link = try LinkEndToEndTests.mint(paul, ["--name", "Lee", "--expires", "60"])
            let signer = try Self.linkSigner(server, link: link)
            // The shortest lifetime a link may have; nothing here can move the clocks.
            Thread.sleep(forTimeInterval: 63)
            #expect(try paul.run(["members"]).status == 0)

            let mallory = try Self.forgeAddition(server, signer: signer)
            let (accepted, output) = try Self.paulsView(paul, mallory: mallory)
            print("expired link, forged addition of Mallory: \(accepted ? "ACCEPTED" : "refused"); \(output)")
            #expect(!accepted, "Paul's device accepted Mallory, added with an expired link's key: \(output)")
        }
    }
}
