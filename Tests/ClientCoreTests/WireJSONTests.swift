import Foundation
import PAKE
import Testing

@testable import ClientCore
@testable import SpaceModel

/// `WireJSON`, the space API's JSON without Foundation on the common path, checked against
/// `JSONEncoder` and `JSONDecoder` (what it stands in for): it writes the same bytes, and what
/// its reader returns `JSONDecoder` returns too; `WireJSON.decode` accepts and refuses exactly
/// what `JSONDecoder` does.
@Suite struct WireJSONTests {
    private static let reference: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// A space with every kind of event (`EventListReaderTests`' chain), a thread's wraps and a
    /// wrap bundle, a sign-in proof.
    private struct Fixture {
        var events: [MembershipEvent]
        var wraps: SpaceWire.WrapsRequest
        var signIn: SpaceWire.SignInRequest
        var member: MemberRecord
        /// Notes from the owner to the member.
        var notes: [InboxNote]
    }

    private func fixture() throws -> Fixture {
        let space = try EventListReaderTests.chainFixture()
        let owner = space.owner
        let member = try #require(space.roster.members.values.first { $0.id != space.ownerID })
        let threads = (0..<3).map { _ in ThreadID.random() }
        let wraps = threads.map { owner.wrap(ThreadKey.random(), for: member, in: space.space, thread: $0) }
        let keys = Dictionary(uniqueKeysWithValues: threads.map { ($0, ThreadKey.random()) })
        let bundle = try #require(owner.wrapBundle(keys, for: member, in: space.space))
        let proof = try owner.signIn(
            to: space.space, as: space.ownerID,
            challenge: Array(repeating: 7, count: SignInProof.challengeByteCount))
        let notes = try ["joined", Self.awkward].map {
            try owner.note(Array($0.utf8), to: member, in: space.space, from: space.ownerID)
        }
        return Fixture(
            events: space.events, wraps: SpaceWire.WrapsRequest(wraps: wraps, bundles: [bundle]),
            signIn: SpaceWire.SignInRequest(proof: proof, label: "phone", expiresIn: 3600), member: member,
            notes: notes)
    }

    /// Every control character, the characters `JSONEncoder` escapes, a slash and non-ASCII text.
    private static let awkward = String(
        decoding: Array(0..<0x20) + Array(#""\/ é"#.utf8) + Array("\u{1F600}\u{7F}".utf8), as: UTF8.self)

    /// The wire values of a join, as the server answers and the clients send them.
    private func values(_ fixture: Fixture) -> [any Codable] {
        let token = SpaceWire.IssuedToken(token: "t0k/en", id: "id", member: fixture.member.id, expiresAt: -1)
        var values: [any Codable] = [
            SpaceWire.EventList(events: fixture.events),
            SpaceWire.EventsRequest(events: Array(fixture.events.dropFirst())),
            SpaceWire.EventRequest(event: fixture.events[1], deviceLabel: Self.awkward),
            SpaceWire.MembersRequest(event: fixture.events[1], deviceLabel: Self.awkward),
            SpaceWire.MembersRequest(events: Array(fixture.events.dropFirst())),
            SpaceWire.MembersRequest(event: fixture.events[1], events: [], deviceLabel: ""),
            SpaceWire.EventsRequest(
                events: Array(fixture.events.dropFirst()), bundles: fixture.wraps.bundles),
            SpaceWire.EventsRequest(
                events: Array(fixture.events.dropFirst()), bundles: fixture.wraps.bundles, threadCount: 0),
            SpaceWire.MembersRequest(
                events: Array(fixture.events.dropFirst()), bundles: fixture.wraps.bundles, threadCount: 7),
            SpaceWire.MembersRequest(
                events: Array(fixture.events.dropFirst()), bundles: fixture.wraps.bundles),
            SpaceWire.MembersRequest(events: [], bundles: []),
            fixture.wraps, SpaceWire.WrapsRequest(wraps: fixture.wraps.wraps), fixture.signIn,
            SpaceWire.SignInRequest(proof: fixture.signIn.proof),
            SpaceWire.SignInRequest(
                proof: fixture.signIn.proof, label: Self.awkward, expiresIn: Int64.min, eventAt: UInt64.max),
            SpaceWire.SignInRequest(proof: fixture.signIn.proof, expiresIn: 0, eventAt: 0),
            SpaceWire.ChallengeRequest(member: fixture.member.id),
            SpaceWire.Challenge(challenge: "abc", expiresAt: Int64.max), token,
            SpaceWire.AppendedEvents(appended: [
                SpaceWire.AppendedEvent(sequence: 3, hash: "h", deviceToken: token),
                SpaceWire.AppendedEvent(sequence: UInt64.max, hash: "g"),
            ]),
            SpaceWire.AppendedEvents(
                appended: [SpaceWire.AppendedEvent(sequence: 3, hash: "h")], wrapsStored: 0),
            SpaceWire.AppendedEvents(
                appended: [
                    SpaceWire.AppendedEvent(sequence: 3, hash: "h", signInChallenge: "c", messages: 12)
                ],
                wrapsStored: 1, threadCount: 4),
            SpaceWire.ThreadList(threads: [
                SpaceWire.ThreadInfo(
                    id: .random(), createdBy: fixture.member.id, createdAt: Int64.min, metadata: Self.awkward,
                    messages: 0),
                SpaceWire.ThreadInfo(id: .random(), createdBy: fixture.member.id, createdAt: 5),
            ]),
            SpaceWire.ThreadList(threads: []),
            SpaceWire.WrapList(wraps: fixture.wraps.wraps, bundles: fixture.wraps.bundles),
            SpaceWire.WrapList(wraps: fixture.wraps.wraps), SpaceWire.WrapList(wraps: [], bundles: []),
            SpaceWire.StoredCount(stored: 12), SpaceWire.AppendedMessage(cursor: -7),
            SpaceWire.AppendedEvent(sequence: 0, hash: Self.awkward, deviceToken: token),
            SpaceWire.AppendedEvent(sequence: 9, hash: ""), SpaceWire.StoredCount(stored: -1),
            SpaceWire.NoteRequest(note: fixture.notes[0]), SpaceWire.NotesRequest(notes: fixture.notes),
            SpaceWire.NotesRequest(notes: []), SpaceWire.NoteStored(id: Int64.min),
            SpaceWire.NotesStored(ids: [1, Int64.max, 0]), SpaceWire.NotesStored(ids: []),
            SpaceWire.MemberList(
                members: [
                    SpaceWire.MemberInfo(
                        id: fixture.member.id, keys: fixture.member.keys, rights: .all, name: "Ann",
                        addedSequence: 1)
                ],
                formerMembers: [
                    SpaceWire.MemberInfo(
                        id: .random(), keys: fixture.member.keys, rights: [], name: "", addedSequence: 2,
                        removedSequence: 4)
                ]),
        ]
        values += fixture.events.map { $0 as any Codable }
        return values
    }

    /// The value `JSONDecoder` reads from `bytes`, written again by `JSONEncoder` (nil when it refuses).
    private func referenceReading<T: Codable>(_ type: T.Type, _ bytes: [UInt8]) -> [UInt8]? {
        guard let value = try? JSONDecoder().decode(type, from: Data(bytes)) else { return nil }
        return try? Array(Self.reference.encode(value))
    }

    /// The fast reader and the hand readers give up or agree with `JSONDecoder`;
    /// `WireJSON.decode` always agrees.
    private func expectAgreement<T: Codable>(_ type: T.Type, _ bytes: [UInt8], _ comment: Comment? = nil) {
        let expected = referenceReading(type, bytes)
        if let fast = WireJSON.fastDecode(type, from: bytes, userInfo: [:]) {
            #expect((try? Array(Self.reference.encode(fast))) == expected, comment)
        }
        if let strict = WireJSON.strictDecode(type, from: bytes) {
            #expect((try? Array(Self.reference.encode(strict))) == expected, comment)
        }
        let decoded = try? WireJSON.decode(type, from: bytes)
        #expect(decoded.flatMap { try? Array(Self.reference.encode($0)) } == expected, comment)
    }

    @Test func writesWhatJSONEncoderWritesByteForByte() throws {
        for (index, value) in values(try fixture()).enumerated() {
            let expected = Array(try Self.reference.encode(value))
            #expect(WireJSON.fastEncode(value) == expected, "value \(index)")
            #expect(try WireJSON.encode(value) == expected, "value \(index)")
            // The answers written field by field, too.
            if value is SpaceWire.WrapList || value is SpaceWire.ThreadList
                || value is SpaceWire.EventsRequest
            {
                #expect(WireJSON.directEncode(value) == expected, "value \(index)")
            }
            // The server's answers to admissions and sign-ins are written by hand.
            if value is SpaceWire.AppendedEvents || value is SpaceWire.AppendedEvent
                || value is SpaceWire.IssuedToken
            {
                var out: [UInt8] = []
                (value as? any DirectJSONWritable)?.writeJSON(into: &out)
                #expect(out == expected, "value \(index)")
            }
        }
        // The stored form of each event, which the server splices into its answers.
        for event in try fixture().events {
            #expect(
                try SpaceWire.EventList.storedText(event).utf8.elementsEqual(Self.reference.encode(event)))
        }
    }

    @Test func readsWhatJSONEncoderWritesAsJSONDecoderDoes() throws {
        let pretty = JSONEncoder()
        pretty.outputFormatting = [.prettyPrinted]
        for (index, value) in values(try fixture()).enumerated() {
            for encoder in [Self.reference, JSONEncoder(), pretty] {
                let bytes = Array(try encoder.encode(value))
                func check<T: Codable>(_ value: T) {
                    // The fast reader takes every form an encoder writes.
                    let fast = WireJSON.fastDecode(T.self, from: bytes, userInfo: [:])
                    #expect(fast != nil, "value \(index)")
                    // And the hand readers every form of their bodies.
                    if T.self is any StrictJSONReadable.Type {
                        #expect(WireJSON.strictDecode(T.self, from: bytes) != nil, "value \(index)")
                    }
                    expectAgreement(T.self, bytes, "value \(index)")
                }
                check(value)
            }
        }
    }

    /// Forms the fast reader leaves to `JSONDecoder`, and text it refuses: same results.
    @Test func malformedBodiesGetJSONDecodersAnswer() throws {
        let fixture = try fixture()
        let signIn = String(decoding: try Self.reference.encode(fixture.signIn), as: UTF8.self)
        let expires = #""expiresIn":3600"#
        #expect(signIn.contains(expires))
        let cases: [String] = [
            "", "{", "[]", "null", "{}", #"{"proof":null}"#, signIn + "x", signIn + " ",
            signIn.replacingOccurrences(of: expires, with: #""expiresIn":3600.0"#),
            signIn.replacingOccurrences(of: expires, with: #""expiresIn":36e2"#),
            signIn.replacingOccurrences(of: expires, with: #""expiresIn":03600"#),
            signIn.replacingOccurrences(of: expires, with: #""expiresIn":-0"#),
            signIn.replacingOccurrences(of: expires, with: #""expiresIn":-3600"#),
            signIn.replacingOccurrences(of: expires, with: #""expiresIn":9223372036854775808"#),
            signIn.replacingOccurrences(of: expires, with: #""expiresIn":"3600""#),
            signIn.replacingOccurrences(of: expires, with: #""expiresIn":null"#),
            signIn.replacingOccurrences(of: expires, with: expires + "," + expires),
            signIn.replacingOccurrences(of: expires, with: expires + #","expiresIn":1"#),
            signIn.replacingOccurrences(of: expires, with: expires + #","other":[1.5,{"a":null}]"#),
            signIn.replacingOccurrences(of: #""phone""#, with: #""ph\u006fne\/""#),
            signIn.replacingOccurrences(of: #""phone""#, with: #""\ud800""#),
            signIn.replacingOccurrences(of: #""phone""#, with: #""\uD83D\uDE00""#),
            signIn.replacingOccurrences(of: #""phone""#, with: "\"ph\u{1}one\""),
            signIn.replacingOccurrences(of: #""phone""#, with: "true"),
        ]
        for (index, text) in cases.enumerated() {
            expectAgreement(SpaceWire.SignInRequest.self, Array(text.utf8), "case \(index)")
        }
        // The fast reader reads plain forms itself, and leaves the others to `JSONDecoder`.
        for (text, fast) in [
            (signIn.replacingOccurrences(of: expires, with: #""expiresIn":-3600"#), true),
            (signIn.replacingOccurrences(of: #""phone""#, with: #""ph\u006fne\/""#), true),
            (signIn.replacingOccurrences(of: expires, with: #""expiresIn":3600.0"#), false),
            (signIn.replacingOccurrences(of: expires, with: expires + "," + expires), false),
        ] {
            #expect(
                (WireJSON.fastDecode(SpaceWire.SignInRequest.self, from: Array(text.utf8), userInfo: [:])
                    != nil)
                    == fast, "\(text)")
        }
        var bytes = Array(signIn.utf8)
        let label = try #require(bytes.firstRange(of: Array("phone".utf8)))
        bytes[label.lowerBound] = 0xFF
        expectAgreement(SpaceWire.SignInRequest.self, bytes, "invalid UTF-8")
    }

    /// Random damage to real bodies (a few hundred cases each): the two paths never disagree.
    @Test func damagedBodiesGiveTheSameResultAsJSONDecoder() throws {
        let fixture = try fixture()
        var random = SeededRandom(seed: 12)
        func damage(_ text: [UInt8]) -> [UInt8] { EventListReaderTests.damage(text, &random) }
        let wraps = Array(try Self.reference.encode(fixture.wraps))
        let signIn = Array(try Self.reference.encode(fixture.signIn))
        let signInAt = Array(
            try Self.reference.encode(
                SpaceWire.SignInRequest(
                    proof: fixture.signIn.proof, label: "a\u{1}b", expiresIn: -5, eventAt: 7)))
        let appended = Array(
            try Self.reference.encode(
                SpaceWire.AppendedEvents(
                    appended: [SpaceWire.AppendedEvent(sequence: 3, hash: "h", messages: 5)], wrapsStored: 2,
                    threadCount: 3)))
        let members = Array(
            try Self.reference.encode(
                SpaceWire.MembersRequest(event: fixture.events[1], deviceLabel: "ph\u{1}one")))
        let membersList = Array(
            try Self.reference.encode(
                SpaceWire.MembersRequest(
                    events: Array(fixture.events.prefix(3)), bundles: fixture.wraps.bundles)))
        // The attendant's answers per joiner.
        let appendedToken = Array(
            try Self.reference.encode(
                SpaceWire.AppendedEvent(
                    sequence: 4, hash: "h",
                    deviceToken: SpaceWire.IssuedToken(
                        token: "t/k", id: "i", member: fixture.member.id, expiresAt: 9)))
        )
        let threads = Array(
            try Self.reference.encode(
                SpaceWire.ThreadList(threads: [
                    SpaceWire.ThreadInfo(
                        id: .random(), createdBy: fixture.member.id, createdAt: 17, metadata: "m-e_t",
                        messages: 3),
                    SpaceWire.ThreadInfo(id: .random(), createdBy: fixture.member.id, createdAt: 5),
                ])))
        let stored = Array(try Self.reference.encode(SpaceWire.StoredCount(stored: 2)))
        let noteStored = Array(try Self.reference.encode(SpaceWire.NoteStored(id: 42)))
        let notesStored = Array(try Self.reference.encode(SpaceWire.NotesStored(ids: [42, 43, 7])))
        for round in 0..<200 {
            expectAgreement(SpaceWire.AppendedEvent.self, damage(appendedToken), "appended token \(round)")
            expectAgreement(SpaceWire.ThreadList.self, damage(threads), "threads \(round)")
            expectAgreement(SpaceWire.StoredCount.self, damage(stored), "stored \(round)")
            expectAgreement(SpaceWire.NoteStored.self, damage(noteStored), "note stored \(round)")
            expectAgreement(SpaceWire.NotesStored.self, damage(notesStored), "notes stored \(round)")
            expectAgreement(SpaceWire.WrapsRequest.self, damage(wraps), "wraps \(round)")
            expectAgreement(SpaceWire.MembersRequest.self, damage(members), "members \(round)")
            expectAgreement(SpaceWire.MembersRequest.self, damage(membersList), "member list \(round)")
            expectAgreement(SpaceWire.SignInRequest.self, damage(signIn), "sign-in \(round)")
            expectAgreement(SpaceWire.SignInRequest.self, damage(signInAt), "sign-in with eventAt \(round)")
            expectAgreement(SpaceWire.AppendedEvents.self, damage(appended), "appended \(round)")
        }
    }

    /// Random bodies of the attendant's per-joiner requests and answers (sizes, numbers at the
    /// edges, awkward text): the hand writers write `JSONEncoder`'s bytes, the hand readers read
    /// what `JSONDecoder` reads, in every form an encoder writes.
    @Test func randomAttendantBodiesMatchCodable() throws {
        let fixture = try fixture()
        var random = SeededRandom(seed: 14)
        func number(_ limit: Int) -> Int {
            Int(random.bytes(count: 2).reduce(0) { $0 << 8 | Int($1) }) % limit
        }
        func int64() -> Int64 {
            switch number(4) {
            case 0: Int64.min
            case 1: Int64.max
            default: Int64(bitPattern: random.bytes(count: 8).reduce(0) { $0 << 8 | UInt64($1) })
            }
        }
        func text() -> String {
            [
                Self.awkward, "", "m",
                String(decoding: random.bytes(count: number(40)).map { $0 & 0x7F }, as: UTF8.self),
            ][
                number(4)]
        }
        let pretty = JSONEncoder()
        pretty.outputFormatting = [.prettyPrinted]
        for round in 0..<100 {
            let identity = DeviceIdentity.generate()
            let notes = try (0..<number(4)).map { _ in
                try identity.note(
                    random.bytes(count: 1 + number(300)), to: fixture.member, in: .random(), from: .random())
            }
            let threads = SpaceWire.ThreadList(
                threads: (0..<number(5)).map { _ in
                    SpaceWire.ThreadInfo(
                        id: .random(), createdBy: .random(), createdAt: int64(),
                        metadata: number(2) == 0 ? nil : text(), messages: number(2) == 0 ? nil : Int(int64())
                    )
                })
            let appended = SpaceWire.AppendedEvents(
                appended: (0..<number(4)).map { _ in
                    SpaceWire.AppendedEvent(
                        sequence: UInt64(bitPattern: int64()), hash: text(),
                        deviceToken: number(2) == 0
                            ? nil
                            : SpaceWire.IssuedToken(
                                token: text(), id: text(), member: .random(), expiresAt: int64()),
                        signInChallenge: number(2) == 0 ? nil : text(),
                        messages: number(2) == 0 ? nil : Int(int64()))
                },
                wrapsStored: number(2) == 0 ? nil : Int(int64()),
                threadCount: number(2) == 0 ? nil : Int(int64()))
            let wraps = SpaceWire.WrapsRequest(
                wraps: Array(fixture.wraps.wraps.prefix(number(4))),
                bundles: number(2) == 0 ? nil : Array(fixture.wraps.bundles?.prefix(number(2)) ?? []))
            let token = SpaceWire.IssuedToken(
                token: text(), id: text(), member: .random(), expiresAt: int64())
            let written: [any Encodable] =
                [
                    SpaceWire.NotesRequest(notes: notes), wraps, appended, token,
                    SpaceWire.EventsRequest(
                        events: Array(fixture.events.prefix(number(4))), bundles: wraps.bundles,
                        threadCount: number(2) == 0 ? nil : Int(int64())),
                ] + notes.map { SpaceWire.NoteRequest(note: $0) }
            for value in written {
                // Written by hand, the admission's request by `directEncode`.
                #expect(value is any DirectJSONWritable || value is SpaceWire.EventsRequest, "round \(round)")
                #expect(try WireJSON.encode(value) == Array(Self.reference.encode(value)), "round \(round)")
            }
            func check<T: Codable>(_ value: T) throws {
                for encoder in [Self.reference, JSONEncoder(), pretty] {
                    let bytes = Array(try encoder.encode(value))
                    #expect(WireJSON.strictDecode(T.self, from: bytes) != nil, "round \(round) \(T.self)")
                    expectAgreement(T.self, bytes, "round \(round) \(T.self)")
                }
            }
            try check(threads)
            try check(appended)
            try check(SpaceWire.StoredCount(stored: Int(int64())))
            try check(SpaceWire.NoteStored(id: int64()))
            try check(SpaceWire.NotesStored(ids: (0..<number(5)).map { _ in int64() }))
        }
    }

    /// The hand readers of the wraps and members bodies leave what they do not fully know to
    /// the generic reader and `JSONDecoder`: the same answers either way.
    @Test func handReadersLeaveTheUnknownToTheOtherReaders() throws {
        let fixture = try fixture()
        let wraps = String(decoding: try Self.reference.encode(fixture.wraps), as: UTF8.self)
        let signer = Base64URL.encode(fixture.wraps.wraps[0].signer.bytes)
        let small = Base64URL.encode([UInt8](repeating: 0, count: 32))
        let sealed = Base64URL.encode(fixture.wraps.wraps[0].sealed)
        let threads = try #require(fixture.wraps.bundles?.first).entries.map {
            Base64URL.encode($0.thread.bytes)
        }
        let cases: [(String, strict: Bool)] = [
            (wraps, true),
            (wraps.replacingOccurrences(of: #""bundles":["#, with: #""bundles":null,"x":["#), false),
            (wraps.replacingOccurrences(of: #"{"bundles":"#, with: #"{"wraps":[],"bundles":"#), false),
            (wraps.replacingOccurrences(of: #"{"bundles":"#, with: #"{"other":1,"bundles":"#), false),
            (wraps.replacingOccurrences(of: signer, with: small), false),
            (wraps.replacingOccurrences(of: sealed, with: String(sealed.dropLast(4))), false),
            (wraps.replacingOccurrences(of: threads[0], with: "__"), false),
            (wraps.replacingOccurrences(of: threads[0], with: threads[2]), false),
            (wraps.replacingOccurrences(of: "\"" + sealed, with: "\"\\u0041" + sealed.dropFirst()), false),
            (#"{"wraps":[]}"#, true), (#"{"wraps":[],"bundles":[]}"#, true), (#"{"bundles":[]}"#, false),
        ]
        for (index, (text, strict)) in cases.enumerated() {
            let bytes = Array(text.utf8)
            #expect(
                (WireJSON.strictDecode(SpaceWire.WrapsRequest.self, from: bytes) != nil) == strict,
                "case \(index)")
            expectAgreement(SpaceWire.WrapsRequest.self, bytes, "case \(index)")
        }
        let members = String(
            decoding: try Self.reference.encode(
                SpaceWire.MembersRequest(event: fixture.events[1], deviceLabel: "a")),
            as: UTF8.self)
        let memberCases: [(String, strict: Bool)] = [
            (members, true), ("{}", true), (#"{"deviceLabel":"\u00e9\n"}"#, true),
            (members.replacingOccurrences(of: #""deviceLabel":"a""#, with: #""deviceLabel":null"#), false),
            (
                members.replacingOccurrences(of: #""deviceLabel":"a""#, with: #""deviceLabel":"\ud800""#),
                false
            ),
            (
                members.replacingOccurrences(of: #"{"deviceLabel""#, with: #"{"events":[],"deviceLabel""#),
                true
            ),
            (members.replacingOccurrences(of: #""version":1"#, with: #""version":1.0"#), false),
            (members.replacingOccurrences(of: #""version":1"#, with: #""version":2"#), false),
        ]
        for (index, (text, strict)) in memberCases.enumerated() {
            let bytes = Array(text.utf8)
            #expect(
                (WireJSON.strictDecode(SpaceWire.MembersRequest.self, from: bytes) != nil) == strict,
                "member case \(index)")
            expectAgreement(SpaceWire.MembersRequest.self, bytes, "member case \(index)")
        }
        // Keys vouched for are the generic reader's: the hand readers check every point.
        #expect(WireJSON.strictDecode(SpaceWire.EventList.self, from: Array(#"{"events":[]}"#.utf8)) == nil)
    }

    /// A type that swallows a failure (`try?`) still goes to `JSONDecoder` when the fast reader
    /// could not read a field; floating point and Foundation's special types are Foundation's.
    @Test func whatTheFastPathDoesNotKnowGoesToFoundation() throws {
        struct Lenient: Codable {
            let count: Int?
            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                count = try? c.decode(Int.self, forKey: .count)
            }
        }
        struct Special: Codable, Equatable {
            let data: Data
            let date: Date
            let ratio: Double
        }
        let lenient = Array(#"{"count":2.0}"#.utf8)
        #expect(WireJSON.fastDecode(Lenient.self, from: lenient, userInfo: [:]) == nil)
        #expect(
            try WireJSON.decode(Lenient.self, from: lenient).count
                == (try JSONDecoder().decode(Lenient.self, from: Data(lenient)).count))
        let special = Special(data: Data([1, 2, 255]), date: Date(timeIntervalSince1970: 12.5), ratio: 0.1)
        #expect(WireJSON.fastEncode(special) == nil)
        let bytes = try WireJSON.encode(special)
        #expect(bytes == Array(try Self.reference.encode(special)))
        #expect(WireJSON.fastDecode(Special.self, from: bytes, userInfo: [:]) == nil)
        #expect(try WireJSON.decode(Special.self, from: bytes) == special)
    }

    /// `userInfo` reaches the types' decoders (an event list read with keys vouched for).
    @Test func userInfoReachesTheDecoders() throws {
        let fixture = try fixture()
        let ownerEncryption = Base64URL.encode(
            try #require(fixture.events[0].change.addedRecord).keys.encryption.bytes)
        let badPoint = Base64URL.encode([UInt8](repeating: 0, count: 32))
        let text = String(
            decoding: try Self.reference.encode(SpaceWire.EventList(events: [fixture.events[0]])),
            as: UTF8.self)
        let small = Array(text.replacingOccurrences(of: ownerEncryption, with: badPoint).utf8)
        #expect(WireJSON.fastDecode(SpaceWire.EventList.self, from: small, userInfo: [:]) == nil)
        #expect(throws: (any Error).self) { try WireJSON.decode(SpaceWire.EventList.self, from: small) }
        let vouched = try WireJSON.decode(
            SpaceWire.EventList.self, from: small, userInfo: [.memberKeysVouched: true])
        #expect(vouched.events.count == 1)
    }
}

extension MembershipChange {
    /// The record a change introduces, if any.
    fileprivate var addedRecord: MemberRecord? {
        switch self {
        case .spaceCreated(let record), .memberAdded(let record), .memberRekeyed(_, let record): record
        case .memberRemoved, .rightsChanged, .memberRenamed: nil
        }
    }
}
