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

    /// One event as the server stores it and sends it in the list.
    public static func storedText(_ event: MembershipEvent) throws -> String {
        String(decoding: try WireJSON.encode(event), as: UTF8.self)
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

/// A reader for one fixed JSON shape, `{"events":[<membership event>, …]}`, that gives up
/// (returns nil) on anything it does not fully understand instead of guessing, so what it
/// returns is always what `JSONDecoder` would return for the same text.
struct EventListReader {
    private let bytes: [UInt8]
    private var at = 0
    private let keysVouched: Bool

    private init(bytes: [UInt8], keysVouched: Bool) {
        self.bytes = bytes
        self.keysVouched = keysVouched
    }

    /// The events, or nil when the text is not in the form this reader knows.
    static func events(_ bytes: [UInt8], keysVouched: Bool) -> [MembershipEvent]? {
        var reader = Self(bytes: bytes, keysVouched: keysVouched)
        guard let events = reader.eventList() else { return nil }
        reader.skipSpace()
        return reader.at == reader.bytes.count ? events : nil
    }

    // MARK: The shape

    private mutating func eventList() -> [MembershipEvent]? {
        var events: [MembershipEvent]?
        var object = ObjectScan(keys: [Array("events".utf8)])
        while let key = nextKey(&object) {
            guard key == 0, consume(UInt8(ascii: "[")) else { return nil }
            var list: [MembershipEvent] = []
            var first = true
            while !consume(UInt8(ascii: "]")) {
                if !first { guard consume(UInt8(ascii: ",")) else { return nil } }
                first = false
                guard let event = event() else { return nil }
                list.append(event)
            }
            events = list
        }
        return object.failed ? nil : events
    }

    private static let eventKeys = Self.keys(
        "version", "space", "sequence", "previous", "type", "member", "memberID", "rights", "signer",
        "invite", "signature")

    private static func keys(_ names: String...) -> [[UInt8]] { names.map { Array($0.utf8) } }

    private mutating func event() -> MembershipEvent? {
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
            default: read = Self.got(&signature, byteString().flatMap { try? Signature(bytes: $0) })
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

    private mutating func memberRecord() -> MemberRecord? {
        var id: MemberID?
        var keys: MemberPublicKeys?
        var rights: MemberRights?
        var name: String?
        var sealed: SealedName?
        var object = ObjectScan(keys: Self.memberKeys)
        while let key = nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = Self.got(&id, identifier())
            case 1: read = Self.got(&keys, publicKeys())
            case 2: read = Self.got(&rights, memberRights())
            case 3: read = Self.got(&name, string())
            default: read = Self.got(&sealed, sealedName())
            }
            if !read { return nil }
        }
        guard !object.failed, let id, let keys, let rights, name != nil || sealed != nil else { return nil }
        // As `MemberRecord`'s decoder: beside a sealed name, a name in clear is not signed.
        return MemberRecord(
            id: id, keys: keys, rights: rights, name: sealed == nil ? name ?? "" : "", sealedName: sealed)
    }

    private mutating func sealedName() -> SealedName? {
        var thread: ThreadID?
        var box: [UInt8]?
        var object = ObjectScan(keys: Self.sealedNameKeys)
        while let key = nextKey(&object) {
            let read = key == 0 ? Self.got(&thread, identifier()) : Self.got(&box, byteString())
            if !read { return nil }
        }
        guard !object.failed, let thread, let box else { return nil }
        return try? SealedName(thread: thread, box: box)
    }

    private static let memberKeys = Self.keys("id", "keys", "rights", "name", "sealedName")
    private static let sealedNameKeys = Self.keys("thread", "box")
    private static let publicKeyKeys = Self.keys("encryption", "signing")
    private static let inviteKeys = Self.keys(
        "v", "space", "inviter", "inviter_key", "nameplate", "created_at", "expires_at", "uses", "signature")

    private mutating func publicKeys() -> MemberPublicKeys? {
        var encryption: [UInt8]?
        var signing: [UInt8]?
        var object = ObjectScan(keys: Self.publicKeyKeys)
        while let key = nextKey(&object) {
            guard key == 0 ? Self.got(&encryption, byteString()) : Self.got(&signing, byteString()) else {
                return nil
            }
        }
        guard !object.failed, let encryption, let signing else { return nil }
        if keysVouched {
            guard encryption.count == EncryptionPublicKey.byteCount,
                signing.count == SigningPublicKey.byteCount
            else { return nil }
            return MemberPublicKeys(
                encryption: EncryptionPublicKey(trusted: encryption),
                signing: SigningPublicKey(trusted: signing))
        }
        guard let e = try? EncryptionPublicKey(bytes: encryption),
            let s = try? SigningPublicKey(bytes: signing)
        else { return nil }
        return MemberPublicKeys(encryption: e, signing: s)
    }

    private mutating func signedInvite() -> SignedInvite? {
        var v: Int?
        var space: SpaceID?
        var inviter: MemberID?
        var inviterKey: String?
        var nameplate: String?
        var createdAt: Int?
        var expiresAt: Int?
        var uses: Int?
        var signature: String?
        var object = ObjectScan(keys: Self.inviteKeys)
        while let key = nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = Self.got(&v, int())
            case 1: read = Self.got(&space, identifier())
            case 2: read = Self.got(&inviter, identifier())
            case 3: read = Self.got(&inviterKey, string())
            case 4: read = Self.got(&nameplate, string())
            case 5: read = Self.got(&createdAt, int())
            case 6: read = Self.got(&expiresAt, int())
            case 7: read = Self.got(&uses, int())
            default: read = Self.got(&signature, string())
            }
            if !read { return nil }
        }
        guard !object.failed, let v, let space, let inviter, let inviterKey, let nameplate, let createdAt,
            let expiresAt, let uses, let signature
        else { return nil }
        return SignedInvite(
            v: v, space: space, inviter: inviter, inviterKey: inviterKey, nameplate: nameplate,
            createdAt: Int64(createdAt), expiresAt: Int64(expiresAt), uses: uses, signature: signature)
    }

    /// Stores a value just read; false when there was none (the text is not in this form).
    private static func got<T>(_ slot: inout T?, _ value: T?) -> Bool {
        slot = value
        return value != nil
    }

    private mutating func memberRights() -> MemberRights? {
        guard consume(UInt8(ascii: "[")) else { return nil }
        var names: [String] = []
        while !consume(UInt8(ascii: "]")) {
            if !names.isEmpty { guard consume(UInt8(ascii: ",")) else { return nil } }
            guard let name = string() else { return nil }
            names.append(name)
        }
        return try? MemberRights(names: names)
    }

    private mutating func identifier<Kind>() -> Identifier<Kind>? {
        byteString().flatMap { try? Identifier(bytes: $0) }
    }

    /// A base64url string's bytes (base64url never needs an escape: one is left to JSONDecoder).
    private mutating func byteString() -> [UInt8]? {
        plainString().flatMap { Base64URL.decode(utf8: $0) }
    }

    // MARK: JSON pieces

    /// Which keys an object may hold, which it held, and whether reading it failed.
    private struct ObjectScan {
        let keys: [[UInt8]]
        var seen: UInt32 = 0
        var started = false
        var failed = false

        init(keys: [[UInt8]]) { self.keys = keys }
    }

    /// The index of the next key of the object (its `{`, `,` and `:` consumed), or nil at its end
    /// or on anything else (then `object.failed`): an unknown or repeated key, or bad syntax.
    private mutating func nextKey(_ object: inout ObjectScan) -> Int? {
        if !object.started {
            object.started = true
            guard consume(UInt8(ascii: "{")) else {
                object.failed = true
                return nil
            }
            if consume(UInt8(ascii: "}")) { return nil }
        } else {
            if consume(UInt8(ascii: "}")) { return nil }
            guard consume(UInt8(ascii: ",")) else {
                object.failed = true
                return nil
            }
        }
        // Keys compared as bytes, so no two spellings (Unicode equivalence, escapes) name one key.
        guard let name = plainString(), let index = object.keys.firstIndex(where: { $0.elementsEqual(name) }),
            object.seen & (1 << index) == 0, consume(UInt8(ascii: ":"))
        else {
            object.failed = true
            return nil
        }
        object.seen |= 1 << index
        return index
    }

    private mutating func skipSpace() {
        while at < bytes.count {
            switch bytes[at] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): at += 1
            default: return
            }
        }
    }

    /// Skips white space, then consumes `byte` if it comes next.
    private mutating func consume(_ byte: UInt8) -> Bool {
        skipSpace()
        guard at < bytes.count, bytes[at] == byte else { return false }
        at += 1
        return true
    }

    /// The bytes of a string without escapes or control characters, not yet checked as UTF-8.
    private mutating func plainString() -> ArraySlice<UInt8>? {
        guard consume(UInt8(ascii: "\"")) else { return nil }
        let start = at
        while at < bytes.count {
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                at += 1
                return bytes[start..<at - 1]
            }
            if byte < 0x20 || byte == UInt8(ascii: "\\") { return nil }
            at += 1
        }
        return nil
    }

    /// A string without escapes other than the two-character ones and `\u` outside the surrogate
    /// range, with no control characters, in valid UTF-8.
    private mutating func string() -> String? {
        guard consume(UInt8(ascii: "\"")) else { return nil }
        let start = at
        var escaped: [UInt8]?
        while at < bytes.count {
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                defer { at += 1 }
                if let escaped { return String(validating: escaped, as: UTF8.self) }
                return String(validating: bytes[start..<at], as: UTF8.self)
            }
            if byte < 0x20 { return nil }
            if byte == UInt8(ascii: "\\") {
                var text = escaped ?? Array(bytes[start..<at])
                guard unescape(into: &text) else { return nil }
                escaped = text
                continue
            }
            escaped?.append(byte)
            at += 1
        }
        return nil
    }

    /// Reads one escape (at its backslash) and appends what it stands for.
    private mutating func unescape(into text: inout [UInt8]) -> Bool {
        guard at + 1 < bytes.count else { return false }
        let kind = bytes[at + 1]
        at += 2
        switch kind {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(kind)
        case UInt8(ascii: "b"): text.append(0x08)
        case UInt8(ascii: "f"): text.append(0x0C)
        case UInt8(ascii: "n"): text.append(0x0A)
        case UInt8(ascii: "r"): text.append(0x0D)
        case UInt8(ascii: "t"): text.append(0x09)
        case UInt8(ascii: "u"):
            guard at + 4 <= bytes.count,
                bytes[at..<at + 4].allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "-") }),
                let code = UInt32(String(decoding: bytes[at..<at + 4], as: UTF8.self), radix: 16),
                let scalar = Unicode.Scalar(code)
            else { return false }
            at += 4
            text += Array(String(Character(scalar)).utf8)
        default: return false
        }
        return true
    }

    /// A non-negative integer in plain form (no sign, fraction, exponent or leading zero).
    private mutating func unsigned() -> UInt64? {
        skipSpace()
        let start = at
        var value: UInt64 = 0
        while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") {
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(UInt64(bytes[at] - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            value = sum
            at += 1
        }
        let digits = at - start
        guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
        // What follows a number must end it; `1.5` or `1e3` is left to JSONDecoder.
        if at < bytes.count {
            switch bytes[at] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
            default: break
            }
        }
        return value
    }

    /// An integer in plain form, optionally negative (not `-0`).
    private mutating func int() -> Int? {
        skipSpace()
        let negative = at < bytes.count && bytes[at] == UInt8(ascii: "-")
        if negative { at += 1 }
        guard at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9"),
            let magnitude = unsigned()
        else { return nil }
        if negative {
            guard magnitude > 0, magnitude <= UInt64(Int.max) else { return nil }
            return -Int(magnitude)
        }
        return magnitude <= UInt64(Int.max) ? Int(magnitude) : nil
    }
}
