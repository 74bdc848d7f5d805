import CSodium
import PAKE

/// A thread key sealed to one member's X25519 key (`crypto_box_seal`) and signed by the member
/// who wrapped it, over a domain-separated encoding of (space, thread, recipient, sealed bytes).
///
/// A client uses a wrap only after ``open(with:verifyingAgainst:)`` has checked that the signer is
/// a current member of the verified roster and the wrap is addressed to this device.
public struct KeyWrap: Sendable, Equatable {
    /// Length of the sealed bytes: the 32-byte key plus `crypto_box_SEALBYTES`.
    public static var sealedByteCount: Int { ThreadKey.byteCount + Int(crypto_box_sealbytes()) }

    public let space: SpaceID
    public let thread: ThreadID
    public let recipient: MemberID
    /// The wrapping member's signing key; must belong to a current member.
    public let signer: SigningPublicKey
    public let sealed: [UInt8]
    public let signature: Signature

    /// Assembles a wrap from received parts; checks lengths only.
    public init(
        space: SpaceID, thread: ThreadID, recipient: MemberID, signer: SigningPublicKey, sealed: [UInt8],
        signature: Signature
    ) throws(KeyModelError) {
        guard sealed.count == Self.sealedByteCount else {
            throw KeyModelError(.invalidLength, "A key wrap has \(Self.sealedByteCount) sealed bytes.")
        }
        self.space = space
        self.thread = thread
        self.recipient = recipient
        self.signer = signer
        self.sealed = sealed
        self.signature = signature
    }

    static func signedBytes(space: SpaceID, thread: ThreadID, recipient: MemberID, sealed: [UInt8]) -> [UInt8]
    {
        var encoder = CanonicalEncoder(domain: Domain.keyWrap)
        encoder.append(space.bytes)
        encoder.append(thread.bytes)
        encoder.append(recipient.bytes)
        encoder.append(sealed)
        return encoder.bytes
    }

    /// Checks the wrap against a verified roster: same space, the signer is a current member and
    /// signed it, the recipient is a current member. Returns the signer's record.
    @discardableResult
    public func verify(against roster: Roster) throws(KeyModelError) -> MemberRecord {
        try Self.verify(
            space: space, signer: signer, recipient: recipient, against: roster,
            signatureVerifies: hasValidSignature)
    }

    /// What a wrap and a wrap bundle (``KeyWrapBundle``) must both pass: the roster's space, a
    /// signer who is a current member and no link's signer, a good signature, a member as
    /// recipient. `signatureVerifies` is evaluated only once the signer is known.
    static func verify(
        space: SpaceID, signer: SigningPublicKey, recipient: MemberID, against roster: Roster,
        signatureVerifies: @autoclosure () -> Bool
    ) throws(KeyModelError) -> MemberRecord {
        guard space == roster.space else {
            throw KeyModelError(.wrongContext, "This key wrap belongs to another space.")
        }
        guard let signerRecord = roster.currentMember(signingKey: signer) else {
            throw KeyModelError(.signerNotMember, "This key wrap was signed by someone who is not a member.")
        }
        // A link's signer only adds members; its key travels in the link.
        guard !roster.isLinkSigner(signerRecord.id) else {
            throw KeyModelError(
                .notAuthorised, "This key wrap was signed by an invite link, which may not hand out keys.")
        }
        guard signatureVerifies() else {
            throw KeyModelError(.badSignature, "This key wrap's signature does not verify.")
        }
        guard roster.members[recipient] != nil else {
            throw KeyModelError(.wrongRecipient, "This key wrap is for someone who is not a member.")
        }
        return signerRecord
    }

    /// Verifies the wrap (see ``verify(against:)``), checks that it is addressed to `identity`,
    /// and unseals the thread key.
    public func open(with identity: DeviceIdentity, verifyingAgainst roster: Roster) throws(KeyModelError)
        -> ThreadKey
    {
        guard let recipientRecord = roster.members[recipient],
            recipientRecord.keys.encryption == identity.publicKeys.encryption
        else {
            throw KeyModelError(.wrongRecipient, "This key wrap is addressed to another member.")
        }
        try verify(against: roster)
        return try open(with: identity)
    }

    /// Whether the signature verifies under the wrap's own signer key (who that signer is must
    /// still be checked against a roster).
    package var hasValidSignature: Bool {
        signer.isValidSignature(
            signature,
            for: Self.signedBytes(space: space, thread: thread, recipient: recipient, sealed: sealed))
    }

    /// Opens the sealed key with `identity`, without the roster checks of
    /// ``open(with:verifyingAgainst:)``: only for callers that check the signer themselves.
    package func open(with identity: DeviceIdentity) throws(KeyModelError) -> ThreadKey {
        var status: Int32 = -1
        let secret = SecretBytes(count: ThreadKey.byteCount) { out in
            identity.encryptionSecret.withUnsafeBytes { sk in
                status = crypto_box_seal_open(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), sealed, UInt64(sealed.count),
                    identity.publicKeys.encryption.bytes, sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard status == 0 else {
            throw KeyModelError(.decryptionFailed, "This key wrap cannot be opened with this device's key.")
        }
        return ThreadKey(trusted: secret)
    }
}

extension DeviceIdentity {
    /// Seals `key` to `member`'s encryption key and signs the wrap with this device's signing key.
    public func wrap(_ key: ThreadKey, for member: MemberRecord, in space: SpaceID, thread: ThreadID)
        -> KeyWrap
    {
        Sodium.ensureInitialized()
        var sealed = [UInt8](repeating: 0, count: KeyWrap.sealedByteCount)
        key.secret.withUnsafeBytes { k in
            _ = crypto_box_seal(
                &sealed, k.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(k.count),
                member.keys.encryption.bytes)
        }
        let signed = KeyWrap.signedBytes(space: space, thread: thread, recipient: member.id, sealed: sealed)
        // Lengths are right by construction.
        return try! KeyWrap(
            space: space, thread: thread, recipient: member.id, signer: publicKeys.signing, sealed: sealed,
            signature: sign(signed))
    }
}

extension KeyWrap: Codable {
    private enum CodingKeys: String, CodingKey {
        case space, thread, recipient, signer, sealed, signature
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            space: c.decode(SpaceID.self, forKey: .space),
            thread: c.decode(ThreadID.self, forKey: .thread),
            recipient: c.decode(MemberID.self, forKey: .recipient),
            signer: c.decodeChecked(forKey: .signer) { b throws(KeyModelError) in
                try SigningPublicKey(bytes: b)
            },
            sealed: c.decodeBytes(forKey: .sealed, count: Self.sealedByteCount),
            signature: c.decodeChecked(forKey: .signature) { b throws(KeyModelError) in
                try Signature(bytes: b)
            })
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(space, forKey: .space)
        try c.encode(thread, forKey: .thread)
        try c.encode(recipient, forKey: .recipient)
        try c.encodeBytes(signer.bytes, forKey: .signer)
        try c.encodeBytes(sealed, forKey: .sealed)
        try c.encodeBytes(signature.bytes, forKey: .signature)
    }
}
