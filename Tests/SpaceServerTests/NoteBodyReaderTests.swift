import Foundation
import PAKE
import Testing

@testable import SpaceModel
@testable import SpaceServer

/// `POST …/inbox`'s body (`NoteBody`) and answers (`NoteStored`, `NotesStored`) read and written
/// by hand, as `JSONDecoder` reads and `JSONEncoder` writes them: the bot sends one per joiner.
@Suite struct NoteBodyReaderTests {
    /// `JSONEncoder` as the server writes its answers (keys sorted, slashes as they are).
    private static var reference: JSONEncoder { SpaceWire.EventList.encoder }

    private struct Sent: Encodable {
        var note: InboxNote?
        var notes: [InboxNote]?
    }

    private static func notes(_ count: Int, _ random: inout SeededRandom) throws -> [InboxNote] {
        let sender = DeviceIdentity.generate()
        let recipient = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "Bea")
        return try (0..<count).map { index in
            try sender.note(
                random.bytes(count: 1 + index * 37), to: recipient, in: .random(), from: .random())
        }
    }

    /// What `JSONDecoder` reads from `bytes` (nil when it refuses), as comparable values.
    private static func reference(_ bytes: [UInt8]) -> [[InboxNote]?]? {
        guard let body = try? JSONDecoder().decode(NoteBody.self, from: Data(bytes)) else { return nil }
        return [body.note.map { [$0] }, body.notes]
    }

    @Test func everyFormOfTheBodyIsReadByHandAsJSONDecoderReadsIt() throws {
        var random = SeededRandom(seed: 17)
        let pretty = JSONEncoder()
        pretty.outputFormatting = [.prettyPrinted]
        for count in 0..<5 {
            let notes = try Self.notes(count, &random)
            var bodies = [Sent(notes: notes)]
            if let first = notes.first { bodies += [Sent(note: first), Sent(note: first, notes: notes)] }
            for body in bodies {
                for encoder in [Self.reference, JSONEncoder(), pretty] {
                    let bytes = Array(try encoder.encode(body))
                    let read = try #require(
                        WireJSON.strictDecode(NoteBody.self, from: bytes), "\(count) notes")
                    #expect([read.note.map { [$0] }, read.notes] == Self.reference(bytes))
                }
            }
        }
    }

    /// Random damage: the hand reader gives up or reads what `JSONDecoder` reads, and the
    /// server's reader (hand reader, generic reader, `JSONDecoder`) always agrees with it.
    @Test func damagedBodiesGiveTheSameResultAsJSONDecoder() throws {
        var random = SeededRandom(seed: 18)
        let notes = try Self.notes(2, &random)
        let bodies = try [Sent(note: notes[0]), Sent(notes: notes)].map {
            Array(try Self.reference.encode($0))
        }
        for round in 0..<300 {
            var bytes = bodies[round % 2]
            for _ in 0...(Int(random.bytes(count: 1)[0]) % 3) {
                let pick = random.bytes(count: 4).reduce(0) { $0 << 8 | Int($1) }
                let alphabet = Array(#"{}[]",:\0123456789-AZaz_ nu"#.utf8) + [0x00, 0xC3, 0xFF]
                let at = pick % bytes.count
                switch pick % 3 {
                case 0: bytes[at] = alphabet[(pick >> 8) % alphabet.count]
                case 1: bytes.remove(at: at)
                default: bytes.insert(alphabet[(pick >> 8) % alphabet.count], at: at)
                }
            }
            let expected = Self.reference(bytes)
            if let read = WireJSON.strictDecode(NoteBody.self, from: bytes) {
                #expect([read.note.map { [$0] }, read.notes] == expected, "round \(round)")
            }
            let decoded = try? WireJSON.decode(NoteBody.self, from: bytes)
            #expect(decoded.map { [$0.note.map { [$0] }, $0.notes] } == expected, "round \(round)")
        }
    }

    @Test func theAnswersAreWrittenByHandAsJSONEncoderWritesThem() throws {
        for ids in [[], [0], [1, Int64.max, Int64.min, -7]] as [[Int64]] {
            let answers: [any Encodable] = [NotesStored(ids: ids)] + ids.map { NoteStored(id: $0) }
            for answer in answers {
                #expect(answer is any DirectJSONWritable)
                #expect(try WireJSON.encode(answer) == Array(Self.reference.encode(answer)))
            }
        }
    }
}
