import Foundation
import PAKE
import Testing

@testable import SpaceModel

/// The stored text of a membership event, written by hand (`WireJSON.write(_:into:)`), is byte
/// for byte what `JSONEncoder` with sorted keys and slashes as they are writes: every kind of
/// change, with and without an invite, a name in clear or sealed, on random fields (awkward text
/// in every string the writer copies, integers at their limits).
@Suite struct EventWriterTests {
    private static let reference: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// The tests' seeded byte source as a generator, so a failure can be run again.
    private struct Rng: RandomNumberGenerator {
        var source: SeededRandom
        init(state: UInt64) { source = SeededRandom(seed: state) }
        mutating func next() -> UInt64 { source.bytes(count: 8).reduce(0) { $0 << 8 | UInt64($1) } }
    }

    private static func bytes(_ count: Int, _ rng: inout Rng) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    /// Text of up to 24 characters: control characters, quotes, backslashes, slashes, ASCII,
    /// two- to four-byte UTF-8.
    private static func text(_ rng: inout Rng) -> String {
        let pool: [Unicode.Scalar] =
            (0..<0x20).map { Unicode.Scalar(UInt8($0)) } + Array(#""\/ azAZ09_-."#.unicodeScalars)
            + ["\u{7F}", "é", "\u{2028}", "€", "\u{1F600}", "\u{FEFF}"]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...24, using: &rng) { scalars.append(pool.randomElement(using: &rng)!) }
        return String(scalars)
    }

    private static func id<Kind>(_ rng: inout Rng) -> Identifier<Kind> {
        try! Identifier(bytes: bytes(16, &rng))
    }

    private static func integer(_ rng: inout Rng) -> Int64 {
        [0, -1, 1, .min, .max, Int64.random(in: .min ... .max, using: &rng)].randomElement(using: &rng)!
    }

    private static func record(_ rng: inout Rng) -> MemberRecord {
        let sealed =
            Bool.random(using: &rng)
            ? try! SealedName(
                thread: id(&rng), box: bytes(SecretBox.overhead + Int.random(in: 0...128, using: &rng), &rng))
            : nil
        return MemberRecord(
            id: id(&rng),
            keys: MemberPublicKeys(
                encryption: EncryptionPublicKey(trusted: bytes(32, &rng)),
                signing: SigningPublicKey(trusted: bytes(32, &rng))),
            rights: MemberRights(rawValue: UInt64.random(in: 0...7, using: &rng)), name: text(&rng),
            sealedName: sealed)
    }

    private static func event(_ rng: inout Rng, kind: Int) -> MembershipEvent {
        let change: MembershipChange =
            switch kind {
            case 0: .spaceCreated(owner: record(&rng))
            case 1: .memberAdded(record(&rng))
            case 2: .memberRemoved(id(&rng))
            case 3: .rightsChanged(id(&rng), MemberRights(rawValue: UInt64.random(in: 0...7, using: &rng)))
            case 4: .memberRekeyed(old: id(&rng), new: record(&rng))
            default:
                .memberRenamed(
                    id(&rng), try! SealedName(thread: id(&rng), box: bytes(SecretBox.overhead + 5, &rng)))
            }
        let invite =
            Bool.random(using: &rng)
            ? SignedInvite(
                v: Int(truncatingIfNeeded: integer(&rng)), space: id(&rng), inviter: id(&rng),
                inviterKey: text(&rng), nameplate: text(&rng), createdAt: integer(&rng),
                expiresAt: integer(&rng), uses: Int(truncatingIfNeeded: integer(&rng)), signature: text(&rng))
            : nil
        return MembershipEvent(
            space: id(&rng),
            sequence: [0, .max, UInt64.random(in: 0 ... .max, using: &rng)].randomElement(using: &rng)!,
            previous: EventHash(trusted: bytes(32, &rng)), change: change, signer: id(&rng), invite: invite,
            signature: try! Signature(bytes: bytes(64, &rng)))
    }

    @Test(arguments: 0..<6)
    func writesWhatJSONEncoderWrites(kind: Int) throws {
        var rng = Rng(state: UInt64(kind) &* 7919)
        for round in 0..<200 {
            let event = Self.event(&rng, kind: kind)
            let expected = Array(try Self.reference.encode(event))
            var out: [UInt8] = []
            WireJSON.write(event, into: &out)
            #expect(out == expected, "kind \(kind), round \(round)")
            #expect(try SpaceWire.EventList.storedText(event) == String(decoding: expected, as: UTF8.self))
        }
    }

    @Test func everyRightsSetAndNameForm() throws {
        var rng = Rng(state: 42)
        for raw in UInt64(0)...7 {
            let base = Self.record(&rng)
            for sealed in [nil, try SealedName(thread: .random(), box: Self.bytes(SecretBox.overhead, &rng))]
            {
                let record = MemberRecord(
                    id: base.id, keys: base.keys, rights: MemberRights(rawValue: raw), name: "Ann/\"x\"",
                    sealedName: sealed)
                var out: [UInt8] = []
                WireJSON.write(record, into: &out)
                #expect(
                    out == Array(try Self.reference.encode(record)), "rights \(raw), sealed \(sealed != nil)")
            }
        }
    }
}
