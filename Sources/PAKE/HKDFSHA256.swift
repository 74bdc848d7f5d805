import COpenSSL

/// HKDF with SHA-256 (RFC 5869), computed by OpenSSL 3's `EVP_KDF` "HKDF" (libsodium 1.0.18 has
/// no HKDF). Outputs are ``SecretBytes``.
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
        return inputKey.withReadableBytes { ikm in
            salt.withReadableBytes { salt in
                info.withReadableBytes { info in
                    run(
                        mode: EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND, key: ikm, salt: salt, info: info,
                        byteCount: byteCount)
                }
            }
        }
    }

    /// HKDF-Extract: the 32-byte pseudorandom key `HMAC-SHA256(salt, inputKey)`.
    public static func extract(
        from inputKey: some ReadableBytes, salt: some ReadableBytes = [UInt8]()
    ) -> SecretBytes {
        inputKey.withReadableBytes { ikm in
            salt.withReadableBytes { salt in
                run(
                    mode: EVP_KDF_HKDF_MODE_EXTRACT_ONLY, key: ikm, salt: salt,
                    info: UnsafeRawBufferPointer(start: nil, count: 0), byteCount: 32)
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
                run(
                    mode: EVP_KDF_HKDF_MODE_EXPAND_ONLY, key: prk,
                    salt: UnsafeRawBufferPointer(start: nil, count: 0), info: info, byteCount: byteCount)
            }
        }
    }

    private static func run(
        mode: Int32, key: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer,
        info: UnsafeRawBufferPointer, byteCount: Int
    ) -> SecretBytes {
        let template = hkdfTemplate
        guard let context = EVP_KDF_CTX_new(template.kdf) else {
            preconditionFailure("OpenSSL could not allocate an HKDF context")
        }
        defer { EVP_KDF_CTX_free(context) }
        var mode = mode
        // OpenSSL copies parameter values during the call; the pointers only need to live until
        // EVP_KDF_derive returns. Zero-length buffers get a valid dummy pointer.
        var dummy: UInt8 = 0
        return withUnsafeMutablePointer(to: &dummy) { dummy in
            func pointer(_ buffer: UnsafeRawBufferPointer) -> UnsafeMutableRawPointer {
                buffer.count > 0
                    ? UnsafeMutableRawPointer(mutating: buffer.baseAddress!) : UnsafeMutableRawPointer(dummy)
            }
            var parameters: [OSSL_PARAM] = [
                OSSL_PARAM_construct_utf8_string(template.names.digest, template.names.sha256, 0),
                OSSL_PARAM_construct_int(template.names.mode, &mode),
                OSSL_PARAM_construct_octet_string(template.names.key, pointer(key), key.count),
            ]
            if salt.count > 0 {
                parameters.append(
                    OSSL_PARAM_construct_octet_string(template.names.salt, pointer(salt), salt.count))
            }
            if info.count > 0 {
                parameters.append(
                    OSSL_PARAM_construct_octet_string(template.names.info, pointer(info), info.count))
            }
            parameters.append(OSSL_PARAM_construct_end())
            return SecretBytes(count: byteCount) { output in
                let status = EVP_KDF_derive(
                    context, output.baseAddress!.assumingMemoryBound(to: UInt8.self), byteCount,
                    &parameters)
                precondition(status == 1, "OpenSSL HKDF failed")
            }
        }
    }
}

/// The HKDF implementation, fetched once (fetching by name on every call costs more than the
/// HKDF itself), and the parameter names as stable C strings. OpenSSL 3.0's HKDF cannot
/// duplicate a context, so each derivation makes a fresh one from the fetched KDF.
private struct HKDFTemplate: @unchecked Sendable {
    struct Names {
        let mode = strdup(OSSL_KDF_PARAM_MODE)!
        let key = strdup(OSSL_KDF_PARAM_KEY)!
        let salt = strdup(OSSL_KDF_PARAM_SALT)!
        let info = strdup(OSSL_KDF_PARAM_INFO)!
        let digest = strdup(OSSL_KDF_PARAM_DIGEST)!
        let sha256 = strdup("SHA256")!
    }

    let names = Names()
    /// An `EVP_KDF` is immutable once fetched and may be shared between threads.
    let kdf: OpaquePointer

    init() {
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else {
            preconditionFailure("OpenSSL has no HKDF implementation")
        }
        self.kdf = kdf
    }
}

private let hkdfTemplate = HKDFTemplate()
