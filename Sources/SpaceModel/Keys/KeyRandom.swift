import CSodium
import PAKE

extension SecretBytes {
    /// `count` secret bytes from the operating system's secure random source.
    package static func random(count: Int) -> SecretBytes {
        var random = SystemRandom()
        return SecretBytes(randomCount: count, using: &random)
    }

    /// `count` non-secret random bytes (ids, nonces, challenges) from the system source.
    package static func randomBytes(_ count: Int) -> [UInt8] {
        var random = SystemRandom()
        return random.bytes(count: count)
    }
}

extension DeviceIdentity {
    /// Ed25519 detached signature over `message` with this device's signing key.
    func signature(over message: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        signingSecret.withUnsafeBytes { sk in
            _ = crypto_sign_detached(
                &signature, nil, message, UInt64(message.count),
                sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return signature
    }
}

/// Overwrites `bytes` with zeros in a way the compiler cannot drop (`sodium_memzero`).
package func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
        if let base = buffer.baseAddress { sodium_memzero(base, buffer.count) }
    }
}
