/// SPAKE2 and the small crypto toolkit the rest of Eleven builds on. No I/O: every type here is
/// a value or a consuming state machine; randomness is injected.
///
/// - ``SPAKE2``: RFC 9382 with key confirmation, suites ``SPAKE2/Suite/edwards25519``
///   (libsodium) and ``SPAKE2/Suite/p256`` (OpenSSL). `SPAKE2(...)` → `start()` →
///   `receive(_:)` → `finish(peerConfirmation:)`; ``SPAKE2/Password`` turns a code plus a
///   domain-separation context into the scalar w.
/// - ``WormholeSPAKE2``: python-spake2's symmetric SPAKE2 (Magic Wormhole), `start()` →
///   `finish(_:)`; ``WormholeKeys`` derives Magic Wormhole's phase keys and verifier.
/// - ``SecretBytes`` (redacted, constant-time `==`, zeroed on drop), ``RandomByteSource``
///   with ``SystemRandom`` and ``SeededRandom``, ``SHA256``, ``HMACSHA256``, ``HKDFSHA256``
///   (OpenSSL `EVP_KDF`), and the ``Sodium/ensureInitialized()`` guard.
/// - ``SPAKE2Error``: every way an exchange can refuse the peer, with stable codes.
public enum PAKEModule {}
