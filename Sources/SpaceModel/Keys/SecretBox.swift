import CSodium
import PAKE

/// XChaCha20-Poly1305 (libsodium) under a 32-byte key with a fresh random nonce: the one
/// authenticated encryption behind every format that keeps a secret at rest (pending invites and
/// joins, the vault, the bot's state). A box is `nonce (24) ‖ ciphertext ‖ tag (16)`; each format
/// adds its own version byte and header, and binds its context through `ad`.
public enum SecretBox {
    public static let nonceByteCount = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    public static let tagByteCount = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
    /// The overhead a box adds to its plaintext.
    public static var overhead: Int { nonceByteCount + tagByteCount }

    /// `nonce ‖ ciphertext ‖ tag` of `plaintext`, authenticated together with `ad`.
    public static func seal(_ plaintext: [UInt8], key: SecretBytes, ad: [UInt8]) -> [UInt8] {
        PAKE.Sodium.ensureInitialized()
        let nonce = SecretBytes.randomBytes(nonceByteCount)
        var cipher = [UInt8](repeating: 0, count: plaintext.count + tagByteCount)
        var written: UInt64 = 0
        key.withUnsafeBytes { k in
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                &cipher, &written, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce,
                k.bindMemory(to: UInt8.self).baseAddress!)
        }
        return nonce + cipher
    }

    /// The plaintext of a box made by ``seal(_:key:ad:)`` with the same key and `ad`; nil when
    /// it is too short, the key is wrong, or anything was changed.
    public static func open(_ box: some Collection<UInt8>, key: SecretBytes, ad: [UInt8]) -> [UInt8]? {
        let bytes = Array(box)
        guard key.count == 32, bytes.count >= overhead else { return nil }
        PAKE.Sodium.ensureInitialized()
        let nonce = Array(bytes[..<nonceByteCount])
        let cipher = Array(bytes[nonceByteCount...])
        var plain = [UInt8](repeating: 0, count: cipher.count - tagByteCount)
        var written: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                &plain, &written, nil, cipher, UInt64(cipher.count), ad, UInt64(ad.count), nonce,
                k.bindMemory(to: UInt8.self).baseAddress!)
        }
        guard rc == 0 else { return nil }
        return plain
    }
}
