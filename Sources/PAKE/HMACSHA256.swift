import CSodium

/// HMAC-SHA256 (RFC 2104) with keys of any length (libsodium `crypto_auth_hmacsha256_*`).
public enum HMACSHA256 {
    /// The tag length in bytes (32).
    public static let byteCount = 32

    /// The HMAC-SHA256 tag of `message` under `key`.
    @inlinable public static func authenticationCode(
        for message: some ReadableBytes, key: some ReadableBytes
    ) -> [UInt8] {
        var tag = [UInt8](repeating: 0, count: byteCount)
        tag.withUnsafeMutableBytes { out in
            message.withReadableBytes { m in
                key.withReadableBytes { k in compute(message: m, key: k, into: out) }
            }
        }
        return tag
    }

    /// Whether `tag` is the HMAC-SHA256 of `message` under `key`, compared in constant time.
    @inlinable public static func isValid(
        _ tag: some ReadableBytes, for message: some ReadableBytes, key: some ReadableBytes
    ) -> Bool {
        let expected = SecretBytes(count: byteCount) { out in
            message.withReadableBytes { m in
                key.withReadableBytes { k in compute(message: m, key: k, into: out) }
            }
        }
        return expected.isEqual(toBytes: tag)
    }

    @usableFromInline static func compute(
        message: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) {
        precondition(output.count >= byteCount)
        Sodium.ensureInitialized()
        var state = crypto_auth_hmacsha256_state()
        let emptyByte: UInt8 = 0
        _ = withUnsafePointer(to: emptyByte) { empty in
            crypto_auth_hmacsha256_init(
                &state, key.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? empty, key.count)
        }
        if message.count > 0 {
            crypto_auth_hmacsha256_update(
                &state, message.baseAddress!.assumingMemoryBound(to: UInt8.self),
                UInt64(message.count))
        }
        crypto_auth_hmacsha256_final(&state, output.baseAddress!.assumingMemoryBound(to: UInt8.self))
        sodium_memzero(&state, MemoryLayout<crypto_auth_hmacsha256_state>.size)
    }
}
