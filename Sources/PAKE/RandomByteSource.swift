import CSodium

/// Where protocol code gets its randomness. Injected (passed `inout`) so tests and test vectors
/// can replay exact bytes, while production passes ``SystemRandom``.
public protocol RandomByteSource {
    /// Fills `buffer` completely with random bytes.
    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer)
}

extension RandomByteSource {
    /// `count` random bytes in an ordinary array (use ``SecretBytes/init(randomCount:using:)``
    /// for secrets).
    public mutating func bytes(count: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        result.withUnsafeMutableBytes { fill($0) }
        return result
    }
}

/// The operating system's cryptographic random generator, through libsodium's `randombytes_buf`
/// (`getrandom(2)` on Linux).
public struct SystemRandom: RandomByteSource, Sendable {
    public init() { Sodium.ensureInitialized() }

    public mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }
}

/// A reproducible stream of pseudo-random bytes from a 32-byte seed, for tests and fuzzing only:
/// the same seed always yields the same bytes. Block `i` of the stream is
/// `randombytes_buf_deterministic` (ChaCha20) keyed with SHA-256(seed ‖ i as 8 bytes LE); every
/// call to ``fill(_:)`` starts a new block.
public struct SeededRandom: RandomByteSource, Sendable {
    private let seed: [UInt8]
    private var counter: UInt64 = 0

    /// A stream from `seed`, which is hashed, so any length works.
    public init(seed: [UInt8]) {
        self.seed = seed
    }

    /// A stream from an integer seed (its 8 little-endian bytes).
    public init(seed: UInt64) {
        self.init(seed: withUnsafeBytes(of: seed.littleEndian) { Array($0) })
    }

    public mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        var hasher = SHA256()
        hasher.update(seed)
        hasher.update(withUnsafeBytes(of: counter.littleEndian) { Array($0) })
        counter &+= 1
        let blockSeed = hasher.finalize()
        blockSeed.withUnsafeBytes { key in
            randombytes_buf_deterministic(
                base, buffer.count, key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
    }
}
