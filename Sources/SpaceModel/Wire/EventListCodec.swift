import Foundation

// `GET …/events`, both directions, in one place: the server writes each event once with
// ``SpaceWire/EventList/encoder`` when it stores it and splices the stored texts into the answer
// (``SpaceWire/EventList/body(storedEvents:)``); a client reads the answer with
// ``SpaceWire/EventList/decode(_:keysVouched:)``. Reading stays two paths, because `JSONDecoder`
// was ~40% of a joiner's CPU (docs/bot.md, "Third round"): ``EventListReader`` reads exactly the
// form the encoder writes, and anything else goes to `JSONDecoder`. `EventListReaderTests` check
// that the two read alike and that what the server writes comes back as it went in.
extension SpaceWire.EventList {
    /// How the space server writes an event (and every other answer): keys sorted, slashes as
    /// they are. ``EventListReader`` reads this form without `JSONDecoder`.
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// One event as the server stores it and sends it in the list: what ``encoder`` writes,
    /// written by hand (``WireJSON/write(_:into:)``).
    public static func storedText(_ event: MembershipEvent) throws -> String {
        var out: [UInt8] = []
        WireJSON.write(event, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The answer `{"events":[…]}` from events as ``storedText(_:)`` wrote them: spliced, not
    /// decoded and encoded again (attendants and older joiners read it all). The same bytes as
    /// ``encoder`` writes for the whole list.
    public static func body(storedEvents texts: [String]) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(texts.reduce(16) { $0 + $1.utf8.count + 1 })
        body += #"{"events":["#.utf8
        for (index, text) in texts.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            var text = text
            text.withUTF8 { body.append(contentsOf: $0) }
        }
        body += "]}".utf8
        return body
    }

    /// Decodes a `GET …/events` answer. Every joiner reads the whole chain, so the common form
    /// (what ``MembershipEvent``'s `Codable` writes) is read by ``EventListReader``, which accepts
    /// only text whose meaning is unambiguous (no unknown or repeated keys, integers in plain
    /// form, every field valid as the `Codable` path checks it); anything else goes to
    /// `JSONDecoder`, which accepts or refuses it exactly as before. With `keysVouched`, member
    /// keys are checked as ``CodingUserInfoKey/memberKeysVouched`` says.
    public static func decode(_ bytes: [UInt8], keysVouched: Bool) throws -> [MembershipEvent] {
        if let events = EventListReader.events(bytes, keysVouched: keysVouched) { return events }
        let decoder = JSONDecoder()
        if keysVouched { decoder.userInfo = [.memberKeysVouched: true] }
        return try decoder.decode(Self.self, from: Data(bytes)).events
    }
}

/// Reads one fixed JSON shape, `{"events":[<membership event>, …]}`, with ``StrictJSONReader``:
/// nil on anything it does not fully understand, so what it returns is always what
/// `JSONDecoder` would return for the same text.
enum EventListReader {
    /// The events, or nil when the text is not in the form this reader knows.
    static func events(_ bytes: [UInt8], keysVouched: Bool) -> [MembershipEvent]? {
        var reader = StrictJSONReader(bytes, keysVouched: keysVouched)
        guard let events = reader.eventList(), reader.atEnd() else { return nil }
        return events
    }
}

extension StrictJSONReader {
    fileprivate mutating func eventList() -> [MembershipEvent]? {
        var events: [MembershipEvent]?
        var object = ObjectScan(keys: [Array("events".utf8)])
        while let key = nextKey(&object) {
            guard key == 0, let list = array({ $0.event() }) else { return nil }
            events = list
        }
        return object.failed ? nil : events
    }

    private static let eventKeys = keys(
        "version", "space", "sequence", "previous", "type", "member", "memberID", "rights", "signer",
        "invite", "signature")

    /// One event in the form `MembershipEvent`'s `Codable` writes (any key order, white space).
    public mutating func event() -> MembershipEvent? {
        var version: Int?
        var space: SpaceID?
        var sequence: UInt64?
        var previous: EventHash?
        var type: String?
        var member: MemberRecord?
        var memberID: MemberID?
        var rights: MemberRights?
        var signer: MemberID?
        var invite: SignedInvite?
        var signature: Signature?
        var object = ObjectScan(keys: Self.eventKeys)
        while let key = nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = Self.got(&version, int())
            case 1: read = Self.got(&space, identifier())
            case 2: read = Self.got(&sequence, unsigned())
            case 3: read = Self.got(&previous, byteString().flatMap { try? EventHash(bytes: $0) })
            case 4: read = Self.got(&type, string())
            case 5: read = Self.got(&member, memberRecord())
            case 6: read = Self.got(&memberID, identifier())
            case 7: read = Self.got(&rights, memberRights())
            case 8: read = Self.got(&signer, identifier())
            case 9: read = Self.got(&invite, signedInvite())
            default: read = Self.got(&signature, signatureBytes())
            }
            if !read { return nil }
        }
        guard !object.failed, version == MembershipEvent.jsonVersion, let type, let space, let sequence,
            let previous, let signer, let signature
        else { return nil }
        let change: MembershipChange
        switch type {
        case "space_created":
            guard let member else { return nil }
            change = .spaceCreated(owner: member)
        case "member_added":
            guard let member else { return nil }
            change = .memberAdded(member)
        case "member_removed":
            guard let memberID else { return nil }
            change = .memberRemoved(memberID)
        case "rights_changed":
            guard let memberID, let rights else { return nil }
            change = .rightsChanged(memberID, rights)
        case "member_rekeyed":
            guard let memberID, let member else { return nil }
            change = .memberRekeyed(old: memberID, new: member)
        default:
            return nil
        }
        return MembershipEvent(
            space: space, sequence: sequence, previous: previous, change: change, signer: signer,
            invite: invite, signature: signature)
    }
}

// The sign-in answer that carries the joiner's own event (`POST …/sign-in` with `eventAt`): the
// server splices the event's stored text as it does into the list, and the client reads it with
// the list's reader, so the event arrives and is checked exactly as `GET …/events` gives it.
extension SpaceWire.SignedIn: StrictJSONReadable {
    /// The answer's bytes, `token` with the event as ``SpaceWire/EventList/storedText(_:)``
    /// wrote it (when there is one): what ``SpaceWire/EventList/encoder`` writes for the whole.
    public static func body(token: SpaceWire.IssuedToken, storedEvent: String?) throws -> [UInt8] {
        let fields = try WireJSON.encode(token)
        guard var storedEvent, fields.first == UInt8(ascii: "{") else { return fields }
        // Keys sorted: `event` comes before every key of the token.
        var body: [UInt8] = []
        body.reserveCapacity(fields.count + storedEvent.utf8.count + 10)
        body += #"{"event":"#.utf8
        storedEvent.withUTF8 { body.append(contentsOf: $0) }
        body.append(UInt8(ascii: ","))
        body += fields.dropFirst()
        return body
    }

    private static let keys = StrictJSONReader.keys("token", "id", "member", "expiresAt", "event")

    public static func read(_ reader: inout StrictJSONReader) -> Self? {
        var token: String?
        var id: String?
        var member: MemberID?
        var expiresAt: Int?
        var event: MembershipEvent?
        var object = StrictJSONReader.ObjectScan(keys: keys)
        while let key = reader.nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = StrictJSONReader.got(&token, reader.string())
            case 1: read = StrictJSONReader.got(&id, reader.string())
            case 2: read = StrictJSONReader.got(&member, reader.identifier())
            case 3: read = StrictJSONReader.got(&expiresAt, reader.int())
            default: read = StrictJSONReader.got(&event, reader.event())
            }
            if !read { return nil }
        }
        guard !object.failed, let token, let id, let member, let expiresAt else { return nil }
        return Self(token: token, id: id, member: member, expiresAt: Int64(expiresAt), event: event)
    }
}
