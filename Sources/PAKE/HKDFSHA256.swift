import CSodium

/// HKDF with SHA-256 (RFC 5869) over libsodium's HMAC-SHA256 (libsodium 1.0.18 has no HKDF).
/// Outputs are ``SecretBytes``. OpenSSL 3's `EVP_KDF` "HKDF" gave the same bytes at several
/// times the cost (a context and its parameters per call, the provider's HMAC): a join
/// derives a key for every message it seals or opens.
///
/// ```swift
/// let key = HKDFSHA256.deriveKey(from: inputKey, salt: [], info: Array("purpose".utf8), byteCount: 32)
/// ```
///
/// `byteCount` must be in `1...8160` (255 blocks); anything else is a programming error.
public enum HKDFSHA256 {
    /// The largest output RFC 5869 allows for SHA-256: 255 × 32 bytes.
    public static let maximumByteCount = 255 * 32

    /// Extract-then-expand: `byteCount` bytes of key material from `inputKey`.
    /// An empty salt is the same as 32 zero bytes (RFC 5869 §2.2).
    public static func deriveKey(
        from inputKey: some ReadableBytes, salt: some ReadableBytes = [UInt8](),
        info: some ReadableBytes = [UInt8](), byteCount: Int
    ) -> SecretBytes {
        precondition((1...maximumByteCount).contains(byteCount), "HKDF output length out of range")
        return expand(pseudorandomKey: extract(from: inputKey, salt: salt), info: info, byteCount: byteCount)
    }

    /// HKDF-Extract: the 32-byte pseudorandom key `HMAC-SHA256(salt, inputKey)`.
    public static func extract(
        from inputKey: some ReadableBytes, salt: some ReadableBytes = [UInt8]()
    ) -> SecretBytes {
        // An empty salt is an HMAC key of no bytes, padded with zeros as 32 zero bytes would be.
        inputKey.withReadableBytes { ikm in
            salt.withReadableBytes { salt in
                SecretBytes(count: HMACSHA256.byteCount) { out in
                    HMACSHA256.compute(message: ikm, key: salt, into: out)
                }
            }
        }
    }

    /// HKDF-Expand: `byteCount` bytes from a pseudorandom key (at least 32 bytes) and `info`.
    public static func expand(
        pseudorandomKey: some ReadableBytes, info: some ReadableBytes = [UInt8](), byteCount: Int
    ) -> SecretBytes {
        precondition((1...maximumByteCount).contains(byteCount), "HKDF output length out of range")
        return pseudorandomKey.withReadableBytes { prk in
            info.withReadableBytes { info in
                SecretBytes(count: byteCount) { out in expand(prk: prk, info: info, into: out) }
            }
        }
    }

    /// `T(1) | T(2) | …` cut to `out.count`, where `T(i) = HMAC(prk, T(i−1) | info | i)`.
    private static func expand(
        prk: UnsafeRawBufferPointer, info: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) {
        Sodium.ensureInitialized()
        var state = crypto_auth_hmacsha256_state()
        var block = [UInt8](repeating: 0, count: HMACSHA256.byteCount)
        defer {
            sodium_memzero(&state, MemoryLayout<crypto_auth_hmacsha256_state>.size)
            sodium_memzero(&block, block.count)
        }
        let empty: UInt8 = 0
        var written = 0
        var counter: UInt8 = 1
        while written < out.count {
            withUnsafePointer(to: empty) { empty in
                _ = crypto_auth_hmacsha256_init(
                    &state, prk.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? empty, prk.count)
            }
            if counter > 1 { crypto_auth_hmacsha256_update(&state, block, UInt64(block.count)) }
            if info.count > 0 {
                crypto_auth_hmacsha256_update(
                    &state, info.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(info.count))
            }
            crypto_auth_hmacsha256_update(&state, &counter, 1)
            crypto_auth_hmacsha256_final(&state, &block)
            let count = min(block.count, out.count - written)
            block.withUnsafeBytes {
                (out.baseAddress! + written).copyMemory(from: $0.baseAddress!, byteCount: count)
            }
            written += count
            counter &+= 1
        }
    }
}
