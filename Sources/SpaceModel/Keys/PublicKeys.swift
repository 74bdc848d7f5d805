import CSodium
import PAKE

/// A member's X25519 public key: what thread keys and notes are sealed to.
public struct EncryptionPublicKey: Hashable, Sendable, CustomStringConvertible {
    public static var byteCount: Int { Int(crypto_box_PUBLICKEYBYTES) }

    /// The raw 32 bytes.
    public let bytes: [UInt8]

    /// Accepts 32 bytes that are a usable X25519 point (not of small order).
    public init(bytes: some Collection<UInt8>) throws(KeyModelError) {
        let array = Array(bytes)
        guard array.count == Self.byteCount else {
            throw KeyModelError(.invalidLength, "An encryption key has 32 bytes, not \(array.count).")
        }
        Sodium.ensureInitialized()
        // A small-order point makes every shared secret zero; crypto_scalarmult reports that.
        let usable = CheckedBytes.validEncryptionKeys.check(array) { point in
            var scalar = [UInt8](repeating: 0x5A, count: Int(crypto_scalarmult_SCALARBYTES))
            var product = [UInt8](repeating: 0, count: Int(crypto_scalarmult_BYTES))
            defer { sodium_memzero(&scalar, scalar.count) }
            return crypto_scalarmult(&product, scalar, point) == 0
        }
        guard usable else {
            throw KeyModelError(.invalidPublicKey, "That encryption key is not a usable X25519 key.")
        }
        self.bytes = array
    }

    package init(trusted bytes: [UInt8]) {
        self.bytes = bytes
    }

    public var description: String { Base64URL.encode(bytes) }
}

/// A member's Ed25519 public key: what signatures on wraps, messages and events verify against.
public struct SigningPublicKey: Hashable, Sendable, CustomStringConvertible {
    public static var byteCount: Int { Int(crypto_sign_PUBLICKEYBYTES) }

    /// The raw 32 bytes.
    public let bytes: [UInt8]

    /// Accepts 32 bytes that are a canonical Ed25519 point of prime order.
    public init(bytes: some Collection<UInt8>) throws(KeyModelError) {
        let array = Array(bytes)
        guard array.count == Self.byteCount else {
            throw KeyModelError(.invalidLength, "A signing key has 32 bytes, not \(array.count).")
        }
        Sodium.ensureInitialized()
        guard CheckedBytes.validSigningKeys.check(array, { crypto_core_ed25519_is_valid_point($0) == 1 })
        else {
            throw KeyModelError(.invalidPublicKey, "That signing key is not a valid Ed25519 key.")
        }
        self.bytes = array
    }

    package init(trusted bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Whether `signature` is this key's signature over `message`.
    public func isValidSignature(_ signature: Signature, for message: [UInt8]) -> Bool {
        Sodium.ensureInitialized()
        return crypto_sign_verify_detached(signature.bytes, message, UInt64(message.count), bytes) == 0
    }

    public var description: String { Base64URL.encode(bytes) }
}

/// A 64-byte Ed25519 signature.
public struct Signature: Hashable, Sendable {
    public static var byteCount: Int { Int(crypto_sign_BYTES) }

    public let bytes: [UInt8]

    public init(bytes: some Collection<UInt8>) throws(KeyModelError) {
        let array = Array(bytes)
        guard array.count == Self.byteCount else {
            throw KeyModelError(.invalidLength, "A signature has 64 bytes, not \(array.count).")
        }
        self.bytes = array
    }
}

/// The public half of a device identity: what a space server and other members know about a
/// member's device.
public struct MemberPublicKeys: Hashable, Sendable, Codable {
    /// Thread keys and notes are sealed to this key.
    public let encryption: EncryptionPublicKey
    /// The member's signatures verify against this key.
    public let signing: SigningPublicKey

    public init(encryption: EncryptionPublicKey, signing: SigningPublicKey) {
        self.encryption = encryption
        self.signing = signing
    }

    private enum CodingKeys: String, CodingKey {
        case encryption
        case signing
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if decoder.userInfo[.memberKeysVouched] as? Bool == true {
            // Checked later, or pinned by a checkpoint (see `Roster.verify(events:ownerKey:vouchedThrough:)`).
            encryption = EncryptionPublicKey(
                trusted: try container.decodeBytes(forKey: .encryption, count: EncryptionPublicKey.byteCount))
            signing = SigningPublicKey(
                trusted: try container.decodeBytes(forKey: .signing, count: SigningPublicKey.byteCount))
            return
        }
        encryption = try container.decodeChecked(forKey: .encryption) { bytes throws(KeyModelError) in
            try EncryptionPublicKey(bytes: bytes)
        }
        signing = try container.decodeChecked(forKey: .signing) { bytes throws(KeyModelError) in
            try SigningPublicKey(bytes: bytes)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeBytes(encryption.bytes, forKey: .encryption)
        try container.encodeBytes(signing.bytes, forKey: .signing)
    }

    /// A single text form (`base64url(encryption).base64url(signing)`) that a person can copy, as
    /// printed by `eleven whoami` and accepted by `eleven members add --key`.
    public var text: String { "\(Base64URL.encode(encryption.bytes)).\(Base64URL.encode(signing.bytes))" }

    /// Parses ``text``.
    public init(text: String) throws(KeyModelError) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let enc = Base64URL.decode(String(parts[0])),
            let sig = Base64URL.decode(String(parts[1]))
        else {
            throw KeyModelError(
                .invalidEncoding, "A member key is two base64url parts joined by a dot.")
        }
        self.init(encryption: try EncryptionPublicKey(bytes: enc), signing: try SigningPublicKey(bytes: sig))
    }
}

/// The SHA-256 hash of a membership event; each event names its predecessor's hash.
public struct EventHash: Hashable, Sendable, CustomStringConvertible {
    public static var byteCount: Int { 32 }

    /// The hash the first event names as its predecessor: 32 zero bytes.
    public static let genesis = EventHash(trusted: [UInt8](repeating: 0, count: 32))

    public let bytes: [UInt8]

    public init(bytes: some Collection<UInt8>) throws(KeyModelError) {
        let array = Array(bytes)
        guard array.count == Self.byteCount else {
            throw KeyModelError(.invalidLength, "An event hash has 32 bytes, not \(array.count).")
        }
        self.bytes = array
    }

    package init(trusted bytes: [UInt8]) {
        self.bytes = bytes
    }

    public var description: String { Base64URL.encode(bytes) }
}
