import CSodium
import PAKE

/// A message as the server stores it: XChaCha20-Poly1305 (IETF) ciphertext under the thread key,
/// with the space, thread, message id and author bound as associated data, and the author's
/// Ed25519 signature over all of it.
public struct EncryptedMessage: Sendable, Equatable {
    public static var nonceByteCount: Int { Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES) }
    public static var tagByteCount: Int { Int(crypto_aead_xchacha20poly1305_ietf_ABYTES) }

    public let space: SpaceID
    public let thread: ThreadID
    public let id: MessageID
    public let author: MemberID
    public let nonce: [UInt8]
    public let ciphertext: [UInt8]
    public let signature: Signature

    /// Assembles a message from parts received from elsewhere; checks lengths only.
    public init(
        space: SpaceID, thread: ThreadID, id: MessageID, author: MemberID, nonce: [UInt8],
        ciphertext: [UInt8], signature: Signature
    ) throws(KeyModelError) {
        guard nonce.count == Self.nonceByteCount else {
            throw KeyModelError(.invalidLength, "A message nonce has 24 bytes, not \(nonce.count).")
        }
        guard ciphertext.count >= Self.tagByteCount else {
            throw KeyModelError(.invalidLength, "A message ciphertext is shorter than its tag.")
        }
        self.space = space
        self.thread = thread
        self.id = id
        self.author = author
        self.nonce = nonce
        self.ciphertext = ciphertext
        self.signature = signature
    }

    static func associatedData(space: SpaceID, thread: ThreadID, id: MessageID, author: MemberID) -> [UInt8] {
        var encoder = CanonicalEncoder(domain: Domain.messageAssociatedData)
        encoder.append(space.bytes)
        encoder.append(thread.bytes)
        encoder.append(id.bytes)
        encoder.append(author.bytes)
        return encoder.bytes
    }

    static func signedBytes(
        space: SpaceID, thread: ThreadID, id: MessageID, author: MemberID, nonce: [UInt8], ciphertext: [UInt8]
    ) -> [UInt8] {
        var encoder = CanonicalEncoder(domain: Domain.messageSignature)
        encoder.append(space.bytes)
        encoder.append(thread.bytes)
        encoder.append(id.bytes)
        encoder.append(author.bytes)
        encoder.append(nonce)
        encoder.append(ciphertext)
        return encoder.bytes
    }

    /// Checks the author's signature against a known key (what a server does with the caller's key).
    public func verifySignature(authorKey: SigningPublicKey) throws(KeyModelError) {
        let signed = Self.signedBytes(
            space: space, thread: thread, id: id, author: author, nonce: nonce, ciphertext: ciphertext)
        guard authorKey.isValidSignature(signature, for: signed) else {
            throw KeyModelError(.badSignature, "This message's signature does not match its author.")
        }
    }

    /// Checks that the author is or was a member of the verified roster and that the signature is
    /// theirs; returns the author's record.
    @discardableResult
    public func verifyAuthor(in roster: Roster) throws(KeyModelError) -> MemberRecord {
        guard space == roster.space else {
            throw KeyModelError(.wrongContext, "This message belongs to another space.")
        }
        guard let author = roster.everMember(author) else {
            throw KeyModelError(.signerNotMember, "This message's author was never a member of the space.")
        }
        guard !roster.isLinkSigner(author.id) else {
            throw KeyModelError(
                .notAuthorised, "This message was signed by an invite link, which may not write.")
        }
        try verifySignature(authorKey: author.keys.signing)
        return author
    }

    /// Verifies the author against `roster`, then decrypts with the thread key.
    public func decrypt(with key: ThreadKey, verifyingAgainst roster: Roster) throws(KeyModelError) -> [UInt8]
    {
        try verifyAuthor(in: roster)
        let aad = Self.associatedData(space: space, thread: thread, id: id, author: author)
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count - Self.tagByteCount)
        var plaintextCount: UInt64 = 0
        let result = key.secret.withUnsafeBytes { k in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                &plaintext, &plaintextCount, nil, ciphertext, UInt64(ciphertext.count), aad,
                UInt64(aad.count), nonce, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard result == 0 else {
            throw KeyModelError(
                .decryptionFailed, "This message cannot be decrypted with this thread's key.")
        }
        return Array(plaintext.prefix(Int(plaintextCount)))
    }
}

extension DeviceIdentity {
    /// Encrypts `plaintext` under `key` for `thread` in `space`, bound to `author` (this device's
    /// member id in that space) and a message id, and signs it.
    public func encrypt(
        _ plaintext: some Collection<UInt8>, with key: ThreadKey, in space: SpaceID, thread: ThreadID,
        as author: MemberID, id: MessageID = .random()
    ) -> EncryptedMessage {
        let message = Array(plaintext)
        let nonce = SecretBytes.randomBytes(EncryptedMessage.nonceByteCount)
        let aad = EncryptedMessage.associatedData(space: space, thread: thread, id: id, author: author)
        var ciphertext = [UInt8](repeating: 0, count: message.count + EncryptedMessage.tagByteCount)
        var ciphertextCount: UInt64 = 0
        key.secret.withUnsafeBytes { k in
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                &ciphertext, &ciphertextCount, message, UInt64(message.count), aad, UInt64(aad.count), nil,
                nonce, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        let signed = EncryptedMessage.signedBytes(
            space: space, thread: thread, id: id, author: author, nonce: nonce, ciphertext: ciphertext)
        // Lengths are right by construction.
        return try! EncryptedMessage(
            space: space, thread: thread, id: id, author: author, nonce: nonce, ciphertext: ciphertext,
            signature: sign(signed))
    }
}

extension EncryptedMessage: Codable {
    private enum CodingKeys: String, CodingKey {
        case space, thread, id, author, nonce, ciphertext, signature
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let signature = try c.decodeChecked(forKey: .signature) { b throws(KeyModelError) in
            try Signature(bytes: b)
        }
        let nonce = try c.decodeBytes(forKey: .nonce, count: Self.nonceByteCount)
        let ciphertext = try c.decodeBytes(forKey: .ciphertext)
        guard ciphertext.count >= Self.tagByteCount else {
            throw DecodingError.dataCorruptedError(
                forKey: .ciphertext, in: c, debugDescription: "shorter than the 16-byte tag")
        }
        try self.init(
            space: c.decode(SpaceID.self, forKey: .space), thread: c.decode(ThreadID.self, forKey: .thread),
            id: c.decode(MessageID.self, forKey: .id), author: c.decode(MemberID.self, forKey: .author),
            nonce: nonce, ciphertext: ciphertext, signature: signature)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(space, forKey: .space)
        try c.encode(thread, forKey: .thread)
        try c.encode(id, forKey: .id)
        try c.encode(author, forKey: .author)
        try c.encodeBytes(nonce, forKey: .nonce)
        try c.encodeBytes(ciphertext, forKey: .ciphertext)
        try c.encodeBytes(signature.bytes, forKey: .signature)
    }
}
