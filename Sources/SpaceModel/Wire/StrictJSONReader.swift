import Foundation

/// The one strict JSON reader of the wire's hot shapes (`GET …/events` in ``EventListReader``,
/// the join grant in ClientCore): it reads a fixed form directly and gives up (nil) on anything
/// it does not fully understand (an unknown or repeated key, a number not in plain integer form,
/// `null`, a lone surrogate, invalid UTF-8, trailing text), so what its callers return is always
/// what `JSONDecoder` would return for the same text, and they hand everything else to it.
/// Shapes are extensions of this type in the files of the types they read.
public struct StrictJSONReader {
    let bytes: [UInt8]
    var at = 0
    /// Member keys are taken as vouched for by a checkpoint (``CodingUserInfoKey/memberKeysVouched``):
    /// checked by length only.
    let keysVouched: Bool

    public init(_ bytes: [UInt8], keysVouched: Bool = false) {
        self.bytes = bytes
        self.keysVouched = keysVouched
    }

    /// True when only white space is left.
    public mutating func atEnd() -> Bool {
        skipSpace()
        return at == bytes.count
    }

    /// Key names as bytes, for ``ObjectScan``.
    public static func keys(_ names: String...) -> [[UInt8]] { names.map { Array($0.utf8) } }

    public mutating func memberRecord() -> MemberRecord? {
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

    public mutating func sealedName() -> SealedName? {
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

    static let memberKeys = Self.keys("id", "keys", "rights", "name", "sealedName")
    static let sealedNameKeys = Self.keys("thread", "box")
    static let publicKeyKeys = Self.keys("encryption", "signing")
    static let inviteKeys = Self.keys(
        "v", "space", "inviter", "inviter_key", "nameplate", "created_at", "expires_at", "uses", "signature")

    public mutating func publicKeys() -> MemberPublicKeys? {
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

    public mutating func signedInvite() -> SignedInvite? {
        guard let fields = inviteFields(), let v = fields.v, let space = fields.space,
            let inviterKey = fields.inviterKey
        else { return nil }
        return fields.invite(v: v, space: space, inviterKey: inviterKey)
    }

    /// An invite record's fields as read, any of them absent (the join grant's compact form
    /// leaves some out and takes them from elsewhere in the grant).
    public struct InviteFields {
        public var v: Int?
        public var space: SpaceID?
        public var inviter: MemberID?
        public var inviterKey: String?
        var nameplate: String?
        var createdAt: Int?
        var expiresAt: Int?
        var uses: Int?
        var signature: String?

        /// The record, with the fields given (nil when another one is missing).
        public func invite(v: Int, space: SpaceID, inviterKey: String) -> SignedInvite? {
            guard let inviter, let nameplate, let createdAt, let expiresAt, let uses, let signature else {
                return nil
            }
            return SignedInvite(
                v: v, space: space, inviter: inviter, inviterKey: inviterKey, nameplate: nameplate,
                createdAt: Int64(createdAt), expiresAt: Int64(expiresAt), uses: uses, signature: signature)
        }
    }

    public mutating func inviteFields() -> InviteFields? {
        var fields = InviteFields()
        var object = ObjectScan(keys: Self.inviteKeys)
        while let key = nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = Self.got(&fields.v, int())
            case 1: read = Self.got(&fields.space, identifier())
            case 2: read = Self.got(&fields.inviter, identifier())
            case 3: read = Self.got(&fields.inviterKey, string())
            case 4: read = Self.got(&fields.nameplate, string())
            case 5: read = Self.got(&fields.createdAt, int())
            case 6: read = Self.got(&fields.expiresAt, int())
            case 7: read = Self.got(&fields.uses, int())
            default: read = Self.got(&fields.signature, string())
            }
            if !read { return nil }
        }
        return object.failed ? nil : fields
    }

    /// Stores a value just read; false when there was none (the text is not in this form).
    public static func got<T>(_ slot: inout T?, _ value: T?) -> Bool {
        slot = value
        return value != nil
    }

    public mutating func memberRights() -> MemberRights? {
        array { $0.string() }.flatMap { try? MemberRights(names: $0) }
    }

    /// An array whose every element `element` reads.
    public mutating func array<T>(_ element: (inout Self) -> T?) -> [T]? {
        guard consume(UInt8(ascii: "[")) else { return nil }
        var list: [T] = []
        while !consume(UInt8(ascii: "]")) {
            if !list.isEmpty { guard consume(UInt8(ascii: ",")) else { return nil } }
            guard let value = element(&self) else { return nil }
            list.append(value)
        }
        return list
    }

    public mutating func identifier<Kind>() -> Identifier<Kind>? {
        byteString().flatMap { try? Identifier(bytes: $0) }
    }

    /// A base64url string's bytes (base64url never needs an escape: one is left to JSONDecoder).
    public mutating func byteString() -> [UInt8]? {
        plainString().flatMap { Base64URL.decode(utf8: $0) }
    }

    // MARK: JSON pieces

    /// Which keys an object may hold, which it held, and whether reading it failed.
    public struct ObjectScan {
        let keys: [[UInt8]]
        var seen: UInt32 = 0
        var started = false
        /// Reading the object failed: the text is not in the form the caller knows.
        public internal(set) var failed = false

        public init(keys: [[UInt8]]) { self.keys = keys }
    }

    /// The index of the next key of the object (its `{`, `,` and `:` consumed), or nil at its end
    /// or on anything else (then `object.failed`): an unknown or repeated key, or bad syntax.
    public mutating func nextKey(_ object: inout ObjectScan) -> Int? {
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

    public mutating func skipSpace() {
        while at < bytes.count {
            switch bytes[at] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): at += 1
            default: return
            }
        }
    }

    /// Skips white space, then consumes `byte` if it comes next.
    public mutating func consume(_ byte: UInt8) -> Bool {
        skipSpace()
        guard at < bytes.count, bytes[at] == byte else { return false }
        at += 1
        return true
    }

    /// The bytes of a string without escapes or control characters, not yet checked as UTF-8.
    public mutating func plainString() -> ArraySlice<UInt8>? {
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
    public mutating func string() -> String? {
        guard consume(UInt8(ascii: "\"")) else { return nil }
        let start = at
        var escaped: [UInt8]?
        // Unescaped ASCII (every id and base64url field) is valid as it is: `String(validating:)`
        // is generic in the standard library and looked up its metadata on every call.
        var ascii = true
        while at < bytes.count {
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                defer { at += 1 }
                if let escaped { return String(validating: escaped, as: UTF8.self) }
                if ascii { return String(decoding: bytes[start..<at], as: UTF8.self) }
                return String(validating: bytes[start..<at], as: UTF8.self)
            }
            if byte >= 0x80 { ascii = false }
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
    public mutating func unsigned() -> UInt64? {
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
    public mutating func int() -> Int? {
        skipSpace()
        let negative = at < bytes.count && bytes[at] == UInt8(ascii: "-")
        if negative { at += 1 }
        guard at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9"),
            let magnitude = unsigned()
        else { return nil }
        if negative {
            guard magnitude > 0, magnitude <= UInt64(Int.max) + 1 else { return nil }
            return magnitude == UInt64(Int.max) + 1 ? Int.min : -Int(magnitude)
        }
        return magnitude <= UInt64(Int.max) ? Int(magnitude) : nil
    }
}
