import ClientCore
import Foundation
import JoinProtocol
import Mailbox
import PAKE
import SQLite
import SpaceModel
import Testing

@testable import SidecarBot

/// The invite as the bot seals it at every step (`BotInvite.storedJSON()`, written by hand) must
/// be the JSON its `Codable` writes: a build that only knows `Codable` (the one before, after a
/// rollback) opens it, and this one opens what that one wrote.
@Suite struct BotInviteJSONTests {
    static let mailbox = Rendezvous.MailboxID("mb1")
    static let me = Rendezvous.Side("0000000001")
    static let joiner = Rendezvous.Side("00000000ff")

    /// Machines in the shapes a saved invite holds: fresh, with a message the relay has not
    /// echoed, after the joiner spoke, closing, failed (with and without a reason).
    static func machines() throws -> [RendezvousMachine] {
        var fresh = RendezvousMachine(appID: JoinIntent.join.appID, side: me, start: .claim(.init("7")))
        var machines = [fresh]
        _ = fresh.connected()
        _ = fresh.received(.claimed(mailbox))
        _ = try fresh.send(phase: .pake, body: [0, 1, 127, 128, 255])
        machines.append(fresh)
        var spoke = fresh
        _ = spoke.received(message(side: me, phase: .pake, body: [0, 1, 127, 128, 255]))
        _ = spoke.received(message(side: joiner, phase: .pake, body: [2]))
        _ = spoke.received(message(side: joiner, phase: .version, body: [3]))
        machines += [spoke, spoke.replayingPeer()]
        var closing = spoke
        _ = closing.close(mood: .lonely)
        machines.append(closing)
        var moved = spoke
        _ = moved.received(.claimed(Rendezvous.MailboxID("elsewhere")))
        var stray = RendezvousMachine(appID: "a\"b\\c", side: me, start: .claim(.init("7")))
        _ = stray.received(.allocated(.init("8")))
        var allocating = RendezvousMachine(appID: "x", side: joiner, start: .allocate)
        _ = allocating.connected()
        machines += [moved, stray, allocating]
        #expect(moved.failure == .nameplateMoved && stray.failure != nil)
        return machines
    }

    static func states() throws -> [InviteAttendant.State] {
        let nameplate = Rendezvous.Nameplate("42")
        var states: [InviteAttendant.State] = [
            .allocating, .preparing(nameplate: nameplate, use: 3),
            .ended(.usedUp, nameplate: nameplate), .ended(.burned, nameplate: nil),
            .ended(.expired, nameplate: nameplate), .ended(.cancelled, nameplate: nil),
        ]
        let keys = DeviceIdentity.generate().publicKeys
        for machine in try machines() {
            states += [
                .attending(nameplate: nameplate, use: 0, connection: machine, attempt: false),
                .attending(nameplate: nameplate, use: 99, connection: machine, attempt: true),
                .admitting(nameplate: nameplate, use: 1, connection: machine, joinerKeys: JoinerKeys(keys)),
                .admitting(
                    nameplate: nameplate, use: 1, connection: machine, joinerKeys: JoinerKeys(text: "k\"")),
            ]
        }
        return states
    }

    static func invites() throws -> [BotInvite] {
        var random = SystemRandom()
        var invites: [BotInvite] = []
        let record = SignedInvite(
            v: 1, space: .random(), inviter: .random(), inviterKey: "key", nameplate: "42", createdAt: 5,
            expiresAt: 900, uses: 3, signature: "sig")
        for (n, state) in try states().enumerated() {
            var attendant = InviteAttendant(
                policy: .init(uses: 3, maxFailures: 2, expiresAt: 1_900_000_000), state: state, taken: n % 3,
                failures: n % 2)
            if n % 3 == 1 {
                // Sides heard on the invite (kept from the first joiner that spoke on).
                for side in ["00000000aa", "00000000bb"] {
                    _ = attendant.handle(.attemptReported(side: Rendezvous.Side(side)), now: 1)
                }
            }
            var invite = BotInvite(
                id: "\(MemberID.random().base64URL):i\(n)", noteID: "i\(n)", inviter: .random(),
                inviterName: n % 4 == 0 ? nil : "Ann \"the\" \\ ü\n\u{1}",
                secret: InviteSecret(
                    words: "coral-piano", seed: SecretBytes(randomCount: 32, using: &random)),
                relay: "ws://127.0.0.1:1/v1", ask: n % 2 == 0, createdAt: Int64(n) - 1, attendant: attendant,
                record: n % 2 == 0 ? record : nil)
            if n % 5 == 1 {
                invite.approval = n % 2 == 0
                invite.approvalUse = n
                invite.cancelRequested = true
                invite.reportedSides = [Rendezvous.Side("00000000cc"), Rendezvous.Side("00000000dd")]
            }
            invites.append(invite)
        }
        return invites
    }

    @Test func theHandWrittenFormIsTheCodableForm() throws {
        let invites = try Self.invites()
        #expect(invites.count == 6 + 4 * 8)
        for invite in invites {
            let written = invite.storedJSON()
            let coded = try JSONEncoder().encode(invite)
            // The same JSON, member for member (sets and object members in any order).
            #expect(try Self.canonical(Data(written)) == Self.canonical(coded))
            // And the invite reads back as it was, by the decoder both builds share.
            let read = try JSONDecoder().decode(BotInvite.self, from: Data(written))
            #expect(read.attendant == invite.attendant)
            #expect(read.record == invite.record && read.inviterName == invite.inviterName)
            #expect(read.approval == invite.approval && read.approvalUse == invite.approvalUse)
            #expect(
                read.cancelRequested == invite.cancelRequested && read.reportedSides == invite.reportedSides)
            #expect(read.secret.words == invite.secret.words && read.secret.seed == invite.secret.seed)
            #expect(
                read.id == invite.id && read.inviter == invite.inviter && read.createdAt == invite.createdAt)
        }
    }

    /// The parts a store keeps between an invite's writes (its record, the sides heard) give the
    /// bytes a fresh write gives, whatever invite wrote them last: the parts are carried through
    /// every invite in turn (records appearing and going, sides growing and changing), and a
    /// machine that hears one more side is written with it.
    @Test func keptPartsWriteWhatAFreshWriteWrites() throws {
        var parts = BotInvite.StoredParts()
        for invite in try Self.invites() {
            #expect(invite.storedJSON(reusing: &parts) == invite.storedJSON())
            var spoke = invite
            if spoke.attendant.isOpen {
                _ = spoke.attendant.handle(.attemptReported(side: Rendezvous.Side("00000000ee")), now: 1)
            }
            #expect(spoke.storedJSON(reusing: &parts) == spoke.storedJSON())
            #expect(invite.storedJSON(reusing: &parts) == invite.storedJSON())
        }
    }

    /// What a bot of the build before wrote (`JSONEncoder`) opens in this one, continues, and is
    /// written back in a form that build opens.
    @Test func aStateWrittenByCodableResumesAndIsReadableBack() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "eleven-bot-\(UUID().uuidString)"
        ).path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var random = SystemRandom()
        let key = BotSealingKey(key: SecretBytes(randomCount: 32, using: &random))
        let store = try BotStore(directory: directory, key: key, create: true)
        let machine = try Self.machines()[1]
        let invite = try Self.invites()[0]
        var old = invite
        old.attendant = InviteAttendant(
            policy: .init(uses: 3, maxFailures: 2, expiresAt: 1_900_000_000),
            state: .attending(nameplate: .init("42"), use: 0, connection: machine, attempt: false), taken: 0,
            failures: 0)
        let database = try SQLiteDatabase.open(path: store.path, schema: BotStore.schema, sync: .normal)
        try database.query(
            "INSERT INTO invites (id, state, expires_at, body) VALUES (?, ?, ?, ?)",
            [
                .text(old.id), .text(old.state.rawValue), .integer(old.expiresAt),
                .blob(key.seal(Array(try JSONEncoder().encode(old)), purpose: "invite")),
            ])
        // Reopened (nothing cached): the Codable body opens and a step is saved by hand.
        let reopened = try BotStore(directory: directory, key: key)
        let spoke = try reopened.update(old.id) {
            _ = $0.attendant.handle(.joinerSpoke(connection: machine.replayingPeer()), now: 2)
        }
        #expect(spoke?.attendant.failures == 1)
        let sealed = try #require(
            try database.query("SELECT body FROM invites WHERE id = ?", [.text(old.id)]).first?[0].blob)
        let body = try #require(key.open(sealed, purpose: "invite"))
        // What the build before reads (its decoder is this one's): the attempt stays counted.
        let read = try JSONDecoder().decode(BotInvite.self, from: Data(body))
        #expect(read.attendant == spoke?.attendant && read.attendant.failures == 1)
        #expect(try BotStore(directory: directory, key: key).invite(old.id)?.attendant == spoke?.attendant)
    }

    /// `value` with every object's members sorted and every array's elements sorted (sets have
    /// no order), as text.
    static func canonical(_ data: Data) throws -> String {
        func walk(_ value: Any) -> String {
            if let object = value as? [String: Any] {
                return "{" + object.keys.sorted().map { "\($0):\(walk(object[$0]!))" }.joined(separator: ",")
                    + "}"
            }
            if let array = value as? [Any] {
                return "[" + array.map(walk).sorted().joined(separator: ",") + "]"
            }
            if let string = value as? String { return "s" + string }
            return "\(value)"
        }
        return walk(try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]))
    }

    private static func message(side: Side, phase: Phase, body: [UInt8]) -> ServerMessage {
        .message(
            StoredMessage(
                side: side, phase: phase, body: Hex.encode(body), serverRX: RelayInstant(secondsSince1970: 1),
                messageID: .null))
    }
}
