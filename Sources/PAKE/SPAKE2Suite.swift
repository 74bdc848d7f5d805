extension SPAKE2 {
    /// The RFC 9382 ciphersuites this module implements. Both use SHA-256, HKDF-SHA256 and
    /// HMAC-SHA256; they differ in the group.
    public enum Suite: Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// `SPAKE2-edwards25519-SHA256-HKDF-HMAC` (libsodium). Eleven's own flows use this one.
        case edwards25519
        /// `SPAKE2-P256-SHA256-HKDF-HMAC` (OpenSSL). The suite of the RFC's test vectors.
        case p256

        /// The RFC 9382 suite name.
        public var name: String {
            switch self {
            case .edwards25519: "SPAKE2-edwards25519-SHA256-HKDF-HMAC"
            case .p256: "SPAKE2-P256-SHA256-HKDF-HMAC"
            }
        }

        public var description: String { name }

        /// The length of the messages `start` produces and `receive` expects.
        public var messageByteCount: Int { group.elementByteCount }

        /// The length of a key confirmation (HMAC-SHA256).
        public var confirmationByteCount: Int { HMACSHA256.byteCount }

        /// The length of the session key Ke (half of SHA-256).
        public var sessionKeyByteCount: Int { SHA256.byteCount / 2 }

        var group: any SPAKE2Group.Type {
            switch self {
            case .edwards25519: Edwards25519Group.self
            case .p256: P256Group.self
            }
        }
    }

    /// Which side of the asymmetric exchange this is. A blinds with M, B with N; the two sides
    /// must take different roles. In Eleven the joiner is A and the attendant B.
    public enum Role: Sendable, Hashable {
        case a
        case b
    }
}
