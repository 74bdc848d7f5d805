import CSodium
import PAKE

/// The tag for ``AnchorID``.
public enum AnchorIDKind: IdentifierKind { public static let noun = "device id" }

/// Names one key anchor of a home account (an enrolled device; later a recovery credential).
/// It is a blind index: `HMAC-SHA256(accountKey, kind ‖ public keys)` cut to 16 bytes, so the
/// home server can file anchors under it but cannot make a valid one for a key of its own, and
/// every device can check that an anchor the server lists really belongs to the account.
public typealias AnchorID = Identifier<AnchorIDKind>

/// What kind of key anchor holds a wrap of the vault key. The home server only stores the word.
public enum AnchorKind: String, Sendable, Codable, CaseIterable {
    /// A signed-in device (its key pair lives in the device's state directory).
    case device
    /// A recovery credential (account recovery; its key pair is derived from the credential).
    case recovery
}

/// A key anchor's public side: enough to wrap the vault key to it and to check its signatures.
public struct AnchorKeys: Sendable, Equatable {
    public let kind: AnchorKind
    public let publicKeys: MemberPublicKeys

    public init(kind: AnchorKind, publicKeys: MemberPublicKeys) {
        self.kind = kind
        self.publicKeys = publicKeys
    }

    /// The anchor's blind index under the account key.
    public func id(accountKey: AccountKey) -> AnchorID {
        var encoder = CanonicalEncoder(domain: Domain.homeAnchorIndex)
        encoder.append(kind.rawValue)
        encoder.append(publicKeys.encryption.bytes)
        encoder.append(publicKeys.signing.bytes)
        let tag = HMACSHA256.authenticationCode(for: encoder.bytes, key: accountKey.secret)
        // Length is right by construction.
        return try! AnchorID(bytes: tag.prefix(AnchorID.byteCount))
    }
}

/// The account's own secret, shared by every anchor holder (it travels in the vault and in the
/// link grant). It makes anchor ids; it never reaches the home server.
public struct AccountKey: Sendable, Equatable, CustomStringConvertible {
    public static var byteCount: Int { 32 }
    package let secret: SecretBytes

    public static func random() -> AccountKey { AccountKey(secret: SecretBytes.random(count: byteCount)) }

    init(secret: SecretBytes) { self.secret = secret }

    /// Parses the base64url form (from the vault or a link grant).
    public init(base64URL text: String) throws(KeyModelError) {
        guard let bytes = Base64URL.decode(text), bytes.count == Self.byteCount else {
            throw KeyModelError(.invalidLength, "An account key has 32 bytes.")
        }
        secret = SecretBytes(bytes)
    }

    /// The base64url form, for the encrypted vault and the device's private state only.
    public var base64URL: String { Base64URL.encode(secret.unredactedBytes()) }
    public var description: String { "AccountKey(redacted)" }
}

/// The vault's data encryption key (the DEK) with its generation. The vault is
/// XChaCha20-Poly1305 under it; each anchor holds its own wrap of it. Rotating (after a device is
/// removed) makes a new key with the next generation.
public struct VaultKey: Sendable, Equatable, CustomStringConvertible {
    public static var byteCount: Int { Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES) }
    /// Sealed wrap: generation (8) and key (32) sealed to the anchor's X25519 key.
    public static var wrapByteCount: Int { 8 + byteCount + Int(crypto_box_sealbytes()) }

    package let secret: SecretBytes
    public let generation: Int64

    /// A fresh random key.
    public static func random(generation: Int64) -> VaultKey {
        VaultKey(secret: SecretBytes.random(count: byteCount), generation: generation)
    }

    init(secret: SecretBytes, generation: Int64) {
        self.secret = secret
        self.generation = generation
    }

    /// The key's base64url form, for the link grant (sent over the confirmed channel only).
    public var base64URL: String { Base64URL.encode(secret.unredactedBytes()) }

    /// Parses ``base64URL``.
    public init(base64URL text: String, generation: Int64) throws(KeyModelError) {
        guard let bytes = Base64URL.decode(text), bytes.count == Self.byteCount else {
            throw KeyModelError(.invalidLength, "A vault key has 32 bytes.")
        }
        self.init(secret: SecretBytes(bytes), generation: generation)
    }

    public var description: String { "VaultKey(generation \(generation), redacted)" }

    private func additionalData() -> [UInt8] {
        var encoder = CanonicalEncoder(domain: Domain.vault)
        encoder.append(UInt64(bitPattern: generation))
        return encoder.bytes
    }

    /// `0x01 ‖ generation (8, big-endian) ‖ nonce (24) ‖ ciphertext ‖ tag (16)`.
    public func seal(_ plaintext: [UInt8]) -> [UInt8] {
        [1] + Self.bigEndian(generation) + SecretBox.seal(plaintext, key: secret, ad: additionalData())
    }

    /// The generation a sealed vault names (nil when it is not a vault).
    public static func generation(of sealed: [UInt8]) -> Int64? {
        guard sealed.count >= 1 + 8 + SecretBox.overhead, sealed[0] == 1 else { return nil }
        return sealed[1..<9].reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    /// Opens a vault sealed with this key.
    public func open(_ sealed: [UInt8]) throws(KeyModelError) -> [UInt8] {
        guard let named = Self.generation(of: sealed) else {
            throw KeyModelError(.invalidEncoding, "The saved spaces are not in a format this eleven knows.")
        }
        guard named == generation else {
            throw KeyModelError(.wrongContext, "The saved spaces were locked with another key generation.")
        }
        guard let plain = SecretBox.open(sealed.dropFirst(9), key: secret, ad: additionalData()) else {
            throw KeyModelError(.decryptionFailed, "The saved spaces do not open with this key.")
        }
        return plain
    }

    /// The account's proof that one of its anchor holders made this key:
    /// `HMAC-SHA256(accountKey, domain ‖ generation ‖ key)`. It travels inside the vault sealed
    /// under the key. The home server never sees the account key, so it cannot make a proof for a
    /// key of its own, and a key from another account carries another account's proof.
    public func proof(accountKey: AccountKey) -> SecretBytes {
        var encoder = CanonicalEncoder(domain: Domain.vaultKeyProof)
        encoder.append(UInt64(bitPattern: generation))
        var message = encoder.bytes + secret.unredactedBytes()
        defer { wipe(&message) }
        return SecretBytes(HMACSHA256.authenticationCode(for: message, key: accountKey.secret))
    }

    /// Seals the key (with its generation) to an anchor's X25519 key.
    public func wrap(for anchor: AnchorKeys) -> [UInt8] {
        PAKE.Sodium.ensureInitialized()
        var plain = Self.bigEndian(generation) + secret.unredactedBytes()
        defer { wipe(&plain) }
        var sealed = [UInt8](repeating: 0, count: Self.wrapByteCount)
        _ = crypto_box_seal(&sealed, plain, UInt64(plain.count), anchor.publicKeys.encryption.bytes)
        return sealed
    }

    static func bigEndian(_ value: Int64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: value) >> (56 - 8 * UInt64($0))) }
    }
}

extension DeviceIdentity {
    /// Opens a vault key wrapped to this identity (as a key anchor).
    public func unwrapVaultKey(_ wrap: [UInt8]) throws(KeyModelError) -> VaultKey {
        guard wrap.count == VaultKey.wrapByteCount else {
            throw KeyModelError(.invalidLength, "A vault key wrap has \(VaultKey.wrapByteCount) bytes.")
        }
        var status: Int32 = -1
        let plain = SecretBytes(count: 8 + VaultKey.byteCount) { out in
            encryptionSecret.withUnsafeBytes { sk in
                status = crypto_box_seal_open(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), wrap, UInt64(wrap.count),
                    publicKeys.encryption.bytes, sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard status == 0 else {
            throw KeyModelError(.decryptionFailed, "This device's key does not open that wrap.")
        }
        let generation = plain.prefix(8).unredactedBytes().reduce(Int64(0)) { $0 << 8 | Int64($1) }
        return VaultKey(secret: plain.slice(8..<plain.count), generation: generation)
    }

    /// This identity as a key anchor of `kind`.
    public func anchor(_ kind: AnchorKind = .device) -> AnchorKeys {
        AnchorKeys(kind: kind, publicKeys: publicKeys)
    }
}

/// A signed home request: proves the holder of an anchor's signing key sent it now. The server
/// refuses a timestamp outside ``window`` seconds of its clock and any nonce it has seen.
public struct HomeProof: Sendable, Equatable {
    /// How far a proof's timestamp may be from the server's clock, in seconds.
    public static let window: Int64 = 300
    public static var nonceByteCount: Int { 16 }

    /// What a proof is for; bound into the signature.
    public enum Purpose: String, Sendable {
        case createAccount = "create-account"
        case session
        /// A new device asking the account's devices for approval (it has no anchor id yet).
        case approval
    }

    public let anchor: AnchorID
    public let timestamp: Int64
    public let nonce: [UInt8]
    public let signature: Signature

    public init(anchor: AnchorID, timestamp: Int64, nonce: [UInt8], signature: Signature)
        throws(KeyModelError)
    {
        guard nonce.count == Self.nonceByteCount else {
            throw KeyModelError(.invalidLength, "A request nonce has \(Self.nonceByteCount) bytes.")
        }
        self.anchor = anchor
        self.timestamp = timestamp
        self.nonce = nonce
        self.signature = signature
    }

    static func signedBytes(
        _ purpose: Purpose, anchor: AnchorID, timestamp: Int64, nonce: [UInt8], payload: [UInt8]
    ) -> [UInt8] {
        var encoder = CanonicalEncoder(domain: Domain.homeRequest)
        encoder.append(purpose.rawValue)
        encoder.append(anchor.bytes)
        encoder.append(UInt64(bitPattern: timestamp))
        encoder.append(nonce)
        encoder.append(SHA256.hash(payload))
        return encoder.bytes
    }

    /// Checks the signature for `purpose` over `payload` against the anchor's signing key.
    public func verify(_ purpose: Purpose, payload: [UInt8], signingKey: SigningPublicKey)
        throws(KeyModelError)
    {
        let signed = Self.signedBytes(
            purpose, anchor: anchor, timestamp: timestamp, nonce: nonce, payload: payload)
        guard signingKey.isValidSignature(signature, for: signed) else {
            throw KeyModelError(.badSignature, "This request's signature does not verify.")
        }
    }
}

extension DeviceIdentity {
    /// Signs a home request as `anchor` at `now` with a fresh nonce.
    public func homeProof(_ purpose: HomeProof.Purpose, anchor: AnchorID, payload: [UInt8], now: Int64)
        -> HomeProof
    {
        let nonce = SecretBytes.randomBytes(HomeProof.nonceByteCount)
        let signed = HomeProof.signedBytes(
            purpose, anchor: anchor, timestamp: now, nonce: nonce, payload: payload)
        // Lengths are right by construction.
        return try! HomeProof(anchor: anchor, timestamp: now, nonce: nonce, signature: sign(signed))
    }
}

extension HomeProof: Codable {
    private enum CodingKeys: String, CodingKey {
        case anchor, timestamp, nonce, signature
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            anchor: c.decode(AnchorID.self, forKey: .anchor),
            timestamp: c.decode(Int64.self, forKey: .timestamp),
            nonce: c.decodeBytes(forKey: .nonce, count: Self.nonceByteCount),
            signature: c.decodeChecked(forKey: .signature) { b throws(KeyModelError) in
                try Signature(bytes: b)
            })
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(anchor, forKey: .anchor)
        try c.encode(timestamp, forKey: .timestamp)
        try c.encodeBytes(nonce, forKey: .nonce)
        try c.encodeBytes(signature.bytes, forKey: .signature)
    }
}
