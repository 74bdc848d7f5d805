import CSodium
import PAKE

/// An encrypted member-to-member note, delivered through the recipient's inbox on the space
/// server: bytes sealed to the recipient's X25519 key and signed by the sender over a
/// domain-separated encoding of (space, sender, recipient, sealed bytes).
public struct InboxNote: Sendable, Equatable {
    /// Longest sealed note in bytes.
    public static var maximumSealedByteCount: Int { 16 * 1024 }

    public let space: SpaceID
    public let sender: MemberID
    public let recipient: MemberID
    public let sealed: [UInt8]
    public let signature: Signature

    /// Assembles a note from received parts; checks lengths only.
    public init(
        space: SpaceID, sender: MemberID, recipient: MemberID, sealed: [UInt8], signature: Signature
    ) throws(KeyModelError) {
        let minimum = Int(crypto_box_sealbytes())
        guard sealed.count >= minimum, sealed.count <= Self.maximumSealedByteCount else {
            throw KeyModelError(.invalidLength, "A sealed note has between \(minimum) and 16384 bytes.")
        }
        self.space = space
        self.sender = sender
        self.recipient = recipient
        self.sealed = sealed
        self.signature = signature
    }

    static func signedBytes(space: SpaceID, sender: MemberID, recipient: MemberID, sealed: [UInt8]) -> [UInt8]
    {
        var encoder = CanonicalEncoder(domain: Domain.inboxNote)
        encoder.append(space.bytes)
        encoder.append(sender.bytes)
        encoder.append(recipient.bytes)
        encoder.append(sealed)
        return encoder.bytes
    }

    /// Checks the sender's signature against a known key (what a server does with the caller's key).
    public func verifySignature(senderKey: SigningPublicKey) throws(KeyModelError) {
        let signed = Self.signedBytes(space: space, sender: sender, recipient: recipient, sealed: sealed)
        guard senderKey.isValidSignature(signature, for: signed) else {
            throw KeyModelError(.badSignature, "This note's signature does not match its sender.")
        }
    }

    /// Verifies that the sender is a current member who signed the note and that it is addressed
    /// to `identity`, then opens it.
    public func open(with identity: DeviceIdentity, verifyingAgainst roster: Roster) throws(KeyModelError)
        -> [UInt8]
    {
        guard space == roster.space else {
            throw KeyModelError(.wrongContext, "This note belongs to another space.")
        }
        guard let recipientRecord = roster.members[recipient],
            recipientRecord.keys.encryption == identity.publicKeys.encryption
        else {
            throw KeyModelError(.wrongRecipient, "This note is addressed to another member.")
        }
        guard let senderRecord = roster.members[sender] else {
            throw KeyModelError(.signerNotMember, "This note's sender is not a member of the space.")
        }
        try verifySignature(senderKey: senderRecord.keys.signing)
        var plaintext = [UInt8](repeating: 0, count: sealed.count - Int(crypto_box_sealbytes()))
        let status = identity.encryptionSecret.withUnsafeBytes { sk in
            crypto_box_seal_open(
                &plaintext, sealed, UInt64(sealed.count), identity.publicKeys.encryption.bytes,
                sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard status == 0 else {
            throw KeyModelError(.decryptionFailed, "This note cannot be opened with this device's key.")
        }
        return plaintext
    }
}

extension DeviceIdentity {
    /// Seals `bytes` to `recipient` and signs the note as `sender` (this device's member id).
    public func note(
        _ bytes: some Collection<UInt8>, to recipient: MemberRecord, in space: SpaceID, from sender: MemberID
    ) throws(KeyModelError) -> InboxNote {
        Sodium.ensureInitialized()
        let message = Array(bytes)
        var sealed = [UInt8](repeating: 0, count: message.count + Int(crypto_box_sealbytes()))
        _ = crypto_box_seal(&sealed, message, UInt64(message.count), recipient.keys.encryption.bytes)
        let signed = InboxNote.signedBytes(
            space: space, sender: sender, recipient: recipient.id, sealed: sealed)
        return try InboxNote(
            space: space, sender: sender, recipient: recipient.id, sealed: sealed, signature: sign(signed))
    }
}

extension InboxNote: Codable {
    private enum CodingKeys: String, CodingKey {
        case space, sender, recipient, sealed, signature
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let sealed = try c.decodeBytes(forKey: .sealed)
        do {
            try self.init(
                space: c.decode(SpaceID.self, forKey: .space),
                sender: c.decode(MemberID.self, forKey: .sender),
                recipient: c.decode(MemberID.self, forKey: .recipient), sealed: sealed,
                signature: c.decodeChecked(forKey: .signature) { b throws(KeyModelError) in
                    try Signature(bytes: b)
                })
        } catch let error as KeyModelError {
            throw DecodingError.dataCorruptedError(forKey: .sealed, in: c, debugDescription: error.message)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(space, forKey: .space)
        try c.encode(sender, forKey: .sender)
        try c.encode(recipient, forKey: .recipient)
        try c.encodeBytes(sealed, forKey: .sealed)
        try c.encodeBytes(signature.bytes, forKey: .signature)
    }
}
