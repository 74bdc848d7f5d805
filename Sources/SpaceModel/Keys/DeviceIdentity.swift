import CSodium
import PAKE

/// A member device's keys: an X25519 key pair to receive sealed thread keys and notes, and an
/// Ed25519 key pair to sign wraps, messages, notes and membership events.
///
/// Private parts live in ``SecretBytes`` (redacted, wiped when dropped). The description
/// shows public keys only.
public struct DeviceIdentity: Sendable {
    /// The public keys other members and servers see.
    public let publicKeys: MemberPublicKeys
    /// X25519 secret scalar (32 bytes).
    let encryptionSecret: SecretBytes
    /// libsodium Ed25519 secret key (seed followed by the public key, 64 bytes).
    let signingSecret: SecretBytes

    /// Makes a fresh identity from the system's secure random source.
    public static func generate() -> DeviceIdentity {
        Sodium.ensureInitialized()
        var encryptionPublic = [UInt8](repeating: 0, count: Int(crypto_box_PUBLICKEYBYTES))
        let encryptionSecret = SecretBytes(count: Int(crypto_box_SECRETKEYBYTES)) { sk in
            _ = crypto_box_keypair(&encryptionPublic, sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        var signingPublic = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        let signingSecret = SecretBytes(count: Int(crypto_sign_SECRETKEYBYTES)) { sk in
            _ = crypto_sign_keypair(&signingPublic, sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        // Made here from fresh secrets: a valid X25519 key (a clamped scalar times the base
        // point, never of small order) and a canonical Ed25519 point of prime order. Parsing
        // them back (the joiner's member record in the server's answer) need not check them.
        CheckedBytes.validEncryptionKeys.remember(encryptionPublic)
        CheckedBytes.validSigningKeys.remember(signingPublic)
        return DeviceIdentity(
            publicKeys: MemberPublicKeys(
                encryption: EncryptionPublicKey(trusted: encryptionPublic),
                signing: SigningPublicKey(trusted: signingPublic)),
            encryptionSecret: encryptionSecret, signingSecret: signingSecret)
    }

    private init(
        publicKeys: MemberPublicKeys, encryptionSecret: SecretBytes, signingSecret: SecretBytes
    ) {
        self.publicKeys = publicKeys
        self.encryptionSecret = encryptionSecret
        self.signingSecret = signingSecret
    }

    /// Signs `message` (already domain-separated by the caller) with the Ed25519 key.
    func sign(_ message: [UInt8]) -> Signature {
        // Length is right by construction.
        try! Signature(bytes: signature(over: message))
    }

    // MARK: Stored form

    /// Magic and version of the stored form.
    private static let magic: [UInt8] = Array("ELID".utf8)
    private static let storedVersion: UInt8 = 1
    /// Length of the stored form: magic, version, X25519 secret, Ed25519 seed.
    public static var storedByteCount: Int { 4 + 1 + 32 + 32 }

    /// The private stored form for the state directory: `"ELID"`, version byte `1`, the X25519
    /// secret key (32 bytes), the Ed25519 seed (32 bytes). Public keys are derived on load.
    /// Write it to a file with mode 0600; never print it.
    public func storedForm() -> SecretBytes {
        SecretBytes(count: Self.storedByteCount) { out in
            let base = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            for (index, byte) in Self.magic.enumerated() { base[index] = byte }
            base[4] = Self.storedVersion
            encryptionSecret.withUnsafeBytes { sk in
                (base + 5).update(from: sk.baseAddress!.assumingMemoryBound(to: UInt8.self), count: 32)
            }
            signingSecret.withUnsafeBytes { sk in
                _ = crypto_sign_ed25519_sk_to_seed(
                    base + 37, sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
    }

    /// Loads the stored form made by ``storedForm()``.
    public init(storedForm stored: SecretBytes) throws(KeyModelError) {
        Sodium.ensureInitialized()
        let header: [UInt8] = stored.withUnsafeBytes { Array($0.prefix(5)) }
        guard stored.count >= 5, Array(header.prefix(4)) == Self.magic else {
            throw KeyModelError(.invalidEncoding, "That file does not hold an Eleven device identity.")
        }
        guard header[4] == Self.storedVersion else {
            throw KeyModelError(
                .unsupportedVersion,
                "That device identity uses format version \(header[4]); this eleven knows version 1.")
        }
        guard stored.count == Self.storedByteCount else {
            throw KeyModelError(.invalidLength, "That device identity file is truncated or too long.")
        }
        var encryptionPublic = [UInt8](repeating: 0, count: 32)
        var signingPublic = [UInt8](repeating: 0, count: 32)
        let encryptionSecret = SecretBytes(count: 32) { sk in
            stored.withUnsafeBytes { source in
                sk.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[5..<37]))
            }
            _ = crypto_scalarmult_base(&encryptionPublic, sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        let signingSecret = SecretBytes(count: Int(crypto_sign_SECRETKEYBYTES)) { sk in
            stored.withUnsafeBytes { source in
                _ = crypto_sign_seed_keypair(
                    &signingPublic, sk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    source.baseAddress!.assumingMemoryBound(to: UInt8.self) + 37)
            }
        }
        self.init(
            publicKeys: MemberPublicKeys(
                encryption: try EncryptionPublicKey(bytes: encryptionPublic),
                signing: try SigningPublicKey(bytes: signingPublic)),
            encryptionSecret: encryptionSecret, signingSecret: signingSecret)
    }
}

extension DeviceIdentity: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "DeviceIdentity(public: \(publicKeys.text), private keys redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["publicKeys": publicKeys], displayStyle: .struct)
    }
}
