import CSodium
import PAKE

/// The keys of several threads wrapped to one member at once, under one signature and one sealing
/// key (`docs/key-model.md`, "Wrap bundles"), where ``KeyWrap`` spends a sealed box (an ephemeral
/// key pair) and a signature on every thread.
///
/// The wrapper makes one ephemeral X25519 key pair; `crypto_scalarmult` with the recipient's
/// encryption key gives the shared point, and keyed BLAKE2b (`crypto_generichash`, the point as
/// key) over the domain, the ephemeral and the recipient's public keys gives the bundle key. Each
/// thread key is an XChaCha20-Poly1305 box under it, with a random nonce, bound to (space, thread,
/// recipient, ephemeral key). One Ed25519 signature covers the space, the recipient, the ephemeral
/// key and every (thread, nonce, box) in thread order, so a server can neither splice a box in
/// from another bundle, drop or re-order threads, swap the ephemeral key, nor hand the bundle to
/// someone else.
public struct KeyWrapBundle: Sendable, Equatable {
    /// One thread's key in the bundle.
    public struct Entry: Sendable, Equatable {
        public let thread: ThreadID
        public let nonce: [UInt8]
        /// The thread key's box: 32 bytes and the tag.
        public let sealed: [UInt8]

        public init(thread: ThreadID, nonce: [UInt8], sealed: [UInt8]) throws(KeyModelError) {
            guard nonce.count == SecretBox.nonceByteCount, sealed.count == Entry.sealedByteCount else {
                throw KeyModelError(
                    .invalidLength,
                    "A wrap bundle's entry has a \(SecretBox.nonceByteCount)-byte nonce and \(Entry.sealedByteCount) sealed bytes."
                )
            }
            self.thread = thread
            self.nonce = nonce
            self.sealed = sealed
        }

        public static var sealedByteCount: Int { ThreadKey.byteCount + SecretBox.tagByteCount }
    }

    public static var ephemeralByteCount: Int { Int(crypto_scalarmult_BYTES) }

    public let space: SpaceID
    public let recipient: MemberID
    /// The wrapping member's signing key; must belong to a current member.
    public let signer: SigningPublicKey
    /// The ephemeral X25519 public key the bundle key was agreed with.
    public let ephemeral: [UInt8]
    /// In ascending thread order, each thread once (what the signature covers).
    public let entries: [Entry]
    public let signature: Signature

    /// Assembles a bundle from received parts; checks lengths and that the entries are in
    /// thread order, each thread once (a re-ordered or repeated list is refused, not sorted).
    public init(
        space: SpaceID, recipient: MemberID, signer: SigningPublicKey, ephemeral: [UInt8], entries: [Entry],
        signature: Signature
    ) throws(KeyModelError) {
        guard ephemeral.count == Self.ephemeralByteCount else {
            throw KeyModelError(.invalidLength, "A wrap bundle's ephemeral key has 32 bytes.")
        }
        guard !entries.isEmpty else {
            throw KeyModelError(.invalidEncoding, "A wrap bundle holds at least one thread's key.")
        }
        guard zip(entries, entries.dropFirst()).allSatisfy({ $0.thread < $1.thread }) else {
            throw KeyModelError(
                .invalidEncoding, "A wrap bundle lists its threads in ascending order, each once.")
        }
        self.space = space
        self.recipient = recipient
        self.signer = signer
        self.ephemeral = ephemeral
        self.entries = entries
        self.signature = signature
    }

    /// The threads whose keys the bundle holds.
    public var threads: [ThreadID] { entries.map(\.thread) }

    static func signedBytes(space: SpaceID, recipient: MemberID, ephemeral: [UInt8], entries: [Entry])
        -> [UInt8]
    {
        var encoder = CanonicalEncoder(domain: Domain.keyWrapBundle)
        encoder.append(space.bytes)
        encoder.append(recipient.bytes)
        encoder.append(ephemeral)
        encoder.append(UInt64(entries.count))
        for entry in entries {
            encoder.append(entry.thread.bytes)
            encoder.append(entry.nonce)
            encoder.append(entry.sealed)
        }
        return encoder.bytes
    }

    static func associatedData(space: SpaceID, thread: ThreadID, recipient: MemberID, ephemeral: [UInt8])
        -> [UInt8]
    {
        var encoder = CanonicalEncoder(domain: Domain.keyWrapBundleEntry)
        encoder.append(space.bytes)
        encoder.append(thread.bytes)
        encoder.append(recipient.bytes)
        encoder.append(ephemeral)
        return encoder.bytes
    }

    /// The bundle key from an X25519 secret and the other side's public key: keyed BLAKE2b of
    /// the ephemeral and recipient public keys under the shared point. Nil when the point is of
    /// small order (`crypto_scalarmult` refuses an all-zero result).
    static func bundleKey(secret: SecretBytes, theirs: [UInt8], ephemeral: [UInt8], recipient: [UInt8])
        -> SecretBytes?
    {
        Sodium.ensureInitialized()
        var status: Int32 = -1
        let shared = SecretBytes(count: Int(crypto_scalarmult_BYTES)) { out in
            secret.withUnsafeBytes { sk in
                status = crypto_scalarmult(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    sk.baseAddress!.assumingMemoryBound(to: UInt8.self), theirs)
            }
        }
        guard status == 0 else { return nil }
        var input = CanonicalEncoder(domain: Domain.keyWrapBundleKey)
        input.append(ephemeral)
        input.append(recipient)
        let message = input.bytes
        return SecretBytes(count: ThreadKey.byteCount) { out in
            shared.withUnsafeBytes { k in
                _ = crypto_generichash(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), ThreadKey.byteCount, message,
                    UInt64(message.count), k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
            }
        }
    }

    /// Checks the bundle against a verified roster as ``KeyWrap/verify(against:)`` checks a wrap:
    /// same space, the signer a current member (not a link's signer) who signed it, the recipient
    /// a member. Returns the signer's record.
    @discardableResult
    public func verify(against roster: Roster) throws(KeyModelError) -> MemberRecord {
        try KeyWrap.verify(
            space: space, signer: signer, recipient: recipient, against: roster,
            signatureVerifies: hasValidSignature)
    }

    /// Whether the signature verifies under the bundle's own signer key (who that signer is must
    /// still be checked against a roster).
    package var hasValidSignature: Bool {
        signer.isValidSignature(
            signature,
            for: Self.signedBytes(space: space, recipient: recipient, ephemeral: ephemeral, entries: entries))
    }

    /// Verifies the bundle (see ``verify(against:)``), checks that it is addressed to `identity`,
    /// and opens every thread's key: all of them, or an error.
    public func open(with identity: DeviceIdentity, verifyingAgainst roster: Roster) throws(KeyModelError)
        -> [ThreadID: ThreadKey]
    {
        guard let recipientRecord = roster.members[recipient],
            recipientRecord.keys.encryption == identity.publicKeys.encryption
        else {
            throw KeyModelError(.wrongRecipient, "This wrap bundle is addressed to another member.")
        }
        try verify(against: roster)
        return try open(with: identity)
    }

    /// Opens every thread's key with `identity`, without the roster checks of
    /// ``open(with:verifyingAgainst:)``: only for callers that check the signer themselves.
    package func open(with identity: DeviceIdentity) throws(KeyModelError) -> [ThreadID: ThreadKey] {
        guard
            let key = Self.bundleKey(
                secret: identity.encryptionSecret, theirs: ephemeral, ephemeral: ephemeral,
                recipient: identity.publicKeys.encryption.bytes)
        else {
            throw KeyModelError(
                .invalidPublicKey, "This wrap bundle's ephemeral key is not a usable X25519 key.")
        }
        var keys: [ThreadID: ThreadKey] = [:]
        for entry in entries {
            let ad = Self.associatedData(
                space: space, thread: entry.thread, recipient: recipient, ephemeral: ephemeral)
            guard var plain = SecretBox.open(entry.nonce + entry.sealed, key: key, ad: ad) else {
                throw KeyModelError(
                    .decryptionFailed, "This wrap bundle cannot be opened with this device's key.")
            }
            // The key moves into wiped-on-release storage; the plain copy is wiped here.
            keys[entry.thread] = ThreadKey(trusted: SecretBytes(plain))
            sodium_memzero(&plain, plain.count)
        }
        return keys
    }
}

extension DeviceIdentity {
    /// Wraps every key of `keys` to `member` in one bundle signed with this device's signing key;
    /// nil when `keys` is empty.
    public func wrapBundle(_ keys: [ThreadID: ThreadKey], for member: MemberRecord, in space: SpaceID)
        -> KeyWrapBundle?
    {
        guard !keys.isEmpty else { return nil }
        Sodium.ensureInitialized()
        let secret = SecretBytes.random(count: Int(crypto_scalarmult_SCALARBYTES))
        var ephemeral = [UInt8](repeating: 0, count: KeyWrapBundle.ephemeralByteCount)
        secret.withUnsafeBytes { sk in
            _ = crypto_scalarmult_base(&ephemeral, sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        // The member's key is a validated point (``EncryptionPublicKey``), so the agreement holds.
        guard
            let key = KeyWrapBundle.bundleKey(
                secret: secret, theirs: member.keys.encryption.bytes, ephemeral: ephemeral,
                recipient: member.keys.encryption.bytes)
        else { return nil }
        let entries = keys.sorted { $0.key < $1.key }.map { thread, threadKey in
            let ad = KeyWrapBundle.associatedData(
                space: space, thread: thread, recipient: member.id, ephemeral: ephemeral)
            var plain = threadKey.secret.unredactedBytes()
            let box = SecretBox.seal(plain, key: key, ad: ad)
            sodium_memzero(&plain, plain.count)
            // Lengths are right by construction.
            return try! KeyWrapBundle.Entry(
                thread: thread, nonce: Array(box.prefix(SecretBox.nonceByteCount)),
                sealed: Array(box.dropFirst(SecretBox.nonceByteCount)))
        }
        let signed = KeyWrapBundle.signedBytes(
            space: space, recipient: member.id, ephemeral: ephemeral, entries: entries)
        return try! KeyWrapBundle(
            space: space, recipient: member.id, signer: publicKeys.signing, ephemeral: ephemeral,
            entries: entries, signature: sign(signed))
    }
}

extension KeyWrapBundle.Entry: Codable {
    private enum CodingKeys: String, CodingKey { case thread, nonce, sealed }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            thread: c.decode(ThreadID.self, forKey: .thread),
            nonce: c.decodeBytes(forKey: .nonce, count: SecretBox.nonceByteCount),
            sealed: c.decodeBytes(forKey: .sealed, count: Self.sealedByteCount))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(thread, forKey: .thread)
        try c.encodeBytes(nonce, forKey: .nonce)
        try c.encodeBytes(sealed, forKey: .sealed)
    }
}

extension KeyWrapBundle: Codable {
    private enum CodingKeys: String, CodingKey {
        case space, recipient, signer, ephemeral, entries, signature
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let entries = try c.decode([Entry].self, forKey: .entries)
        do {
            try self.init(
                space: c.decode(SpaceID.self, forKey: .space),
                recipient: c.decode(MemberID.self, forKey: .recipient),
                signer: c.decodeChecked(forKey: .signer) { b throws(KeyModelError) in
                    try SigningPublicKey(bytes: b)
                },
                ephemeral: c.decodeBytes(forKey: .ephemeral, count: Self.ephemeralByteCount),
                entries: entries,
                signature: c.decodeChecked(forKey: .signature) { b throws(KeyModelError) in
                    try Signature(bytes: b)
                })
        } catch let error as KeyModelError {
            throw DecodingError.dataCorruptedError(
                forKey: .entries, in: c, debugDescription: error.message)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(space, forKey: .space)
        try c.encode(recipient, forKey: .recipient)
        try c.encodeBytes(signer.bytes, forKey: .signer)
        try c.encodeBytes(ephemeral, forKey: .ephemeral)
        try c.encode(entries, forKey: .entries)
        try c.encodeBytes(signature.bytes, forKey: .signature)
    }
}
