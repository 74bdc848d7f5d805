import Foundation
import PAKE
import SpaceModel

// The grant's JSON both ways without `Codable`: `JSONEncoder` was 4% of the bot's CPU and
// `JSONDecoder` 6% of a joiner's (docs/bot.md, "Session 12"). Each side handles the form the
// attendant sends now (bundles, a checkpoint and vouched members; no single wraps, no chain)
// and hands anything else to Foundation: ``JoinGrantWriter`` writes the very bytes
// `JSONEncoder` writes (sorted keys, slashes as they are), since joiners of every version read
// them, and ``JoinGrantReader`` returns only what `JSONDecoder` would return for the same text.
// `JoinGrantCodecTests` check both against Foundation. The reading is SpaceModel's
// `StrictJSONReader`, shared with the event list.

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

/// Reads the grant's JSON with ``StrictJSONReader``, giving up (nil) on anything it does not
/// fully understand instead of guessing: unknown or repeated keys, `null` for an absent field,
/// numbers other than plain integers, single wraps or a chain (version 1). What it returns is
/// always what `JSONDecoder` would return for the same text; ``JoinGrant/init(decoding:)`` hands
/// everything else to `JSONDecoder`.
enum JoinGrantReader {
    /// The grant, or nil when the text is not in the form this reader knows.
    static func grant(_ bytes: [UInt8]) -> JoinGrant? {
        var reader = StrictJSONReader(bytes)
        guard let grant = reader.grant(), reader.atEnd() else { return nil }
        return grant
    }
}

extension StrictJSONReader {
    private static let grantKeys = keys(
        "v", "space", "owner_signing_key", "member_id", "device_token", "wraps", "wrap_bundles", "invite",
        "history_hint", "checkpoint", "vouched_members")
    private static let spaceKeys = keys("server", "id", "name")
    private static let hintKeys = keys("threads", "messages")
    private static let checkpointKeys = keys("sequence", "hash")

    fileprivate mutating func grant() -> JoinGrant? {
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
            case 6: read = Self.got(&bundles, array { $0.keyWrapBundle() })
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
}
