import ClientCore
import Foundation
import SpaceModel
import TestSupport
import Testing

/// Issue #23 item 3: a member's device remembers the membership chain it verified, so the space
/// server cannot rewrite or roll back what that device already checked. The real `eleven-server`
/// (its SQLite file edited while it is stopped) and `eleven` as Paul, the owner, whose device has
/// verified the chain up to Lee's arrival (or removal) before the server deviates.
@Suite(.serialized) struct RosterForkTests {
    typealias Server = LinkEndToEndTests.LoggedServer

    /// Paul's space, Lee joined by a one-use link, and Paul's device having listed the members
    /// (so it verified the chain with Lee in it). Returns Paul, the link's signer, Lee's member id.
    static func leeJoined(_ server: Server) throws -> (
        paul: ElevenHome, signer: (MemberID, DeviceIdentity), lee: MemberID
    ) {
        let paul = try LinkEndToEndTests.paul(server)
        let link = try LinkEndToEndTests.mint(paul, ["--name", "Lee"])
        let signer = try LinkSignerAttackTests.linkSigner(server, link: link)
        let joined = try LinkEndToEndTests.join(try ElevenHome("lee"), link, ["--yes"])
        #expect(joined.status == 0, "\(joined.stderr)")
        let lee = try #require(
            try LinkSignerAttackTests.storedEvents(server).compactMap { event -> MemberID? in
                guard event.signer == signer.0, case .memberAdded(let record) = event.change else {
                    return nil
                }
                return record.id
            }.first)
        let listed = try paul.run(["members", "--json"])
        #expect(listed.status == 0 && listed.stdout.contains(lee.base64URL), "\(listed.stderr)")
        return (paul, signer, lee)
    }

    /// The server's events from `sequence` on replaced by `events` (the server stopped meanwhile).
    static func replaceEvents(_ server: Server, from sequence: UInt64, with events: [String]) throws {
        let space = try #require(try LinkSignerAttackTests.storedEvents(server).first?.space)
        try server.restart {
            _ = try TestSupport.runSQL(
                database: server.database, "DELETE FROM events WHERE sequence >= \(sequence)")
            for (offset, body) in events.enumerated() {
                let event = try JSONDecoder().decode(MembershipEvent.self, from: Data(body.utf8))
                let text = body.replacingOccurrences(of: "'", with: "''")
                let inserted = try TestSupport.runSQL(
                    database: server.database,
                    "INSERT INTO events (space_id, sequence, hash, body) VALUES (X'\(space.bytes.hex)', "
                        + "\(sequence + UInt64(offset)), X'\(event.hash.bytes.hex)', '\(text)')")
                #expect(inserted == 1)
            }
        }
    }

    /// `event`'s text with one character of its signature changed: what a server that edits a
    /// stored event without its signer's key can serve.
    static func editedSignature(_ event: MembershipEvent) throws -> String {
        var object = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(event)) as? [String: Any])
        let signature = try #require(object["signature"] as? String)
        object["signature"] = (signature.first == "A" ? "B" : "A") + signature.dropFirst()
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    /// `eleven members --json` on Paul's device: whether it listed `member` as current, and what it said.
    static func view(_ paul: ElevenHome, lists member: MemberID) throws -> (
        listed: Bool, code: String?, output: String
    ) {
        let result = try paul.run(["members", "--json"])
        var listed = false
        if result.status == 0,
            let object = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            let members = object["members"] as? [[String: Any]]
        {
            listed = members.contains { $0["id"] as? String == member.base64URL }
        }
        let code = result.status == 0 ? nil : try? errorCode(result)
        return (listed, code, "eleven members: exit \(result.status); \(result.stdout)\(result.stderr)")
    }

    /// (a) A validly signed fork: the holder of Lee's link (whose key the server keeps sealed, and
    /// the holder opens) and the server cut the chain back to the link's creation and let the
    /// link's one use admit Mallory instead of Lee. Every signature verifies from Paul's key, so
    /// only a device that remembers the chain it saw can tell.
    @Test func aForkedChainSignedByTheLinksKeyIsRefused() async throws {
        try await LinkEndToEndTests().withServer { server in
            let (paul, signer, lee) = try Self.leeJoined(server)
            let events = try LinkSignerAttackTests.storedEvents(server)
            let created = try #require(
                events.first { event in
                    if case .memberAdded(let record) = event.change { return record.id == signer.0 }
                    return false
                })
            let mallory = MemberRecord(
                id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "Mallory")
            let forged = MembershipEvent.make(
                space: created.space, sequence: created.sequence + 1, previous: created.hash,
                change: .memberAdded(mallory), signer: signer.0, identity: signer.1)
            try Self.replaceEvents(
                server, from: forged.sequence,
                with: [String(decoding: try JSONEncoder().encode(forged), as: UTF8.self)])

            let after = try Self.view(paul, lists: mallory.id)
            print(
                "forked chain (Mallory instead of Lee): \(after.listed ? "ACCEPTED" : "refused"); \(after.output)"
            )
            #expect(!after.listed, "Paul's device accepted a rewritten history: \(after.output)")
            #expect(after.code == "roster_fork", "\(after.output)")
            // Refused every time, not only once: the remembered chain is kept, not replaced.
            #expect(try Self.view(paul, lists: mallory.id).code == "roster_fork")
            #expect(try Self.view(paul, lists: lee).listed == false)
        }
    }

    /// (a) The last event Paul's device verified is edited in place on the server (its signature
    /// changed): whatever it says now, it is not the event that device checked.
    @Test func anEditedEventTheDeviceVerifiedIsRefused() async throws {
        try await LinkEndToEndTests().withServer { server in
            let (paul, _, lee) = try Self.leeJoined(server)
            let last = try #require(try LinkSignerAttackTests.storedEvents(server).last)
            let edited = try Self.editedSignature(last)
            try Self.replaceEvents(server, from: last.sequence, with: [edited])

            let after = try Self.view(paul, lists: lee)
            print("edited last verified event: \(after.code ?? "ACCEPTED"); \(after.output)")
            #expect(after.code == "roster_fork", "\(after.output)")
        }
    }

    /// Only what is new is read: an event before the last one Paul's device checked, edited on
    /// the server (its signature changed), is not fetched again; the device goes on from its own
    /// copy, which is what it verified. Before this change every command read and verified the
    /// whole chain, and this edit failed it with `bad_signature`.
    @Test func anEventBeforeTheLastCheckedOneIsNotReadAgain() async throws {
        try await LinkEndToEndTests().withServer { server in
            let (paul, _, lee) = try Self.leeJoined(server)
            let events = try LinkSignerAttackTests.storedEvents(server)
            #expect(events.count >= 3)
            let old = events[1]
            let edited = try Self.editedSignature(old)
            let later = try events.dropFirst(2).map {
                String(decoding: try JSONEncoder().encode($0), as: UTF8.self)
            }
            try Self.replaceEvents(server, from: old.sequence, with: [edited] + later)

            let after = try Self.view(paul, lists: lee)
            print(
                "edited event \(old.sequence) of \(events.count): \(after.code ?? "not read"); \(after.output)"
            )
            #expect(after.listed, "\(after.output)")
        }
    }

    /// (b) Rollback: Paul removes Lee, then the server drops the removal and serves the shorter,
    /// validly signed chain in which Lee is still a member (and would be given the keys of every
    /// thread made from then on).
    @Test func aChainShorterThanTheVerifiedOneIsRefused() async throws {
        try await LinkEndToEndTests().withServer { server in
            let (paul, _, lee) = try Self.leeJoined(server)
            let removed = try paul.run(["members", "remove", "Lee"])
            #expect(removed.status == 0, "\(removed.stderr)")
            #expect(try Self.view(paul, lists: lee).listed == false)
            let removal = try #require(
                try LinkSignerAttackTests.storedEvents(server).last { event in
                    if case .memberRemoved(let id) = event.change { return id == lee }
                    return false
                })
            try Self.replaceEvents(server, from: removal.sequence, with: [])

            let after = try Self.view(paul, lists: lee)
            print("rolled back Lee's removal: \(after.listed ? "ACCEPTED" : "refused"); \(after.output)")
            #expect(!after.listed, "Paul's device accepted a rolled-back chain: \(after.output)")
            #expect(after.code == "roster_rollback", "\(after.output)")
        }
    }

    /// (c) Paul's remembered chain damaged on disk (a flipped byte, then cut short): it does not
    /// open, so it is not used; the command verifies the chain from the owner's key, as a new
    /// device does, and saves it again. A server rewrite after that is refused again.
    @Test func aDamagedRememberedChainIsNotTrusted() async throws {
        try await LinkEndToEndTests().withServer { server in
            let (paul, _, lee) = try Self.leeJoined(server)
            let space = try #require(try LinkSignerAttackTests.storedEvents(server).first?.space)
            let path = paul.path + "/roster-\(space.base64URL).sealed"
            let good = try #require(FileManager.default.contents(atPath: path))
            var flipped = good
            flipped[flipped.count / 2] ^= 0x20
            for bad in [flipped, good.prefix(good.count / 2)] {
                try bad.write(to: URL(fileURLWithPath: path))
                let after = try Self.view(paul, lists: lee)
                print(
                    "damaged remembered chain (\(bad.count) bytes): \(after.code ?? "verified afresh"); \(after.output)"
                )
                #expect(after.listed, "\(after.output)")
                let saved = try #require(FileManager.default.contents(atPath: path))
                #expect(saved != bad && saved.count == good.count)
            }
            let last = try #require(try LinkSignerAttackTests.storedEvents(server).last)
            try Self.replaceEvents(server, from: last.sequence, with: [])
            #expect(try Self.view(paul, lists: lee).code == "roster_rollback")
        }
    }
}
