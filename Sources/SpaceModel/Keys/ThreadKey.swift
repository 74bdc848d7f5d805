import CSodium
import PAKE

/// The 32-byte symmetric key of one thread; messages are XChaCha20-Poly1305 ciphertexts under it.
/// Redacted when printed, compared in constant time, wiped when dropped.
public struct ThreadKey: Sendable, Equatable {
    public static var byteCount: Int { Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES) }

    let secret: SecretBytes

    /// A fresh random thread key.
    public static func random() -> ThreadKey {
        ThreadKey(trusted: SecretBytes.random(count: byteCount))
    }

    /// Adopts secret bytes as a thread key (for example a key from an invite payload).
    public init(secret: SecretBytes) throws(KeyModelError) {
        guard secret.count == Self.byteCount else {
            throw KeyModelError(.invalidLength, "A thread key has 32 bytes, not \(secret.count).")
        }
        self.secret = secret
    }

    init(trusted secret: SecretBytes) {
        self.secret = secret
    }

    /// The key bytes as secret storage, for sealing into invite payloads or at-rest files.
    public var secretBytes: SecretBytes { secret }

    public static func == (lhs: ThreadKey, rhs: ThreadKey) -> Bool {
        lhs.secret == rhs.secret
    }
}

extension ThreadKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "ThreadKey(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
