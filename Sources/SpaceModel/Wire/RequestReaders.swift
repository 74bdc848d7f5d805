/// A body type with a hand reader that ``WireJSON/decode(_:from:userInfo:)`` tries first: the
/// generic reader's `Codable` machinery (a container per object, a witness call per field, a
/// tree node per value) was most of its cost on the server's largest bodies (docs/bot.md,
/// "Session 13").
public protocol StrictJSONReadable {
    /// The value, or nil when the text is not in a form the reader fully understands (then the
    /// generic reader and `JSONDecoder` decide, with their errors). What it returns is what
    /// `JSONDecoder` returns for the same text.
    static func read(_ reader: inout StrictJSONReader) -> Self?
}

// The two request bodies the space server reads most per join: the attendant's wraps for each
// joiner (`POST …/wraps`) and the joiner's admission (`POST …/members`).

extension SpaceWire.WrapsRequest: StrictJSONReadable {
    private static let keys = StrictJSONReader.keys("wraps", "bundles")

    public static func read(_ reader: inout StrictJSONReader) -> Self? {
        var wraps: [KeyWrap]?
        var bundles: [KeyWrapBundle]?
        var object = StrictJSONReader.ObjectScan(keys: keys)
        while let key = reader.nextKey(&object) {
            let read =
                key == 0
                ? StrictJSONReader.got(&wraps, reader.array { $0.keyWrap() })
                : StrictJSONReader.got(&bundles, reader.array { $0.keyWrapBundle() })
            if !read { return nil }
        }
        guard !object.failed, let wraps else { return nil }
        return Self(wraps: wraps, bundles: bundles)
    }
}

extension SpaceWire.MembersRequest: StrictJSONReadable {
    private static let keys = StrictJSONReader.keys(
        "event", "events", "deviceLabel", "bundles", "threadCount")

    public static func read(_ reader: inout StrictJSONReader) -> Self? {
        var event: MembershipEvent?
        var events: [MembershipEvent]?
        var label: String?
        var bundles: [KeyWrapBundle]?
        var threadCount: Int?
        var object = StrictJSONReader.ObjectScan(keys: keys)
        while let key = reader.nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = StrictJSONReader.got(&event, reader.event())
            case 1: read = StrictJSONReader.got(&events, reader.array { $0.event() })
            case 2: read = StrictJSONReader.got(&label, reader.string())
            case 3: read = StrictJSONReader.got(&bundles, reader.array { $0.keyWrapBundle() })
            default: read = StrictJSONReader.got(&threadCount, reader.int())
            }
            if !read { return nil }
        }
        guard !object.failed else { return nil }
        return Self(
            event: event, events: events, deviceLabel: label, bundles: bundles, threadCount: threadCount)
    }
}

// Every joiner's one request: `POST …/sign-in` (docs/bot.md, session 16).
extension SpaceWire.SignInRequest: StrictJSONReadable {
    private static let keys = StrictJSONReader.keys("proof", "label", "expiresIn", "eventAt")
    private static let proofKeys = StrictJSONReader.keys("space", "member", "challenge", "signature")

    public static func read(_ reader: inout StrictJSONReader) -> Self? {
        var proof: SignInProof?
        var label: String?
        var expiresIn: Int64?
        var eventAt: UInt64?
        var object = StrictJSONReader.ObjectScan(keys: keys)
        while let key = reader.nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = StrictJSONReader.got(&proof, readProof(&reader))
            case 1: read = StrictJSONReader.got(&label, reader.string())
            case 2: read = StrictJSONReader.got(&expiresIn, reader.int().map(Int64.init))
            default: read = StrictJSONReader.got(&eventAt, reader.unsigned())
            }
            if !read { return nil }
        }
        guard !object.failed, let proof else { return nil }
        return Self(proof: proof, label: label, expiresIn: expiresIn, eventAt: eventAt)
    }

    /// A sign-in proof as its `Codable` writes it: a challenge of exactly 32 bytes.
    private static func readProof(_ reader: inout StrictJSONReader) -> SignInProof? {
        var space: SpaceID?
        var member: MemberID?
        var challenge: [UInt8]?
        var signature: Signature?
        var object = StrictJSONReader.ObjectScan(keys: proofKeys)
        while let key = reader.nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = StrictJSONReader.got(&space, reader.identifier())
            case 1: read = StrictJSONReader.got(&member, reader.identifier())
            case 2: read = StrictJSONReader.got(&challenge, reader.byteString())
            default: read = StrictJSONReader.got(&signature, reader.signatureBytes())
            }
            if !read { return nil }
        }
        guard !object.failed, let space, let member, let challenge, let signature else { return nil }
        return try? SignInProof(space: space, member: member, challenge: challenge, signature: signature)
    }
}

extension StrictJSONReader {
    private static let wrapKeys = keys("space", "thread", "recipient", "signer", "sealed", "signature")
    private static let bundleKeys = keys("space", "recipient", "signer", "ephemeral", "entries", "signature")
    private static let entryKeys = keys("thread", "nonce", "sealed")

    /// A key wrap as its `Codable` writes it; every field checked as its decoder checks it.
    public mutating func keyWrap() -> KeyWrap? {
        var space: SpaceID?
        var thread: ThreadID?
        var recipient: MemberID?
        var signer: SigningPublicKey?
        var sealed: [UInt8]?
        var signature: Signature?
        var object = ObjectScan(keys: Self.wrapKeys)
        while let key = nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = Self.got(&space, identifier())
            case 1: read = Self.got(&thread, identifier())
            case 2: read = Self.got(&recipient, identifier())
            case 3: read = Self.got(&signer, signingKey())
            case 4: read = Self.got(&sealed, byteString())
            default: read = Self.got(&signature, signatureBytes())
            }
            if !read { return nil }
        }
        guard !object.failed, let space, let thread, let recipient, let signer, let sealed, let signature
        else { return nil }
        return try? KeyWrap(
            space: space, thread: thread, recipient: recipient, signer: signer, sealed: sealed,
            signature: signature)
    }

    /// A wrap bundle as its `Codable` writes it; every field checked as its decoder checks it.
    public mutating func keyWrapBundle() -> KeyWrapBundle? {
        var space: SpaceID?
        var recipient: MemberID?
        var signer: SigningPublicKey?
        var ephemeral: [UInt8]?
        var entries: [KeyWrapBundle.Entry]?
        var signature: Signature?
        var object = ObjectScan(keys: Self.bundleKeys)
        while let key = nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = Self.got(&space, identifier())
            case 1: read = Self.got(&recipient, identifier())
            case 2: read = Self.got(&signer, signingKey())
            case 3: read = Self.got(&ephemeral, byteString())
            case 4: read = Self.got(&entries, array { $0.bundleEntry() })
            default: read = Self.got(&signature, signatureBytes())
            }
            if !read { return nil }
        }
        guard !object.failed, let space, let recipient, let signer, let ephemeral, let entries, let signature
        else { return nil }
        return try? KeyWrapBundle(
            space: space, recipient: recipient, signer: signer, ephemeral: ephemeral, entries: entries,
            signature: signature)
    }

    private mutating func bundleEntry() -> KeyWrapBundle.Entry? {
        var thread: ThreadID?
        var nonce: [UInt8]?
        var sealed: [UInt8]?
        var object = ObjectScan(keys: Self.entryKeys)
        while let key = nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = Self.got(&thread, identifier())
            case 1: read = Self.got(&nonce, byteString())
            default: read = Self.got(&sealed, byteString())
            }
            if !read { return nil }
        }
        guard !object.failed, let thread, let nonce, let sealed else { return nil }
        return try? KeyWrapBundle.Entry(thread: thread, nonce: nonce, sealed: sealed)
    }

    /// A signing key, checked as a point as its decoder does.
    private mutating func signingKey() -> SigningPublicKey? {
        byteString().flatMap { try? SigningPublicKey(bytes: $0) }
    }

    /// A signature (64 bytes).
    mutating func signatureBytes() -> Signature? {
        byteString().flatMap { try? Signature(bytes: $0) }
    }
}
