extension SPAKE2 {
    /// The password scalar w of one suite, with w·M and w·N computed once.
    ///
    /// RFC 9382 leaves the password → w mapping to the application. Ours
    /// (``init(deriving:context:suite:)``):
    ///
    ///     w = OS2IP( HKDF-SHA256(IKM = password, salt = "", info = context, L = 64) ) mod p
    ///
    /// where OS2IP reads the 64 bytes as a big-endian integer and p is the group order
    /// (edwards25519: L, reduced with `crypto_core_ed25519_scalar_reduce`; P-256: n, with
    /// `BN_nnmod`). 64 bytes is 256+ bits more than p, so the bias of the reduction is
    /// negligible (the RFC cites NIST SP 800-56A's 64 extra bits). `context` separates domains:
    /// callers pass the purpose and anything else both sides agree on, so the same code words
    /// give unrelated w in different flows. The code is low-entropy by design; SPAKE2 is what
    /// protects it (an attacker gets one online guess per exchange), so no slow hash is needed.
    ///
    /// A `Password` is password-equivalent: it is kept in ``SecretBytes`` and never prints.
    public struct Password: Sendable, CustomStringConvertible {
        /// The suite this scalar belongs to.
        public let suite: Suite
        /// w in the group's native scalar form.
        let scalar: SecretBytes
        /// w·M and w·N, encoded.
        let timesM: SecretBytes
        let timesN: SecretBytes

        /// Derives w from `password` (e.g. the code words' UTF-8) and a domain-separation
        /// `context`, as described above.
        public init(deriving password: some ReadableBytes, context: some ReadableBytes, suite: Suite) {
            let wide = HKDFSHA256.deriveKey(from: password, info: context, byteCount: 64)
            var scalar = wide.withUnsafeBytes { suite.group.scalar(reducingBigEndian: $0) }
            if suite.group.isZero(scalar) {
                // Probability about 2^-252; map to 1 rather than fail (any fixed choice works).
                scalar = ([1] as [UInt8]).withUnsafeBytes { suite.group.scalar(reducingBigEndian: $0) }
            }
            self.init(suite: suite, scalar: scalar)
        }

        /// Uses a ready-made w: 32 bytes big-endian, non-zero and below the group order
        /// (the form RFC 9382's test vectors give). Throws ``SPAKE2Error/invalidPasswordScalar``.
        public init(scalar bigEndian: some ReadableBytes, suite: Suite) throws(SPAKE2Error) {
            let scalar = try bigEndian.withReadableBytes { bytes throws(SPAKE2Error) in
                try suite.group.scalar(canonicalBigEndian: bytes)
            }
            self.init(suite: suite, scalar: scalar)
        }

        private init(suite: Suite, scalar: SecretBytes) {
            self.suite = suite
            self.scalar = scalar
            timesM = suite.group.multiply(suite.group.constantM, by: scalar)
            timesN = suite.group.multiply(suite.group.constantN, by: scalar)
        }

        public var description: String { "SPAKE2.Password(\(suite.name), redacted)" }
    }
}
