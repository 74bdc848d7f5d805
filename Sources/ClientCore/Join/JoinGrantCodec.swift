import Foundation
import PAKE
import SpaceModel

// The grant's JSON both ways without `Codable`: `JSONEncoder` was 4% of the bot's CPU and
// `JSONDecoder` 6% of a joiner's (docs/bot.md, "Session 12"). Each side handles the form the
// attendant sends now (bundles, a checkpoint and vouched members; no single wraps, no chain)
// and hands anything else to Foundation: ``JoinGrantWriter`` writes the very bytes
// `JSONEncoder` writes (sorted keys, slashes as they are), since joiners of every version read
// them, and ``JoinGrantReader`` returns only what `JSONDecoder` would return for the same text.
// `JoinGrantCodecTests` check both against Foundation. (The same kind of reader as
// `EventListReader` in SpaceModel, kept apart so the two can be folded later.)

extension JoinGrant {
    /// Every field, as decoding sets them (the public initializer derives `v` from `bundles`).
    init(
        v: Int, space: Space, ownerSigningKey: String, memberID: MemberID, deviceToken: String?,
        bundles: [KeyWrapBundle]?, invite: SignedInvite, historyHint: HistoryHint,
        checkpoint: ChainCheckpoint?, vouched: [MemberRecord]?
    ) {
        self.v = v
        self.space = space
        self.ownerSigningKey = ownerSigningKey
        self.memberID = memberID
        self.deviceToken = deviceToken
        self.wraps = []
        self.bundles = bundles
        self.invite = invite
        self.roster = nil
        self.historyHint = historyHint
        self.checkpoint = checkpoint
        self.vouched = vouched
    }
}

/// Writes a grant as `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` does, when it
/// has no single wraps, no chain and no text that needs an escape (nil otherwise).
enum JoinGrantWriter {
    static func bytes(_ grant: JoinGrant) -> [UInt8]? {
        guard grant.wraps.isEmpty, grant.roster == nil else { return nil }
        var out = Output()
        out.bytes.reserveCapacity(1_024 + 200 * (grant.bundles?.reduce(0) { $0 + $1.entries.count } ?? 0))
        // Keys in byte order, as `.sortedKeys` puts them.
        out.raw("{")
        if let checkpoint = grant.checkpoint {
            out.raw(#""checkpoint":{"hash":"#)
            out.base64(checkpoint.hash.bytes)
            out.raw(#","sequence":"#)
            out.number(checkpoint.sequence)
            out.raw("},")
        }
        if let token = grant.deviceToken {
            out.raw(#""device_token":"#)
            out.text(token)
            out.raw(",")
        }
        out.raw(#""history_hint":{"messages":"#)
        out.number(grant.historyHint.messages)
        out.raw(#","threads":"#)
        out.number(grant.historyHint.threads)
        out.raw(#"},"invite":"#)
        out.invite(grant.invite)
        out.raw(#","member_id":"#)
        out.base64(grant.memberID.bytes)
        out.raw(#","owner_signing_key":"#)
        out.text(grant.ownerSigningKey)
        out.raw(#","space":{"id":"#)
        out.base64(grant.space.id.bytes)
        out.raw(#","name":"#)
        out.text(grant.space.name)
        out.raw(#","server":"#)
        out.text(grant.space.server)
        out.raw(#"},"v":"#)
        out.number(grant.v)
        if let vouched = grant.vouched {
            out.raw(#","vouched_members":["#)
            for (index, record) in vouched.enumerated() {
                if index > 0 { out.raw(",") }
                out.record(record)
            }
            out.raw("]")
        }
        if let bundles = grant.bundles {
            out.raw(#","wrap_bundles":["#)
            for (index, bundle) in bundles.enumerated() {
                if index > 0 { out.raw(",") }
                out.bundle(bundle)
            }
            out.raw("]")
        }
        out.raw(#","wraps":[]}"#)
        return out.failed ? nil : out.bytes
    }

    private struct Output {
        var bytes: [UInt8] = []
        /// A text needed an escape: this writer leaves those to `JSONEncoder`.
        var failed = false

        mutating func raw(_ text: StaticString) {
            text.withUTF8Buffer { bytes.append(contentsOf: $0) }
        }

        /// A string that needs no escape (anything else fails the writing).
        mutating func text(_ text: String) {
            var text = text
            text.withUTF8 { utf8 in
                if utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") })
                {
                    failed = true
                }
                bytes.append(UInt8(ascii: "\""))
                bytes.append(contentsOf: utf8)
                bytes.append(UInt8(ascii: "\""))
            }
        }

        mutating func base64(_ data: [UInt8]) {
            text(Base64URL.encode(data))
        }

        mutating func number(_ value: some BinaryInteger) {
            bytes.append(contentsOf: String(value).utf8)
        }

        mutating func invite(_ invite: SignedInvite) {
            raw(#"{"created_at":"#)
            number(invite.createdAt)
            raw(#","expires_at":"#)
            number(invite.expiresAt)
            raw(#","inviter":"#)
            base64(invite.inviter.bytes)
            raw(#","inviter_key":"#)
            text(invite.inviterKey)
            raw(#","nameplate":"#)
            text(invite.nameplate)
            raw(#","signature":"#)
            text(invite.signature)
            raw(#","space":"#)
            base64(invite.space.bytes)
            raw(#","uses":"#)
            number(invite.uses)
            raw(#","v":"#)
            number(invite.v)
            raw("}")
        }

        /// As `MemberRecord`'s `Codable` writes it: the name in clear always, the sealed one when
        /// there is one.
        mutating func record(_ record: MemberRecord) {
            raw(#"{"id":"#)
            base64(record.id.bytes)
            raw(#","keys":{"encryption":"#)
            base64(record.keys.encryption.bytes)
            raw(#","signing":"#)
            base64(record.keys.signing.bytes)
            raw(#"},"name":"#)
            text(record.sealedName == nil ? record.name : "")
            raw(#","rights":["#)
            for (index, name) in record.rights.names.enumerated() {
                if index > 0 { raw(",") }
                text(name)
            }
            raw("]")
            if let sealed = record.sealedName {
                raw(#","sealedName":{"box":"#)
                base64(sealed.box)
                raw(#","thread":"#)
                base64(sealed.thread.bytes)
                raw("}")
            }
            raw("}")
        }

        mutating func bundle(_ bundle: KeyWrapBundle) {
            raw(#"{"entries":["#)
            for (index, entry) in bundle.entries.enumerated() {
                raw(index > 0 ? #",{"nonce":"# : #"{"nonce":"#)
                base64(entry.nonce)
                raw(#","sealed":"#)
                base64(entry.sealed)
                raw(#","thread":"#)
                base64(entry.thread.bytes)
                raw("}")
            }
            raw(#"],"ephemeral":"#)
            base64(bundle.ephemeral)
            raw(#","recipient":"#)
            base64(bundle.recipient.bytes)
            raw(#","signature":"#)
            base64(bundle.signature.bytes)
            raw(#","signer":"#)
            base64(bundle.signer.bytes)
            raw(#","space":"#)
            base64(bundle.space.bytes)
            raw("}")
        }
    }
}

/// A reader for the grant's JSON that gives up (returns nil) on anything it does not fully
/// understand instead of guessing: unknown or repeated keys, `null` for an absent field, escapes,
/// numbers other than plain integers, single wraps or a chain (version 1). What it returns is
/// always what `JSONDecoder` would return for the same text; ``JoinGrant/init(decoding:)`` hands
/// everything else to `JSONDecoder`.
struct JoinGrantReader {
    private let bytes: [UInt8]
    private var at = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The grant, or nil when the text is not in the form this reader knows.
    static func grant(_ bytes: [UInt8]) -> JoinGrant? {
        var reader = Self(bytes)
        guard let grant = reader.grant() else { return nil }
        reader.skipSpace()
        return reader.at == reader.bytes.count ? grant : nil
    }

    // MARK: The shape

    private static func keys(_ names: String...) -> [[UInt8]] { names.map { Array($0.utf8) } }

    private static let grantKeys = keys(
        "v", "space", "owner_signing_key", "member_id", "device_token", "wraps", "wrap_bundles", "invite",
        "history_hint", "checkpoint", "vouched_members")
    private static let spaceKeys = keys("server", "id", "name")
    private static let hintKeys = keys("threads", "messages")
    private static let checkpointKeys = keys("sequence", "hash")
    private static let inviteKeys = keys(
        "v", "space", "inviter", "inviter_key", "nameplate", "created_at", "expires_at", "uses", "signature")
    private static let memberKeys = keys("id", "keys", "rights", "name", "sealedName")
    private static let publicKeyKeys = keys("encryption", "signing")
    private static let sealedNameKeys = keys("thread", "box")
    private static let bundleKeys = keys("space", "recipient", "signer", "ephemeral", "entries", "signature")
    private static let entryKeys = keys("thread", "nonce", "sealed")

    private mutating func grant() -> JoinGrant? {
        var v: Int?
        var space: JoinGrant.Space?
        var ownerKey: String?
        var memberID: MemberID?
        var token: String?
        var wraps = false
        var bundles: [KeyWrapBundle]?
        var invite: SignedInvite?
        var hint: JoinGrant.HistoryHint?
        var checkpoint: ChainCheckpoint?
        var vouched: [MemberRecord]?
        var object = ObjectScan(keys: Self.grantKeys)
        while let key = nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = Self.got(&v, int())
            case 1: read = Self.got(&space, spaceObject())
            case 2: read = Self.got(&ownerKey, string())
            case 3: read = Self.got(&memberID, identifier())
            case 4: read = Self.got(&token, string())
            // Single wraps (attendants before version 3) are left to `JSONDecoder`.
            case 5: read = consume(UInt8(ascii: "[")) && consume(UInt8(ascii: "]"))
            case 6: read = Self.got(&bundles, array { $0.bundle() })
            case 7: read = Self.got(&invite, signedInvite())
            case 8: read = Self.got(&hint, historyHint())
            case 9: read = Self.got(&checkpoint, chainCheckpoint())
            default: read = Self.got(&vouched, array { $0.memberRecord() })
            }
            if !read { return nil }
            if key == 5 { wraps = true }
        }
        guard !object.failed, let v, let space, let ownerKey, let memberID, wraps, let invite, let hint else {
            return nil
        }
        return JoinGrant(
            v: v, space: space, ownerSigningKey: ownerKey, memberID: memberID, deviceToken: token,
            bundles: bundles, invite: invite, historyHint: hint, checkpoint: checkpoint, vouched: vouched)
    }

    private mutating func spaceObject() -> JoinGrant.Space? {
        var server: String?
        var id: SpaceID?
        var name: String?
        var object = ObjectScan(keys: Self.spaceKeys)
        while let key = nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = Self.got(&server, string())
            case 1: read = Self.got(&id, identifier())
            default: read = Self.got(&name, string())
            }
            if !read { return nil }
        }
        guard !object.failed, let server, let id, let name else { return nil }
        return JoinGrant.Space(server: server, id: id, name: name)
    }

    private mutating func historyHint() -> JoinGrant.HistoryHint? {
        var threads: Int?
        var messages: Int?
        var object = ObjectScan(keys: Self.hintKeys)
        while let key = nextKey(&object) {
            guard key == 0 ? Self.got(&threads, int()) : Self.got(&messages, int()) else { return nil }
        }
        guard !object.failed, let threads, let messages else { return nil }
        return JoinGrant.HistoryHint(threads: threads, messages: messages)
    }

    private mutating func chainCheckpoint() -> ChainCheckpoint? {
        var sequence: UInt64?
        var hash: EventHash?
        var object = ObjectScan(keys: Self.checkpointKeys)
        while let key = nextKey(&object) {
            let read =
                key == 0
                ? Self.got(&sequence, unsigned())
                : Self.got(&hash, byteString().flatMap { try? EventHash(bytes: $0) })
            if !read { return nil }
        }
        guard !object.failed, let sequence, let hash else { return nil }
        return ChainCheckpoint(sequence: sequence, hash: hash)
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

    private mutating func publicKeys() -> MemberPublicKeys? {
        var encryption: EncryptionPublicKey?
        var signing: SigningPublicKey?
        var object = ObjectScan(keys: Self.publicKeyKeys)
        while let key = nextKey(&object) {
            let read =
                key == 0
                ? Self.got(&encryption, byteString().flatMap { try? EncryptionPublicKey(bytes: $0) })
                : Self.got(&signing, byteString().flatMap { try? SigningPublicKey(bytes: $0) })
            if !read { return nil }
        }
        guard !object.failed, let encryption, let signing else { return nil }
        return MemberPublicKeys(encryption: encryption, signing: signing)
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

    private mutating func memberRights() -> MemberRights? {
        array { $0.string() }.flatMap { try? MemberRights(names: $0) }
    }

    private mutating func bundle() -> KeyWrapBundle? {
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
            case 2: read = Self.got(&signer, byteString().flatMap { try? SigningPublicKey(bytes: $0) })
            case 3: read = Self.got(&ephemeral, byteString())
            case 4: read = Self.got(&entries, array { $0.entry() })
            default: read = Self.got(&signature, byteString().flatMap { try? Signature(bytes: $0) })
            }
            if !read { return nil }
        }
        guard !object.failed, let space, let recipient, let signer, let ephemeral, let entries, let signature
        else { return nil }
        // The initializer checks the ephemeral key's length and the entries' order, as decoding does.
        return try? KeyWrapBundle(
            space: space, recipient: recipient, signer: signer, ephemeral: ephemeral, entries: entries,
            signature: signature)
    }

    private mutating func entry() -> KeyWrapBundle.Entry? {
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

    /// Stores a value just read; false when there was none (the text is not in this form).
    private static func got<T>(_ slot: inout T?, _ value: T?) -> Bool {
        slot = value
        return value != nil
    }

    /// An array whose every element `element` reads.
    private mutating func array<T>(_ element: (inout Self) -> T?) -> [T]? {
        guard consume(UInt8(ascii: "[")) else { return nil }
        var list: [T] = []
        while !consume(UInt8(ascii: "]")) {
            if !list.isEmpty { guard consume(UInt8(ascii: ",")) else { return nil } }
            guard let value = element(&self) else { return nil }
            list.append(value)
        }
        return list
    }

    private mutating func identifier<Kind>() -> Identifier<Kind>? {
        byteString().flatMap { try? Identifier(bytes: $0) }
    }

    /// A base64url string's bytes (base64url never needs an escape: one is left to JSONDecoder).
    private mutating func byteString() -> [UInt8]? {
        plainString().flatMap { Base64URL.decode(utf8: $0) }
    }

    /// A string without escapes, in valid UTF-8 (one with an escape is left to JSONDecoder).
    private mutating func string() -> String? {
        plainString().flatMap { String(validating: $0, as: UTF8.self) }
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
