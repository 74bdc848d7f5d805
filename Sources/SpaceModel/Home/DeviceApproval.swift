import CSodium
import PAKE

/// Approving a new device from an enrolled one, through the home server (the ladder's second
/// rung without a code). The home server carries every message and may change any of them, so
/// the two devices agree on a key by an ephemeral X25519 exchange that the person confirms with
/// verification words, ZRTP-style:
///
/// 1. The new device sends its device keys and a commitment `SHA-256(domain ‖ ephemeral ‖ nonce)`.
/// 2. An enrolled device answers with its own ephemeral key (the offer).
/// 3. The new device reveals its ephemeral key and nonce; the enrolled device checks the
///    commitment.
///
/// The new device committed before it saw the offer, and the offer was sent before the reveal,
/// so a server in the middle cannot choose its keys to make both sides' words agree (one chance
/// in 2^33). The words cover the new device's keys, so the enrolled device wraps the vault key
/// to the keys the person approved. The grant (account key, vault key) and the new device's name
/// travel sealed under a key from the exchange: the server reads none of it.
public struct DeviceApproval: Sendable {
    public static var nonceByteCount: Int { 32 }

    /// What both devices derive once the exchange is complete.
    public struct Agreement: Sendable {
        /// The verification words' source (at least 5 bytes; see `VerificationWords`).
        public let verifier: [UInt8]
        /// Seals the label (new device → enrolled device) and the grant (the other way).
        let box: SecretBytes

        public func seal(_ plaintext: [UInt8], _ purpose: String) -> [UInt8] {
            SecretBox.seal(plaintext, key: box, ad: Array("\(Domain.deviceApproval)/\(purpose)".utf8))
        }

        public func open(_ sealed: [UInt8], _ purpose: String) throws(KeyModelError) -> [UInt8] {
            guard
                let plain = SecretBox.open(
                    sealed, key: box, ad: Array("\(Domain.deviceApproval)/\(purpose)".utf8))
            else {
                throw KeyModelError(.decryptionFailed, "The other device's answer does not open.")
            }
            return plain
        }
    }

    /// This side's ephemeral key pair (never stored).
    public let ephemeral: DeviceIdentity
    public let nonce: [UInt8]

    public init() {
        ephemeral = DeviceIdentity.generate()
        nonce = SecretBytes.randomBytes(Self.nonceByteCount)
    }

    public var publicKey: [UInt8] { ephemeral.publicKeys.encryption.bytes }

    public static func commitment(ephemeral: [UInt8], nonce: [UInt8]) -> [UInt8] {
        var encoder = CanonicalEncoder(domain: Domain.deviceApprovalCommitment)
        encoder.append(ephemeral)
        encoder.append(nonce)
        return SHA256.hash(encoder.bytes)
    }

    public var commitment: [UInt8] { Self.commitment(ephemeral: publicKey, nonce: nonce) }

    /// The new device's side, once the offer came: the agreement over its own device keys.
    public func agreeAsNewDevice(device: MemberPublicKeys, offer: [UInt8]) throws(KeyModelError) -> Agreement
    {
        try Self.agree(
            secret: ephemeral, theirs: offer, device: device, commitment: commitment, offer: offer,
            reveal: publicKey, nonce: nonce)
    }

    /// The enrolled device's side (its `self` is the offer), once the reveal came: checks the
    /// commitment first.
    public func agreeAsApprover(
        device: MemberPublicKeys, commitment: [UInt8], reveal: [UInt8], nonce: [UInt8]
    ) throws(KeyModelError) -> Agreement {
        guard nonce.count == Self.nonceByteCount,
            Self.commitment(ephemeral: reveal, nonce: nonce).count == commitment.count,
            sodium_memcmp(Self.commitment(ephemeral: reveal, nonce: nonce), commitment, commitment.count) == 0
        else {
            throw KeyModelError(.badSignature, "The new device's key does not match what it committed to.")
        }
        return try Self.agree(
            secret: ephemeral, theirs: reveal, device: device, commitment: commitment, offer: publicKey,
            reveal: reveal, nonce: nonce)
    }

    private static func agree(
        secret: DeviceIdentity, theirs: [UInt8], device: MemberPublicKeys, commitment: [UInt8],
        offer: [UInt8],
        reveal: [UInt8], nonce: [UInt8]
    ) throws(KeyModelError) -> Agreement {
        // Refuses small-order points (whose shared secret is known to everyone).
        let point = try EncryptionPublicKey(bytes: theirs)
        var status: Int32 = -1
        let shared = SecretBytes(count: Int(crypto_scalarmult_BYTES)) { out in
            secret.encryptionSecret.withUnsafeBytes { sk in
                status = crypto_scalarmult(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    sk.baseAddress!.assumingMemoryBound(to: UInt8.self), point.bytes)
            }
        }
        guard status == 0 else {
            throw KeyModelError(.invalidPublicKey, "The other device's key is not a usable X25519 key.")
        }
        var transcript = CanonicalEncoder(domain: Domain.deviceApproval)
        transcript.append(device.encryption.bytes)
        transcript.append(device.signing.bytes)
        transcript.append(commitment)
        transcript.append(offer)
        transcript.append(reveal)
        transcript.append(nonce)
        let keys = HKDFSHA256.deriveKey(from: shared, salt: SHA256.hash(transcript.bytes), byteCount: 64)
        return Agreement(
            verifier: keys.prefix(32).unredactedBytes(), box: keys.slice(32..<64))
    }
}
