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
        wraps: [KeyWrap] = [], bundles: [KeyWrapBundle]?, invite: SignedInvite,
        roster: [MembershipEvent]? = nil,
        historyHint: HistoryHint, checkpoint: ChainCheckpoint?, vouched: [MemberRecord]?,
        signInChallenge: String? = nil
    ) {
        self.v = v
        self.space = space
        self.ownerSigningKey = ownerSigningKey
        self.memberID = memberID
        self.deviceToken = deviceToken
        self.wraps = wraps
        self.bundles = bundles
        self.invite = invite
        self.roster = roster
        self.historyHint = historyHint
        self.checkpoint = checkpoint
        self.vouched = vouched
        self.signInChallenge = signInChallenge
    }

    /// The same grant, labelled `version`, with `challenge` when given (else its own).
    func with(version: Int, signInChallenge challenge: String? = nil) -> JoinGrant {
        JoinGrant(
            v: version, space: space, ownerSigningKey: ownerSigningKey, memberID: memberID,
            deviceToken: deviceToken, wraps: wraps, bundles: bundles, invite: invite, roster: roster,
            historyHint: historyHint, checkpoint: checkpoint, vouched: vouched,
            signInChallenge: challenge ?? signInChallenge)
    }

    /// This grant with `challenge` (version 5, ``challengeVersion``), for a joiner that reads it.
    public func with(signInChallenge challenge: String) -> JoinGrant {
        with(version: Self.challengeVersion, signInChallenge: challenge)
    }

    /// This grant as version 4 (``compactVersion``), which ``encoded()`` writes smaller; a grant
    /// with single wraps or a chain, or without bundles, stays as it is.
    public func compact() -> JoinGrant {
        guard bundles != nil, wraps.isEmpty, roster == nil else { return self }
        return with(version: max(v, Self.compactVersion))
    }
}

/// Writes a grant as `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` does, when it
/// has no single wraps, no chain and no text that needs an escape (nil otherwise); or in the
/// compact form of version 4.
enum JoinGrantWriter {
    static func bytes(_ grant: JoinGrant) -> [UInt8]? {
        guard grant.wraps.isEmpty, grant.roster == nil else { return nil }
        return write(grant, compact: false)
    }

    /// Version 4 (``JoinGrant/compactVersion``): the fields of ``bytes(_:)`` less what the
    /// joiner has elsewhere in the grant (`StrictJSONReader.compactGrant()` puts it back), or nil
    /// when the grant does not fit that form exactly (a bundle for another space or member, an
    /// invite for another space, a text that needs an escape), which then goes in version 3's form, labelled 4.
    static func compactBytes(_ grant: JoinGrant) -> [UInt8]? {
        guard grant.wraps.isEmpty, grant.roster == nil, let bundles = grant.bundles,
            grant.invite.space == grant.space.id,
            bundles.allSatisfy({ $0.space == grant.space.id && $0.recipient == grant.memberID })
        else { return nil }
        return write(grant, compact: true)
    }

    private static func write(_ grant: JoinGrant, compact: Bool) -> [UInt8]? {
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
        // Version 4 leaves out the inviter's key when the inviter's vouched record has it.
        let inviterVouched =
            grant.vouched?.contains { $0.id == grant.invite.inviter && grant.invite.names($0.keys.signing) }
            ?? false
        out.invite(grant.invite, compact: compact, keyVouched: inviterVouched)
        out.raw(#","member_id":"#)
        out.base64(grant.memberID.bytes)
        // Version 4 leaves out the owner's key when it is the inviter's.
        if !compact || grant.ownerSigningKey != grant.invite.inviterKey {
            out.raw(#","owner_signing_key":"#)
            out.text(grant.ownerSigningKey)
        }
        if let challenge = grant.signInChallenge {
            out.raw(#","sign_in_challenge":"#)
            out.text(challenge)
        }
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
                out.record(record, compact: compact)
            }
            out.raw("]")
        }
        if let bundles = grant.bundles {
            out.raw(#","wrap_bundles":["#)
            for (index, bundle) in bundles.enumerated() {
                if index > 0 { out.raw(",") }
                if compact {
                    // Version 4 leaves out a signer that is the first vouched member (the attendant).
                    out.compactBundle(
                        bundle, signerVouched: bundle.signer == grant.vouched?.first?.keys.signing)
                } else {
                    out.bundle(bundle)
                }
            }
            out.raw("]")
        }
        out.raw(compact ? "}" : #","wraps":[]}"#)
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

        /// `compact` (version 4) leaves out the space (the grant's), the key when `keyVouched`
        /// and the version when it is 1.
        mutating func invite(_ invite: SignedInvite, compact: Bool, keyVouched: Bool) {
            raw(#"{"created_at":"#)
            number(invite.createdAt)
            raw(#","expires_at":"#)
            number(invite.expiresAt)
            raw(#","inviter":"#)
            base64(invite.inviter.bytes)
            if !compact || !keyVouched {
                raw(#","inviter_key":"#)
                text(invite.inviterKey)
            }
            raw(#","nameplate":"#)
            text(invite.nameplate)
            raw(#","signature":"#)
            text(invite.signature)
            if !compact {
                raw(#","space":"#)
                base64(invite.space.bytes)
            }
            raw(#","uses":"#)
            number(invite.uses)
            if !compact || invite.v != SignedInvite.currentVersion {
                raw(#","v":"#)
                number(invite.v)
            }
            raw("}")
        }

        /// As `MemberRecord`'s `Codable` writes it: the name in clear always, the sealed one when
        /// there is one. `compact` (version 4) leaves out the empty clear name beside a sealed one
        /// (`StrictJSONReader.memberRecord()` reads it so).
        mutating func record(_ record: MemberRecord, compact: Bool) {
            raw(#"{"id":"#)
            base64(record.id.bytes)
            raw(#","keys":{"encryption":"#)
            base64(record.keys.encryption.bytes)
            raw(#","signing":"#)
            base64(record.keys.signing.bytes)
            if compact && record.sealedName != nil {
                raw(#"},"rights":["#)
            } else {
                raw(#"},"name":"#)
                text(record.sealedName == nil ? record.name : "")
                raw(#","rights":["#)
            }
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

        /// Version 4: every entry in one base64url text `boxes` (``JoinGrantReader/boxByteCount``
        /// bytes each), no space or recipient (the grant's), the signer only when it is not the
        /// attendant's (`signerVouched`).
        mutating func compactBundle(_ bundle: KeyWrapBundle, signerVouched: Bool) {
            var boxes: [UInt8] = []
            boxes.reserveCapacity(bundle.entries.count * JoinGrantReader.boxByteCount)
            for entry in bundle.entries {
                boxes.append(contentsOf: entry.thread.bytes)
                boxes.append(contentsOf: entry.nonce)
                boxes.append(contentsOf: entry.sealed)
            }
            raw(#"{"boxes":"#)
            base64(boxes)
            raw(#","ephemeral":"#)
            base64(bundle.ephemeral)
            raw(#","signature":"#)
            base64(bundle.signature.bytes)
            if !signerVouched {
                raw(#","signer":"#)
                base64(bundle.signer.bytes)
            }
            raw("}")
        }
    }
}

/// Reads the grant's JSON with ``StrictJSONReader``, giving up (nil) on anything it does not
/// fully understand instead of guessing: unknown or repeated keys, `null` for an absent field,
/// numbers other than plain integers, single wraps or a chain (version 1). What it returns for
/// versions 1 to 3 is always what `JSONDecoder` would return for the same text;
/// ``JoinGrant/init(decoding:)`` hands everything else to `JSONDecoder`. Version 4 (the compact
/// form, ``JoinGrantWriter/compactBytes(_:)``) is read here only: `JSONDecoder` refuses it (it
/// has no `wraps`), so a damaged one fails as a malformed grant.
enum JoinGrantReader {
    /// One entry of a version 4 bundle's `boxes`: the thread's id, the nonce and the box.
    static var boxByteCount: Int {
        ThreadID.byteCount + SecretBox.nonceByteCount + KeyWrapBundle.Entry.sealedByteCount
    }

    /// The grant, or nil when the text is not in a form this reader knows.
    static func grant(_ bytes: [UInt8]) -> JoinGrant? {
        var reader = StrictJSONReader(bytes)
        if let grant = reader.grant(), reader.atEnd() { return grant }
        var compact = StrictJSONReader(bytes)
        guard let grant = compact.compactGrant(), compact.atEnd() else { return nil }
        return grant
    }
}

extension StrictJSONReader {
    private static let grantKeys = keys(
        "v", "space", "owner_signing_key", "member_id", "device_token", "wraps", "wrap_bundles", "invite",
        "history_hint", "checkpoint", "vouched_members", "sign_in_challenge")
    private static let spaceKeys = keys("server", "id", "name")
    private static let hintKeys = keys("threads", "messages")
    private static let checkpointKeys = keys("sequence", "hash")

    /// A grant's top-level fields as read; the invite and the bundles in the form `Invite` and
    /// `Bundle` of the version being read.
    private struct GrantFields<Invite, Bundle> {
        var v: Int?
        var space: JoinGrant.Space?
        var ownerKey: String?
        var memberID: MemberID?
        var token: String?
        /// An empty `wraps` was there (version 3 has one; version 4 none).
        var wraps = false
        var bundles: [Bundle]?
        var invite: Invite?
        var hint: JoinGrant.HistoryHint?
        var checkpoint: ChainCheckpoint?
        var vouched: [MemberRecord]?
        var challenge: String?
    }

    /// The top-level object, with `invite` and `bundle` for the fields whose form differs
    /// between versions 3 and 4; nil on anything else.
    private mutating func grantFields<Invite, Bundle>(
        invite readInvite: (inout Self) -> Invite?, bundle readBundle: (inout Self) -> Bundle?
    ) -> GrantFields<Invite, Bundle>? {
        var fields = GrantFields<Invite, Bundle>()
        var object = ObjectScan(keys: Self.grantKeys)
        while let key = nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = Self.got(&fields.v, int())
            case 1: read = Self.got(&fields.space, spaceObject())
            case 2: read = Self.got(&fields.ownerKey, string())
            case 3: read = Self.got(&fields.memberID, identifier())
            case 4: read = Self.got(&fields.token, string())
            // Single wraps (attendants before version 3) are left to `JSONDecoder`.
            case 5: read = consume(UInt8(ascii: "[")) && consume(UInt8(ascii: "]"))
            case 6: read = Self.got(&fields.bundles, array { readBundle(&$0) })
            case 7: read = Self.got(&fields.invite, readInvite(&self))
            case 8: read = Self.got(&fields.hint, historyHint())
            case 9: read = Self.got(&fields.checkpoint, chainCheckpoint())
            case 10: read = Self.got(&fields.vouched, array { $0.memberRecord() })
            default: read = Self.got(&fields.challenge, string())
            }
            if !read { return nil }
            if key == 5 { fields.wraps = true }
        }
        return object.failed ? nil : fields
    }

    fileprivate mutating func grant() -> JoinGrant? {
        guard let fields = grantFields(invite: { $0.signedInvite() }, bundle: { $0.keyWrapBundle() }),
            let v = fields.v, let space = fields.space, let ownerKey = fields.ownerKey,
            let memberID = fields.memberID, fields.wraps, let invite = fields.invite, let hint = fields.hint
        else { return nil }
        return JoinGrant(
            v: v, space: space, ownerSigningKey: ownerKey, memberID: memberID, deviceToken: fields.token,
            bundles: fields.bundles, invite: invite, historyHint: hint, checkpoint: fields.checkpoint,
            vouched: fields.vouched, signInChallenge: fields.challenge)
    }

    /// A version 4 bundle: its space and recipient are the grant's, its signer (when absent) the
    /// first vouched member, the attendant.
    private struct CompactBundle {
        let boxes: [UInt8]
        let ephemeral: [UInt8]
        let signature: Signature
        let signer: SigningPublicKey?
    }

    private static let compactBundleKeys = keys("boxes", "ephemeral", "signature", "signer")

    /// Version 4 (``JoinGrantWriter/compactBytes(_:)``), with what it leaves out put back, so
    /// the grant is the very one the attendant compacted (every signature checks it as before).
    fileprivate mutating func compactGrant() -> JoinGrant? {
        // No `wraps`, and the invite's space is the grant's: the compact form has no other.
        guard let fields = grantFields(invite: { $0.inviteFields() }, bundle: { $0.compactBundle() }),
            let v = fields.v, v >= JoinGrant.compactVersion, let space = fields.space,
            let memberID = fields.memberID, !fields.wraps, let compactBundles = fields.bundles,
            let inviteFields = fields.invite, inviteFields.space == nil, let inviter = inviteFields.inviter,
            let hint = fields.hint
        else { return nil }
        let vouched = fields.vouched
        let inviterKey: String
        if let key = inviteFields.inviterKey {
            inviterKey = key
        } else if let record = vouched?.first(where: { $0.id == inviter }) {
            inviterKey = Base64URL.encode(record.keys.signing.bytes)
        } else {
            return nil
        }
        guard
            let invite = inviteFields.invite(
                v: inviteFields.v ?? SignedInvite.currentVersion, space: space.id, inviterKey: inviterKey)
        else { return nil }
        var bundles: [KeyWrapBundle] = []
        for compact in compactBundles {
            let size = JoinGrantReader.boxByteCount
            guard let signer = compact.signer ?? vouched?.first?.keys.signing, compact.boxes.count % size == 0
            else { return nil }
            var entries: [KeyWrapBundle.Entry] = []
            for start in stride(from: 0, to: compact.boxes.count, by: size) {
                let nonceStart = start + ThreadID.byteCount
                let sealedStart = nonceStart + SecretBox.nonceByteCount
                guard let thread = try? ThreadID(bytes: compact.boxes[start..<nonceStart]),
                    let entry = try? KeyWrapBundle.Entry(
                        thread: thread, nonce: Array(compact.boxes[nonceStart..<sealedStart]),
                        sealed: Array(compact.boxes[sealedStart..<start + size]))
                else { return nil }
                entries.append(entry)
            }
            // The initializer checks the ephemeral key's length and the entries' order (and
            // that there is at least one), as for version 3.
            guard
                let bundle = try? KeyWrapBundle(
                    space: space.id, recipient: memberID, signer: signer, ephemeral: compact.ephemeral,
                    entries: entries, signature: compact.signature)
            else { return nil }
            bundles.append(bundle)
        }
        return JoinGrant(
            v: v, space: space, ownerSigningKey: fields.ownerKey ?? inviterKey, memberID: memberID,
            deviceToken: fields.token, bundles: bundles, invite: invite, historyHint: hint,
            checkpoint: fields.checkpoint, vouched: vouched, signInChallenge: fields.challenge)
    }

    private mutating func compactBundle() -> CompactBundle? {
        var boxes: [UInt8]?
        var ephemeral: [UInt8]?
        var signature: Signature?
        var signer: SigningPublicKey?
        var object = ObjectScan(keys: Self.compactBundleKeys)
        while let key = nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = Self.got(&boxes, byteString())
            case 1: read = Self.got(&ephemeral, byteString())
            case 2: read = Self.got(&signature, byteString().flatMap { try? Signature(bytes: $0) })
            default: read = Self.got(&signer, byteString().flatMap { try? SigningPublicKey(bytes: $0) })
            }
            if !read { return nil }
        }
        guard !object.failed, let boxes, let ephemeral, let signature else { return nil }
        return CompactBundle(boxes: boxes, ephemeral: ephemeral, signature: signature, signer: signer)
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
