import ClientCore
import Foundation
import SpaceModel
import TestSupport
import Testing

/// Issue #21 item 1: removing a member cuts them off. The real `eleven-server` and `eleven` as
/// Paul (owner), Ann and Sam (joined by link). After `eleven members remove Sam` the server refuses
/// Sam's requests, and, the stronger claim, even every byte the server holds opens nothing written
/// afterwards with every key Sam was ever given: the remaining devices wrote on under a new key
/// without a step from anyone (`docs/key-model.md`).
@Suite(.serialized) struct RemovalEndToEndTests {
    typealias Server = LinkEndToEndTests.LoggedServer

    /// The texts of every stored message that `identity` (member `member`) can decrypt with every
    /// key ever wrapped to it, as someone holding Sam's state and a copy of the server's database.
    static func readableWithEveryKeyEverGiven(
        _ server: Server, member: MemberID, identity: DeviceIdentity
    ) throws -> [String] {
        try readableWithEveryKeyEverGiven(database: server.database, member: member, identity: identity)
    }

    static func readableWithEveryKeyEverGiven(
        database: String, member: MemberID, identity: DeviceIdentity
    ) throws -> [String] {
        let roster = try storedRoster(database: database)
        let keys = try keysEverGiven(database: database, member: member, identity: identity)
        func bytes(_ hex: String) throws -> [UInt8] { try #require(LinkSignerAttackTests.bytes(hex: hex)) }
        let messages = try TestSupport.querySQL(
            database: database,
            "SELECT space_id, thread_id, message_id, author, nonce, ciphertext, signature FROM messages "
                + "ORDER BY cursor")
        return try messages.compactMap { row in
            let message = try EncryptedMessage(
                space: SpaceID(bytes: bytes(row[0])), thread: ThreadID(bytes: bytes(row[1])),
                id: MessageID(bytes: bytes(row[2])), author: MemberID(bytes: bytes(row[3])),
                nonce: bytes(row[4]),
                ciphertext: bytes(row[5]), signature: Signature(bytes: bytes(row[6])))
            guard let key = keys[message.thread],
                let plain = try? message.decrypt(with: key, verifyingAgainst: roster)
            else { return nil }
            return String(decoding: plain, as: UTF8.self)
        }
    }

    /// The members' names sealed in the stored events that every key ever wrapped to `member`
    /// opens.
    static func namesOpenableWithEveryKeyEverGiven(
        database: String, member: MemberID, identity: DeviceIdentity
    ) throws -> [String] {
        var roster = try storedRoster(database: database)
        let keys = try keysEverGiven(database: database, member: member, identity: identity)
        let space = roster.space
        roster.revealNames { sealed, id in
            keys[sealed.thread].flatMap { sealed.open(key: $0, space: space, member: id) }
        }
        return (roster.members.values.map(\.name) + roster.formerMembers.values.map(\.name)).filter {
            !$0.isEmpty
        }
    }

    /// The roster the server's stored events verify to.
    static func storedRoster(database: String) throws -> Roster {
        let events = try TestSupport.querySQL(database: database, "SELECT body FROM events ORDER BY sequence")
            .map {
                try JSONDecoder().decode(MembershipEvent.self, from: Data($0[0].utf8))
            }
        guard case .spaceCreated(let owner) = try #require(events.first).change else {
            throw CocoaError(.fileReadCorruptFile)
        }
        return try Roster.verify(events: events, ownerKey: owner.keys.signing)
    }

    /// Every thread key the server holds a wrap of to `member`, opened with `identity`.
    static func keysEverGiven(
        database: String, member: MemberID, identity: DeviceIdentity
    ) throws -> [ThreadID: ThreadKey] {
        func bytes(_ hex: String) throws -> [UInt8] { try #require(LinkSignerAttackTests.bytes(hex: hex)) }
        var keys: [ThreadID: ThreadKey] = [:]
        let wraps = try TestSupport.querySQL(
            database: database,
            "SELECT space_id, thread_id, recipient, signer_key, sealed, signature FROM wraps "
                + "WHERE recipient = X'\(member.bytes.hex)' AND bundle IS NULL")
        // Wrap bundles (what attendants hand a joiner): each thread's box is a row of `wraps`
        // naming its bundle; the first thread's row carries the signature.
        let bundleRows = try TestSupport.querySQL(
            database: database,
            "SELECT space_id, bundle, signer_key, signature, thread_id, sealed FROM wraps "
                + "WHERE recipient = X'\(member.bytes.hex)' AND bundle IS NOT NULL ORDER BY bundle, thread_id"
        )
        for rows in Dictionary(grouping: bundleRows, by: { $0[1] }).values {
            let entries = try rows.map { row in
                let sealed = try bytes(row[5])
                return try KeyWrapBundle.Entry(
                    thread: ThreadID(bytes: bytes(row[4])), nonce: Array(sealed.prefix(24)),
                    sealed: Array(sealed.dropFirst(24)))
            }
            let bundle = try KeyWrapBundle(
                space: SpaceID(bytes: bytes(rows[0][0])), recipient: member,
                signer: SigningPublicKey(bytes: bytes(rows[0][2])), ephemeral: bytes(rows[0][1]),
                entries: entries, signature: Signature(bytes: bytes(rows[0][3])))
            keys.merge(try bundle.open(with: identity)) { $1 }
        }
        for row in wraps {
            let wrap = try KeyWrap(
                space: SpaceID(bytes: bytes(row[0])), thread: ThreadID(bytes: bytes(row[1])),
                recipient: MemberID(bytes: bytes(row[2])), signer: SigningPublicKey(bytes: bytes(row[3])),
                sealed: bytes(row[4]), signature: Signature(bytes: bytes(row[5])))
            keys[wrap.thread] = try wrap.open(with: identity)
        }
        #expect(!keys.isEmpty, "no key was ever given: the test could not fail")
        return keys
    }

    @Test func aRemovedMemberCanNeitherSendNorReadWhatFollows() async throws {
        try await LinkEndToEndTests().withServer { server in
            let paul = try LinkEndToEndTests.paul(server)
            let ann = try ElevenHome("ann")
            let sam = try ElevenHome("sam")
            for (home, name) in [(ann, "Ann"), (sam, "Sam")] {
                let link = try LinkEndToEndTests.mint(paul, ["--name", name])
                let joined = try LinkEndToEndTests.join(home, link, ["--yes"])
                #expect(joined.status == 0, "\(joined.stderr)")
            }
            #expect(try sam.run(["send", "before the removal"]).status == 0)
            let state = LocalState.standard(environment: ["ELEVEN_HOME": sam.path])
            let samSpace = try #require(try state.spaces().spaces.first)
            let samIdentity = try state.identity(for: samSpace)

            let removed = try paul.run(["members", "remove", "Sam"])
            #expect(removed.status == 0, "\(removed.stderr)")
            // The remaining devices go on: Paul writes at once, Ann reads all of it and answers.
            #expect(try paul.run(["send", "secret after Sam left"]).status == 0)
            let annRead = try ann.run(["read"])
            #expect(
                annRead.stdout
                    == "Paul: Welcome to Family\nSam: before the removal\nPaul: secret after Sam left\n",
                "\(annRead.stderr)")
            #expect(try ann.run(["send", "Ann after Sam left"]).status == 0)
            #expect(try paul.run(["read"]).stdout.hasSuffix("Ann: Ann after Sam left\n"))

            // Sam's device: refused, with a clear error, for writing and for reading.
            let sent = try sam.run(["send", "still here"])
            #expect(sent.status == 6, "\(sent.stdout) \(sent.stderr)")
            #expect(sent.stderr.contains("removed"), "\(sent.stderr)")
            let read = try sam.run(["read", "--json"])
            #expect(read.status == 6, "\(read.stdout) \(read.stderr)")
            #expect((read.stdout + read.stderr).contains("token_revoked"), "\(read.stdout) \(read.stderr)")

            // Whatever the server gives away: Sam's keys open what he could read, nothing after.
            let readable = try Self.readableWithEveryKeyEverGiven(
                server, member: samSpace.member, identity: samIdentity)
            print("Sam's keys open: \(readable)")
            #expect(readable.contains("before the removal"))
            #expect(!readable.contains("secret after Sam left"))
            #expect(!readable.contains("Ann after Sam left"))
        }
    }
}

/// Issue #21 item 1, with the bot: Sam joined by a code the bot attended. Once Paul removes him,
/// the joins the bot attends and its re-wraps hand Sam nothing new, the bot goes on admitting, and
/// the newcomers read what followed the removal.
@Suite(.serialized) struct BotRemovalEndToEndTests {
    @Test func theBotHandsARemovedMemberNothingAndGoesOn() async throws {
        try await TestSupport.offPool {
            let w = try BotWorld()
            defer { w.stop() }
            let sam = try ElevenHome("sam")
            let samJoined = try w.run(sam, ["join", try w.invite(), "--name", "Sam"])
            #expect(samJoined.status == 0, "\(samJoined.stderr)")
            #expect(try w.run(sam, ["send", "before the removal"]).status == 0)
            let state = LocalState.standard(environment: ["ELEVEN_HOME": sam.path])
            let samSpace = try #require(try state.spaces().spaces.first)
            let samIdentity = try state.identity(for: samSpace)
            func wrapsToSam() throws -> [[String]] {
                try TestSupport.querySQL(
                    database: w.server.database,
                    "SELECT hex(thread_id) FROM wraps WHERE recipient = X'\(samSpace.member.bytes.hex)' ORDER BY 1"
                )
            }
            let wrapsBefore = try wrapsToSam()
            #expect(!wrapsBefore.isEmpty)

            let removed = try w.run(w.paul, ["members", "remove", "Sam"])
            #expect(removed.status == 0, "\(removed.stderr)")
            #expect(try w.run(w.paul, ["send", "secret after Sam left"]).status == 0)
            // The bot attends the next joins as before: each newcomer reads what followed.
            for name in ["Lee", "Kim"] {
                let home = try ElevenHome(name.lowercased())
                let joined = try w.run(home, ["join", try w.invite(), "--name", name])
                #expect(joined.status == 0, "\(joined.stderr)")
                let read = try w.run(home, ["read"])
                #expect(
                    read.stdout.contains("Paul: secret after Sam left\n"), "\(read.stdout) \(read.stderr)")
                #expect(try w.run(home, ["send", "\(name) after Sam left"]).status == 0)
            }
            #expect(try w.run(w.paul, ["read"]).stdout.hasSuffix("Kim: Kim after Sam left\n"))
            // Nothing new was wrapped to Sam, by the bot or anyone.
            #expect(try wrapsToSam() == wrapsBefore)
            // Sam: refused, and every key he was ever given opens nothing written after.
            let sent = try w.run(sam, ["send", "still here"])
            #expect(sent.status == 6, "\(sent.stdout) \(sent.stderr)")
            let read = try w.run(sam, ["read"])
            #expect(read.status == 6, "\(read.stdout) \(read.stderr)")
            let readable = try RemovalEndToEndTests.readableWithEveryKeyEverGiven(
                database: w.server.database, member: samSpace.member, identity: samIdentity)
            print("Sam's keys open: \(readable)")
            #expect(readable.contains("before the removal"))
            for text in ["secret after Sam left", "Lee after Sam left", "Kim after Sam left"] {
                #expect(!readable.contains(text), "\(text)")
            }
            // Nor the names given after: they are sealed under a names thread continued for
            // those who remain.
            let names = try RemovalEndToEndTests.namesOpenableWithEveryKeyEverGiven(
                database: w.server.database, member: samSpace.member, identity: samIdentity)
            print("Names Sam's keys open: \(names.sorted())")
            #expect(names.contains("Sam") && names.contains("Paul"), "\(names)")
            #expect(!names.contains("Lee") && !names.contains("Kim"), "\(names)")
        }
    }
}

/// Issue #21 item 1, devices: Paul's laptop (A) removes his phone (B), which holds the same member
/// identity (linking adopts it). A gives Paul a new identity in Family at once; the phone's
/// requests are refused, and no key it was ever given opens what Paul and Ann write afterwards.
@Suite(.serialized) struct DeviceRemovalEndToEndTests {
    @Test func aRemovedDeviceCanNeitherSendNorReadWhatFollows() async throws {
        try await LinkEndToEndTests().withServer { server in
            let relay = try ElevenRelayUnderTest()
            let home = try HomeServerUnderTest()
            defer { home.stop() }
            let a = try ElevenHome("laptop")
            let b = try ElevenHome("phone")
            let environment = ["ELEVEN_RELAY": relay.url]
            #expect(
                try a.run(["space", "create", "Family", "--server", server.url, "--as", "Paul"]).status == 0)
            #expect(try a.run(["send", "before the phone left"]).status == 0)
            let ann = try ElevenHome("ann")
            let joined = try LinkEndToEndTests.join(
                ann, try LinkEndToEndTests.mint(a, ["--name", "Ann"]), ["--yes"])
            #expect(joined.status == 0, "\(joined.stderr)")
            #expect(try a.run(["signin", "--server", home.url, "--label", "laptop"]).status == 0)
            let add = try ChildProcess(
                eleven, ["device", "add", "--yes"],
                environment: ["ELEVEN_HOME": a.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": relay.url])
            let code = try add.value(afterPrefix: "Device code:")
            let linked = try b.run(["device", "link", code, "--label", "phone"], environment: environment)
            #expect(linked.status == 0, "\(linked.stderr)")
            #expect(add.finish(timeout: 20).status == 0)
            #expect(try b.run(["read"]).stdout == "Paul: before the phone left\n")
            let state = LocalState.standard(environment: ["ELEVEN_HOME": b.path])
            let phoneSpace = try #require(try state.spaces().spaces.first)
            let phoneIdentity = try state.identity(for: phoneSpace)

            let removed = try a.run(["device", "remove", "phone", "--json"])
            #expect(removed.status == 0, "\(removed.stderr)")
            #expect(removed.stdout.contains("\"unmoved\":[]"), "\(removed.stdout) \(removed.stderr)")
            // The laptop and Ann go on without a step.
            #expect(try a.run(["send", "after the phone left"]).status == 0)
            let annRead = try ann.run(["read"])
            #expect(
                annRead.stdout.hasSuffix("Paul: after the phone left\n")
                    && annRead.stdout.contains("(Paul has a new identity.)"),
                "\(annRead.stdout) \(annRead.stderr)")
            #expect(try ann.run(["send", "Ann after the phone left"]).status == 0)
            #expect(try a.run(["read"]).stdout.hasSuffix("Ann: Ann after the phone left\n"))

            // The phone: refused, with a clear error, for writing and for reading.
            let sent = try b.run(["send", "from the removed phone"])
            #expect(sent.status == 6, "\(sent.stdout) \(sent.stderr)")
            let read = try b.run(["read", "--json"])
            #expect(read.status == 6, "\(read.stdout) \(read.stderr)")
            // And no key it was ever given opens what was written after.
            let readable = try RemovalEndToEndTests.readableWithEveryKeyEverGiven(
                database: server.database, member: phoneSpace.member, identity: phoneIdentity)
            print("The removed phone's keys open: \(readable)")
            #expect(readable.contains("before the phone left"))
            #expect(!readable.contains("after the phone left"))
            #expect(!readable.contains("Ann after the phone left"))
        }
    }
}
