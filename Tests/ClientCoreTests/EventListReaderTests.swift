import Foundation
import PAKE
import Testing

@testable import SpaceModel

/// `EventListReader`, the hand-written reader of `GET …/events` answers, checked against
/// `JSONDecoder` (the path it stands in for): whatever it returns, `JSONDecoder` returns too, and
/// `SpaceWire.EventList.decode` accepts and refuses exactly what `JSONDecoder` does.
@Suite struct EventListReaderTests {
    /// Every kind of event: created, added (one by an attendant carrying an invite), removed,
    /// rights changed, re-keyed; names that need escapes.
    private func chain() throws -> [MembershipEvent] {
        try Self.chainFixture().events
    }

    /// The space of ``chain()`` (also what `WireJSONTests` write and read).
    static func chainFixture() throws -> SpaceFixture {
        var fixture = try SpaceFixture()
        let (ann, annRecord) = try fixture.addMember(name: "Ann \"A/B\" \\ é \u{1F600}", rights: .invite)
        let bot = DeviceIdentity.generate()
        let botRecord = MemberRecord(
            id: .random(), keys: bot.publicKeys, rights: [.invite, .attendant], name: "bot")
        try fixture.append(fixture.roster.nextEvent(.memberAdded(botRecord), signedBy: fixture.owner))
        let invite = ann.signInvite(
            space: fixture.space, inviter: annRecord.id, nameplate: "42", createdAt: -5,
            expiresAt: 1_900_000_000,
            uses: 3)
        let joiner = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "Joe")
        try fixture.append(fixture.roster.nextEvent(.memberAdded(joiner), signedBy: bot, invite: invite))
        let (_, bob) = try fixture.addMember(name: "", signedBy: ann)
        try fixture.append(
            fixture.roster.nextEvent(.rightsChanged(bob.id, [.invite]), signedBy: fixture.owner))
        let newBob = MemberRecord(
            id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: [.invite], name: "Bob")
        try fixture.append(
            fixture.roster.nextEvent(.memberRekeyed(old: bob.id, new: newBob), signedBy: fixture.owner))
        try fixture.remove(joiner.id)
        return fixture
    }

    /// The answer as the space server writes it, and as a default `JSONEncoder` would.
    private func texts(_ events: [MembershipEvent]) throws -> [[UInt8]] {
        let sorted = JSONEncoder()
        sorted.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let pretty = JSONEncoder()
        pretty.outputFormatting = [.prettyPrinted]
        return try [sorted, JSONEncoder(), pretty].map {
            Array(try $0.encode(SpaceWire.EventList(events: events)))
        }
    }

    /// What `JSONDecoder` makes of `bytes` (nil when it refuses them).
    private func reference(_ bytes: [UInt8], vouched: Bool) -> [MembershipEvent]? {
        let decoder = JSONDecoder()
        if vouched { decoder.userInfo = [.memberKeysVouched: true] }
        return try? decoder.decode(SpaceWire.EventList.self, from: Data(bytes)).events
    }

    /// The reader either gives up or agrees with `JSONDecoder`, and `decode` always agrees.
    private func expectAgreement(_ bytes: [UInt8], _ comment: Comment? = nil) {
        for vouched in [false, true] {
            let expected = reference(bytes, vouched: vouched)
            if let fast = EventListReader.events(bytes, keysVouched: vouched) {
                #expect(fast == expected, comment)
            }
            #expect((try? SpaceWire.EventList.decode(bytes, keysVouched: vouched)) == expected, comment)
        }
    }

    /// The codec both ways: what the server stores and splices is the whole list as the encoder
    /// writes it, byte for byte, and it decodes (on the reader's path) to the events that went in.
    @Test func theServersAnswerComesBackAsItWentIn() throws {
        let events = try chain()
        let body = SpaceWire.EventList.body(storedEvents: try events.map(SpaceWire.EventList.storedText))
        #expect(body == Array(try SpaceWire.EventList.encoder.encode(SpaceWire.EventList(events: events))))
        for vouched in [false, true] {
            #expect(EventListReader.events(body, keysVouched: vouched) == events)
            #expect(try SpaceWire.EventList.decode(body, keysVouched: vouched) == events)
        }
        let empty = SpaceWire.EventList.body(storedEvents: [])
        #expect(String(decoding: empty, as: UTF8.self) == #"{"events":[]}"#)
        #expect(EventListReader.events(empty, keysVouched: false) == [])
    }

    @Test func readsWhatTheEncoderWritesExactlyAsJSONDecoderDoes() throws {
        let events = try chain()
        for text in try texts(events) {
            for vouched in [false, true] {
                #expect(EventListReader.events(text, keysVouched: vouched) == events)
                #expect(reference(text, vouched: vouched) == events)
            }
        }
        #expect(EventListReader.events(Array(#"{"events":[]}"#.utf8), keysVouched: false) == [])
        #expect(EventListReader.events(Array(#" { "events" : [ ] } "#.utf8), keysVouched: false) == [])
    }

    @Test func malformedAnswersAreRefusedAsJSONDecoderRefusesThem() throws {
        let events = try chain()
        let text = String(decoding: try texts(events)[0], as: UTF8.self)
        let one = String(decoding: try texts([events[0]])[0], as: UTF8.self)
        let version = #""version":1"#
        let sequence = #""sequence":0"#
        #expect(one.contains(version) && one.contains(sequence))
        let sealed = Base64URL.encode(events[0].signature.bytes)
        // A small-order X25519 point: the right length, refused unless the keys are vouched for.
        let badPoint = Base64URL.encode([UInt8](repeating: 0, count: 32))
        let ownerEncryption = Base64URL.encode(events[0].change.record!.keys.encryption.bytes)
        let cases: [String] = [
            "", "{", "[]", "null", #"{"events":null}"#, #"{"events":[]"#, #"{"events":[]}x"#,
            #"{"events":[],"events":[]}"#, #"{"events":[],"more":1}"#, #"{"Events":[]}"#,
            text.replacingOccurrences(of: "]}", with: ",]}"),
            one.replacingOccurrences(of: version, with: #""version":2"#),
            one.replacingOccurrences(of: version, with: #""version":1.0"#),
            one.replacingOccurrences(of: version, with: #""version":1e0"#),
            one.replacingOccurrences(of: version, with: #""version":01"#),
            one.replacingOccurrences(of: version, with: #""version":"1""#),
            one.replacingOccurrences(of: version + ",", with: ""),
            one.replacingOccurrences(of: version, with: version + "," + version),
            one.replacingOccurrences(of: version, with: version + #","extra":true"#),
            one.replacingOccurrences(of: sequence, with: #""sequence":-1"#),
            one.replacingOccurrences(of: sequence, with: #""sequence":-0"#),
            one.replacingOccurrences(of: sequence, with: #""sequence":18446744073709551616"#),
            one.replacingOccurrences(of: sequence, with: #""sequence":18446744073709551615"#),
            one.replacingOccurrences(of: #""space_created""#, with: #""member_added""#),
            one.replacingOccurrences(of: #""space_created""#, with: #""member_removed""#),
            one.replacingOccurrences(of: #""space_created""#, with: #""space_destroyed""#),
            one.replacingOccurrences(of: #""admin""#, with: #""root""#),
            one.replacingOccurrences(of: #""admin""#, with: #""adm\u0069n""#),
            one.replacingOccurrences(of: #""admin""#, with: #""\ud800""#),
            one.replacingOccurrences(of: #""Paul""#, with: "\"Pa\u{1}ul\""),
            one.replacingOccurrences(of: #""Paul""#, with: #""Pa\xul""#),
            one.replacingOccurrences(of: #""Paul""#, with: #""Pa\u00"#),
            one.replacingOccurrences(of: #""Paul""#, with: #""P\u+041""#),
            one.replacingOccurrences(of: #""Paul""#, with: #""\uD83D\uDE00""#),
            one.replacingOccurrences(of: #""Paul""#, with: #""P\u0041ul\/""#),
            one.replacingOccurrences(of: #""Paul""#, with: "null"),
            one.replacingOccurrences(of: sealed, with: String(sealed.dropLast(2))),
            one.replacingOccurrences(of: sealed, with: sealed + "="),
            one.replacingOccurrences(of: sealed, with: "!" + sealed.dropFirst()),
            one.replacingOccurrences(of: ownerEncryption, with: badPoint),
            one.replacingOccurrences(of: ownerEncryption, with: String(ownerEncryption.dropLast(3))),
            one.replacingOccurrences(of: #""signature":"#, with: #""invite":null,"signature":"#),
            one.replacingOccurrences(of: #""memberID""#, with: #""memberId""#),
        ]
        for (index, text) in cases.enumerated() {
            expectAgreement(Array(text.utf8), "case \(index)")
        }
        // Escapes the encoder never writes are still read by the reader itself.
        let escaped = one.replacingOccurrences(of: #""Paul""#, with: #""P\u0041ul\/""#)
        #expect(EventListReader.events(Array(escaped.utf8), keysVouched: true)?.count == 1)
        // Invalid UTF-8 in a name.
        var bytes = Array(one.utf8)
        let name = try #require(bytes.firstRange(of: Array("Paul".utf8)))
        bytes[name.lowerBound] = 0xFF
        expectAgreement(bytes, "invalid UTF-8")
        // The vouched reading takes a small-order key of the right length; the checked one does not.
        let small = Array(one.replacingOccurrences(of: ownerEncryption, with: badPoint).utf8)
        #expect(throws: (any Error).self) { try SpaceWire.EventList.decode(small, keysVouched: false) }
        #expect(try SpaceWire.EventList.decode(small, keysVouched: true).count == 1)
    }

    /// Random damage to a real answer (a few hundred cases): the two paths never disagree.
    @Test func damagedAnswersGiveTheSameResultAsJSONDecoder() throws {
        let text = try texts(try chain())[0]
        var random = SeededRandom(seed: 8)
        for round in 0..<300 {
            expectAgreement(Self.damage(text, &random), "round \(round)")
        }
    }

    /// `text` with one to three bytes replaced, removed or inserted (JSON's punctuation, digits,
    /// letters, a NUL, a newline, a lead byte, an invalid byte), at random places.
    static func damage(_ text: [UInt8], _ random: inout SeededRandom) -> [UInt8] {
        let alphabet = Array(#"{}[]",:\0123456789-eE.AZaz_ nu"#.utf8) + [0x00, 0x0A, 0xC3, 0xFF]
        var bytes = text
        for _ in 0...(Int(random.bytes(count: 1)[0]) % 3) {
            let pick = random.bytes(count: 4).reduce(0) { $0 << 8 | Int($1) }
            let at = pick % bytes.count
            switch pick % 3 {
            case 0: bytes[at] = alphabet[(pick >> 8) % alphabet.count]
            case 1: bytes.remove(at: at)
            default: bytes.insert(alphabet[(pick >> 8) % alphabet.count], at: at)
            }
        }
        return bytes
    }
}

extension MembershipChange {
    /// The record a change introduces, if any.
    fileprivate var record: MemberRecord? {
        switch self {
        case .spaceCreated(let record), .memberAdded(let record), .memberRekeyed(_, let record): record
        case .memberRemoved, .rightsChanged, .memberRenamed: nil
        }
    }
}
