import ClientCore
import Foundation
import JoinProtocol
import PAKE
import SQLite
import SpaceModel
import Testing

@testable import SidecarBot

/// A space with Paul (owner), Ann (may invite), Sam (no rights) and the bot (invite, attendant).
struct BotFixture {
    let space = SpaceID.random()
    let paul = DeviceIdentity.generate()
    let ann = DeviceIdentity.generate()
    let sam = DeviceIdentity.generate()
    let bot = DeviceIdentity.generate()
    let paulID = MemberID.random()
    let annID = MemberID.random()
    let samID = MemberID.random()
    let botID = MemberID.random()
    var roster: Roster

    init() throws {
        roster = try Roster(genesis: paul.createSpace(space, as: paulID, ownerName: "Paul"))
        for (id, identity, name, rights) in [
            (annID, ann, "Ann", MemberRights.invite), (samID, sam, "Sam", []), (botID, bot, "Bot", []),
        ] {
            let record = MemberRecord(id: id, keys: identity.publicKeys, rights: rights, name: name)
            try roster.apply(try roster.nextEvent(.memberAdded(record), signedBy: paul))
        }
        try roster.apply(try roster.nextEvent(.rightsChanged(botID, [.invite, .attendant]), signedBy: paul))
    }

    func request(uses: Int = 1, expiresIn: Int64 = 3600, words: String = "coral-piano") -> AttendantNote {
        AttendantNote.inviteRequest(
            id: "i1", words: words, uses: uses, expiresAt: now + expiresIn, maxFailures: 1, ask: false,
            inviterName: "Ann")
    }

    let now = Int64(Date().timeIntervalSince1970)
}

private func temporaryKey() -> BotSealingKey {
    var random = SystemRandom()
    return BotSealingKey(key: SecretBytes(randomCount: 32, using: &random))
}

private func temporaryDirectory() throws -> String {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("eleven-bot-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url.path
}

@Suite struct BotKeyTests {
    @Test func hexAndRawKeysParse() {
        #expect(BotSealingKey.parse(Array(repeating: 7, count: 32)) != nil)
        #expect(BotSealingKey.parse(Array((String(repeating: "ab", count: 32) + "\n").utf8)) != nil)
        #expect(BotSealingKey.parse(Array("short".utf8)) == nil)
        #expect(BotSealingKey.parse(Array(String(repeating: "zz", count: 32).utf8)) == nil)
    }

    @Test func missingOrBadKeyFilesAreClearErrors() throws {
        #expect(throws: BotError.self) { try BotSealingKey.load(path: nil) }
        do {
            _ = try BotSealingKey.load(path: "/nonexistent/eleven-bot.key")
            Issue.record("a missing key file loaded")
        } catch {
            #expect(error.code == "key_missing")
        }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bad = directory + "/bad.key"
        try Data("not a key".utf8).write(to: URL(fileURLWithPath: bad))
        do {
            _ = try BotSealingKey.load(path: bad)
            Issue.record("a malformed key file loaded")
        } catch {
            #expect(error.code == "key_invalid")
        }
        let made = directory + "/made.key"
        let (_, created) = try BotSealingKey.loadOrCreate(path: made)
        #expect(created)
        let attributes = try FileManager.default.attributesOfItem(atPath: made)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try BotSealingKey.loadOrCreate(path: made).created == false)
    }

    @Test func sealedBytesOpenOnlyWithTheKeyAndPurpose() {
        let key = temporaryKey()
        let sealed = key.seal(Array("secret".utf8), purpose: "identity")
        #expect(key.open(sealed, purpose: "identity") == Array("secret".utf8))
        #expect(key.open(sealed, purpose: "invite") == nil)
        #expect(temporaryKey().open(sealed, purpose: "identity") == nil)
        var tampered = sealed
        tampered[tampered.count - 1] ^= 1
        #expect(key.open(tampered, purpose: "identity") == nil)
        #expect(key.open([1, 2, 3], purpose: "identity") == nil)
    }
}

@Suite struct BotStoreTests {
    /// `attendant` with `taken` uses taken (as restored from an older state file).
    static func with(_ attendant: InviteAttendant, taken: Int) -> InviteAttendant {
        InviteAttendant(
            policy: attendant.policy, state: attendant.state, taken: taken, failures: attendant.failures)
    }

    @Test func identityIsSealedAndSurvivesReopening() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = temporaryKey()
        let identity = try BotStore(directory: directory, key: key, create: true).identity(create: true)
        let reopened = try BotStore(directory: directory, key: key).identity()
        #expect(reopened.publicKeys == identity.publicKeys)
        // The private keys are nowhere in the file in clear.
        let file = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + BotStore.fileName))
        let wal = (try? Data(contentsOf: URL(fileURLWithPath: directory + "/bot.sqlite-wal"))) ?? Data()
        let secret = identity.storedForm().unredactedBytes()
        for window in [Array(secret[5..<37]), Array(secret[37..<69])] {
            #expect(file.range(of: Data(window)) == nil && wal.range(of: Data(window)) == nil)
        }
    }

    @Test func wrongKeyMissingStateAndDamageAreRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func code(_ body: () throws -> Void) -> String? {
            do {
                try body()
                return nil
            } catch {
                return (error as? BotError)?.code ?? "\(error)"
            }
        }
        #expect(
            code { _ = try BotStore(directory: directory + "/none", key: temporaryKey()) } == "state_missing")
        _ = try BotStore(directory: directory, key: temporaryKey(), create: true)
        #expect(code { _ = try BotStore(directory: directory, key: temporaryKey()) } == "key_wrong")
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: directory + "/bot.sqlite" + suffix)
        }
        try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(
            to: URL(fileURLWithPath: directory + "/bot.sqlite"))
        #expect(code { _ = try BotStore(directory: directory, key: temporaryKey()) } == "state_corrupt")
    }

    @Test func invitesRoundTripSealed() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try BotStore(directory: directory, key: temporaryKey(), create: true)
        var random = SystemRandom()
        let invite = BotInvite(
            id: "a:b", noteID: "b", inviter: .random(), inviterName: "Ann",
            secret: InviteSecret(
                words: "marmalade-xylophone", seed: SecretBytes(randomCount: 32, using: &random)),
            relay: "ws://127.0.0.1:1/v1", ask: false, createdAt: 1,
            attendant: InviteAttendant(
                policy: .init(uses: 2, expiresAt: 2), state: .preparing(nameplate: .init("7"), use: 0),
                taken: 0,
                failures: 0))
        #expect(try store.save(invite, onlyIfNew: true))
        #expect(try store.save(invite, onlyIfNew: true) == false)
        let updated = try store.update("a:b") { $0.attendant = Self.with($0.attendant, taken: 1) }
        #expect(updated?.usesLeft == 1)
        #expect(try store.openInvites().map(\.id) == ["a:b"])
        _ = try store.update("a:b") { _ = $0.attendant.handle(.cancel, now: 1) }
        #expect(try store.openInvites().isEmpty)
        let file = try Data(contentsOf: URL(fileURLWithPath: store.path))
        let wal = (try? Data(contentsOf: URL(fileURLWithPath: store.path + "-wal"))) ?? Data()
        #expect(file.range(of: Data("marmalade".utf8)) == nil && wal.range(of: Data("marmalade".utf8)) == nil)
    }

    /// History lines come back in the order written, from a new file (whose lines write no
    /// `sqlite_sequence` row, one page per line fewer) and from one made with `AUTOINCREMENT`.
    @Test func historyLinesKeepTheirOrderInNewAndOlderFiles() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = temporaryKey()
        func writeAndRead(_ store: BotStore) throws -> [String] {
            for (n, kind) in ["joined", "wrong_code", "joined"].enumerated() {
                try store.log(kind, nameplate: "7", "line \(n)", at: Int64(n))
            }
            return try store.recentLog(limit: 2).map(\.detail)
        }
        let store = try BotStore(directory: directory, key: key, create: true)
        #expect(try writeAndRead(store) == ["line 1", "line 2"])
        #expect(try store.logCounts() == ["joined": 2, "wrong_code": 1])
        let file = try SQLiteDatabase(path: store.path)
        #expect(try file.query("SELECT name FROM sqlite_master WHERE name = 'sqlite_sequence'").isEmpty)
        try file.execute(
            """
            DROP TABLE log;
            CREATE TABLE log (
                id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, kind TEXT NOT NULL,
                nameplate TEXT, detail TEXT NOT NULL);
            """)
        let older = try BotStore(directory: directory, key: key)
        #expect(try writeAndRead(older) == ["line 1", "line 2"])
        #expect(try file.query("SELECT seq FROM sqlite_sequence WHERE name = 'log'").first?[0].integer == 3)
    }

    /// An invite saved by a bot before the attendant machine resumes where it stood: a joiner
    /// being added keeps their use, counts carry over.
    @Test func olderSavedInvitesResume() throws {
        let machine = RendezvousMachine(
            appID: JoinIntent.join.appID, side: Rendezvous.Side("0123456789"), start: .claim(.init("7")))
        let machineJSON = String(decoding: try JSONEncoder().encode(machine), as: UTF8.self)
        let inviter = MemberID.random()
        func old(state: String, admitting: Int?) -> String {
            """
            {"id":"a:b","noteID":"b","inviter":"\(inviter.base64URL)","inviterName":"Ann",
             "secret":{"words":"coral-piano","seed":"AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM"},
             "relay":"ws://127.0.0.1:1/v1","nameplate":"7","machine":\(machineJSON),"use":3,"usesLeft":2,
             "uses":5,"failures":1,"maxFailures":4,"ask":false,"createdAt":1,"expiresAt":900,
             "state":"\(state)"\(admitting.map { ",\"admitting\":\($0),\"admittingKeys\":\"k\"" } ?? "")}
            """
        }
        let admitting = try JSONDecoder().decode(
            BotInvite.self, from: Data(old(state: "open", admitting: 3).utf8))
        #expect(
            admitting.attendant.state
                == .admitting(
                    nameplate: .init("7"), use: 3, connection: machine, joinerKeys: JoinerKeys(text: "k")))
        #expect(admitting.usesLeft == 2 && admitting.attendant.failures == 1 && admitting.expiresAt == 900)
        #expect(admitting.attendant.policy == .init(uses: 5, maxFailures: 4, expiresAt: 900))
        let attending = try JSONDecoder().decode(
            BotInvite.self, from: Data(old(state: "open", admitting: 2).utf8))
        #expect(
            attending.attendant.state
                == .attending(nameplate: .init("7"), use: 3, connection: machine, attempt: false))
        let burned = try JSONDecoder().decode(
            BotInvite.self, from: Data(old(state: "burned", admitting: nil).utf8))
        #expect(burned.state == .burned && !burned.attendant.isOpen)
        // Saved again, it is in the new form and reads back the same.
        let again = try JSONDecoder().decode(BotInvite.self, from: JSONEncoder().encode(admitting))
        #expect(again.attendant == admitting.attendant)
    }
}

@Suite struct BotPolicyTests {
    let configuration = BotConfiguration(relay: "ws://127.0.0.1:1/v1")

    @Test func onlyMembersHoldingTheInviteRightMayAsk() throws {
        let f = try BotFixture()
        let check = { (sender: MemberID, note: AttendantNote) in
            BotPolicy.checkRequest(
                note, sender: sender, roster: f.roster, now: f.now, configuration: configuration)
        }
        #expect(check(f.annID, f.request()) == nil)
        #expect(check(f.paulID, f.request()) == nil)
        #expect(check(f.samID, f.request())?.reason == .revoked)
        #expect(check(.random(), f.request())?.reason == .revoked)
        #expect(check(f.annID, f.request(uses: 0))?.reason == .invalid)
        #expect(check(f.annID, f.request(uses: 1000))?.reason == .invalid)
        #expect(check(f.annID, f.request(expiresIn: -5))?.reason == .invalid)
        #expect(check(f.annID, f.request(expiresIn: 365 * 86_400))?.reason == .invalid)
        #expect(check(f.annID, f.request(words: "ONE"))?.reason == .invalid)
        #expect(check(f.annID, f.request(words: "a b;c"))?.reason == .invalid)
    }

    @Test func aRequestFoundTooLateIsDropped() throws {
        let f = try BotFixture()
        let check = { (age: Int64?) in
            var note = f.request()
            note.createdAt = age.map { f.now - $0 }
            return BotPolicy.checkRequest(
                note, sender: f.annID, roster: f.roster, now: f.now, configuration: configuration)
        }
        // Its inviter stopped waiting and attends the invite itself.
        #expect(check(31)?.reason == .stale)
        #expect(check(30) == nil)
        #expect(check(0) == nil)
        // A request from a client that does not date it is attended as before.
        #expect(check(nil) == nil)
    }

    @Test func theRecordMustMatchTheRequestAndBeSignedByTheInviter() throws {
        let f = try BotFixture()
        var random = SystemRandom()
        let invite = BotInvite(
            id: "x", noteID: "i1", inviter: f.annID, inviterName: "Ann",
            secret: InviteSecret(words: "coral-piano", seed: SecretBytes(randomCount: 32, using: &random)),
            relay: "", ask: false, createdAt: f.now,
            attendant: InviteAttendant(
                policy: .init(uses: 1, expiresAt: f.now + 60),
                state: .preparing(nameplate: .init("42"), use: 0),
                taken: 0, failures: 0))
        let good = f.ann.signInvite(
            space: f.space, inviter: f.annID, nameplate: "42", createdAt: f.now, expiresAt: f.now + 60,
            uses: 1)
        #expect(BotPolicy.checkRecord(good, for: invite, roster: f.roster) == nil)
        let otherCode = f.ann.signInvite(
            space: f.space, inviter: f.annID, nameplate: "43", createdAt: f.now, expiresAt: f.now + 60,
            uses: 1)
        #expect(BotPolicy.checkRecord(otherCode, for: invite, roster: f.roster) != nil)
        let moreUses = f.ann.signInvite(
            space: f.space, inviter: f.annID, nameplate: "42", createdAt: f.now, expiresAt: f.now + 60,
            uses: 5)
        #expect(BotPolicy.checkRecord(moreUses, for: invite, roster: f.roster) != nil)
        // Sam signs a record naming Ann as the inviter.
        let forged = f.sam.signInvite(
            space: f.space, inviter: f.annID, nameplate: "42", createdAt: f.now, expiresAt: f.now + 60,
            uses: 1)
        #expect(BotPolicy.checkRecord(forged, for: invite, roster: f.roster) != nil)
        // Admission: fine now; refused once Ann lost the right, once expired, once used up.
        var open = invite
        open.record = good
        #expect(open.state == .open)
        #expect(BotPolicy.checkAdmission(open, roster: f.roster, now: f.now) == nil)
        #expect(BotPolicy.checkAdmission(open, roster: f.roster, now: f.now + 61)?.reason == .expired)
        var used = open
        used.attendant = BotStoreTests.with(open.attendant, taken: 1)
        #expect(BotPolicy.checkAdmission(used, roster: f.roster, now: f.now)?.reason == .usedUp)
        var roster = f.roster
        try roster.apply(try roster.nextEvent(.memberRemoved(f.annID), signedBy: f.paul))
        #expect(BotPolicy.checkAdmission(open, roster: roster, now: f.now)?.reason == .revoked)
    }

    @Test func theJoinRateLimitSlides() {
        var limiter = JoinRateLimiter(limit: 2, window: .seconds(60))
        let t0 = ContinuousClock.now
        let answers = [0, 1, 2, 61].map { limiter.allow(now: t0 + .seconds($0)) }
        #expect(answers == [true, true, false, true])
        var unlimited = JoinRateLimiter(limit: 0)
        var allowed = 0
        for _ in 0..<1000 where unlimited.allow(now: t0) { allowed += 1 }
        #expect(allowed == 1000)
    }
}

@Suite struct AttendantNoteTests {
    @Test func garbledNotesFailClearly() {
        let bad: [[UInt8]] = [
            [], Array("not json".utf8), Array("[]".utf8), Array(#"{"v":2,"type":"approval","id":"x"}"#.utf8),
            Array(#"{"v":1,"type":"nonsense","id":"x"}"#.utf8),
            Array(#"{"v":1,"type":"invite_request","id":"x"}"#.utf8),
            Array(#"{"v":1,"type":"invite_request","id":"","words":"a-b","uses":1,"expires_at":5}"#.utf8),
            Array(#"{"v":1,"type":"approval","id":"x"}"#.utf8),
            Array(#"{"v":"1","type":"approval","id":"x","approve":true}"#.utf8),
        ]
        for bytes in bad {
            #expect(throws: AttendantNoteError.self) { try AttendantNote(decoding: bytes) }
        }
        let request = AttendantNote.inviteRequest(
            id: "abc", words: "coral-piano", uses: 2, expiresAt: 99, maxFailures: 1, ask: true,
            inviterName: nil)
        #expect((try? AttendantNote(decoding: request.encoded())) == request)
    }

    @Test func forgedNotesDoNotOpen() throws {
        let f = try BotFixture()
        let botRecord = try #require(f.roster.members[f.botID])
        let note = AttendantNote.inviteRequest(
            id: "n", words: "coral-piano", uses: 1, expiresAt: f.now + 60, maxFailures: 1, ask: false,
            inviterName: nil)
        // Sam seals a note but claims it comes from Ann: the signature is Sam's, not Ann's.
        let honest = try f.sam.note(note.encoded(), to: botRecord, in: f.space, from: f.samID)
        let forged = try InboxNote(
            space: f.space, sender: f.annID, recipient: f.botID, sealed: honest.sealed,
            signature: honest.signature)
        #expect(throws: KeyModelError.self) { try forged.open(with: f.bot, verifyingAgainst: f.roster) }
        #expect((try? honest.open(with: f.bot, verifyingAgainst: f.roster)) == note.encoded())
        // A note from someone outside the space.
        let outsider = DeviceIdentity.generate()
        let stranger = try outsider.note(note.encoded(), to: botRecord, in: f.space, from: .random())
        #expect(throws: KeyModelError.self) { try stranger.open(with: f.bot, verifyingAgainst: f.roster) }
    }
}

@Suite struct AttendantRosterTests {
    @Test func onlyAdminsChangeRightsAndTheAttendantIsLearnedFromTheRoster() throws {
        var f = try BotFixture()
        #expect(f.roster.attendant?.id == f.botID)
        #expect(f.roster.rights(of: f.botID) == [.invite, .attendant])
        #expect(throws: KeyModelError.self) {
            try f.roster.applying(try f.roster.nextEvent(.rightsChanged(f.samID, [.invite]), signedBy: f.ann))
        }
        #expect(throws: KeyModelError.self) {
            try f.roster.applying(try f.roster.nextEvent(.rightsChanged(f.paulID, []), signedBy: f.paul))
        }
        try f.roster.apply(try f.roster.nextEvent(.rightsChanged(f.botID, []), signedBy: f.paul))
        #expect(f.roster.attendant == nil)
        // The JSON form round-trips and still verifies.
        let event = try f.roster.nextEvent(.rightsChanged(f.samID, [.invite]), signedBy: f.paul)
        let decoded = try JSONDecoder().decode(MembershipEvent.self, from: JSONEncoder().encode(event))
        #expect(decoded == event)
        #expect((try? f.roster.applying(decoded)) != nil)
    }

    @Test func memberAddedCarriesOnlyAValidInviteFromAnEntitledInviter() throws {
        let f = try BotFixture()
        var roster = f.roster
        try roster.apply(
            try roster.nextEvent(.rightsChanged(f.botID, [.invite, .attendant]), signedBy: f.paul))
        let joiner = DeviceIdentity.generate()
        let record = MemberRecord(id: .random(), keys: joiner.publicKeys, name: "Joe")
        let fromAnn = f.ann.signInvite(
            space: f.space, inviter: f.annID, nameplate: "4", createdAt: f.now, expiresAt: f.now + 60, uses: 1
        )
        let event = try roster.nextEvent(.memberAdded(record), signedBy: f.bot, invite: fromAnn)
        let decoded = try JSONDecoder().decode(MembershipEvent.self, from: JSONEncoder().encode(event))
        #expect(decoded.invite == fromAnn)
        #expect((try? roster.applying(decoded)) != nil)
        // Sam may not invite; a record Sam signed, or one claiming to be Ann's, is refused.
        let fromSam = f.sam.signInvite(
            space: f.space, inviter: f.samID, nameplate: "4", createdAt: f.now, expiresAt: f.now + 60, uses: 1
        )
        #expect(throws: KeyModelError.self) {
            try roster.applying(try roster.nextEvent(.memberAdded(record), signedBy: f.bot, invite: fromSam))
        }
        let claimingAnn = f.sam.signInvite(
            space: f.space, inviter: f.annID, nameplate: "4", createdAt: f.now, expiresAt: f.now + 60, uses: 1
        )
        #expect(throws: KeyModelError.self) {
            try roster.applying(
                try roster.nextEvent(.memberAdded(record), signedBy: f.bot, invite: claimingAnn))
        }
        // Stripping the invite from a signed event breaks its signature.
        let stripped = MembershipEvent(
            space: event.space, sequence: event.sequence, previous: event.previous, change: event.change,
            signer: event.signer, invite: nil, signature: event.signature)
        #expect(throws: KeyModelError.self) { try roster.applying(stripped) }
        // Only member_added may carry one.
        #expect(throws: KeyModelError.self) {
            try roster.applying(
                try roster.nextEvent(.memberRemoved(f.samID), signedBy: f.paul, invite: fromAnn))
        }
    }
}
