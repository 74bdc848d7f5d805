import CSodium

/// Small internal helpers over libsodium used throughout the key model.
enum Sodium {
    /// `sodium_init` runs once, the first time anything here is used.
    static let isReady: Bool = sodium_init() >= 0

    static func ensureReady() {
        precondition(isReady, "libsodium failed to initialise")
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        ensureReady()
        var bytes = [UInt8](repeating: 0, count: count)
        if count > 0 { randombytes_buf(&bytes, count) }
        return bytes
    }

    static func sha256(_ data: [UInt8]) -> [UInt8] {
        ensureReady()
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        crypto_hash_sha256(&digest, data, UInt64(data.count))
        return digest
    }

    /// Constant-time equality for equal-length byte strings; lengths are not secret.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return sodium_memcmp(a, b, a.count) == 0
    }

    /// Ed25519 detached signature over `message` with a 64-byte libsodium secret key.
    static func sign(_ message: [UInt8], secretKey: KeysSecretBytes) -> [UInt8] {
        ensureReady()
        var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        secretKey.withUnsafeBytes { sk in
            _ = crypto_sign_detached(
                &signature, nil, message, UInt64(message.count),
                sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return signature
    }
}
