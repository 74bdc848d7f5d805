import CSodium

/// SHA-256 (libsodium `crypto_hash_sha256`), one-shot or incremental.
///
/// ```swift
/// let digest = SHA256.hash(bytes)
/// var hasher = SHA256()
/// hasher.update(part1); hasher.update(part2)
/// let same = hasher.finalize()
/// ```
public struct SHA256: Sendable {
    /// The digest length in bytes (32).
    public static let byteCount = 32

    private var state = crypto_hash_sha256_state()

    /// A fresh incremental hasher.
    public init() {
        Sodium.ensureInitialized()
        crypto_hash_sha256_init(&state)
    }

    /// Feeds `bytes` into the hash.
    @inlinable public mutating func update(_ bytes: some ReadableBytes) {
        bytes.withReadableBytes { update(bufferPointer: $0) }
    }

    /// Feeds raw memory into the hash.
    public mutating func update(bufferPointer: UnsafeRawBufferPointer) {
        guard bufferPointer.count > 0 else { return }
        crypto_hash_sha256_update(
            &state, bufferPointer.baseAddress!.assumingMemoryBound(to: UInt8.self),
            UInt64(bufferPointer.count))
    }

    /// The 32-byte digest. The hasher should not be used afterwards.
    public mutating func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Self.byteCount)
        finalize(into: &digest)
        return digest
    }

    /// Writes the digest into the first 32 bytes of `output`.
    mutating func finalize(into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count >= Self.byteCount)
        crypto_hash_sha256_final(&state, output.baseAddress!.assumingMemoryBound(to: UInt8.self))
        sodium_memzero(&state, MemoryLayout<crypto_hash_sha256_state>.size)
    }

    private mutating func finalize(into digest: inout [UInt8]) {
        digest.withUnsafeMutableBytes { finalize(into: $0) }
    }

    /// SHA-256 of `bytes`.
    @inlinable public static func hash(_ bytes: some ReadableBytes) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }
}
