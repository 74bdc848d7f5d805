/// The SPAKE2 of Magic Wormhole: python-spake2 0.9 `SPAKE2_Symmetric` on edwards25519,
/// byte-compatible with it (and with gospake2 and magic-wormhole.rs).
///
/// Not RFC 9382: both sides run the same code with one blinding constant S, the message is
/// `'S' ‖ X*` (33 bytes), there is no key confirmation, and the result is a 32-byte key that
/// Magic Wormhole confirms implicitly (the first peer message that decrypts). See
/// `spake2-math.md` Part A.
///
/// ```swift
/// let started = WormholeSPAKE2(password: Array(code.utf8), identity: Array(appID.utf8)).start()
/// send(started.message)
/// let key = try started.finish(peerMessage)   // 32 bytes; derive phase keys with WormholeKeys
/// ```
public struct WormholeSPAKE2: ~Copyable, Sendable {
    /// The side byte python-spake2 puts in front of a symmetric message.
    public static let sideByte: UInt8 = 0x53
    /// The wire length of a message: side byte + 32-byte point.
    public static let messageByteCount = 33

    /// python-spake2's S: `arbitrary_element(b"symmetric")` (`PAKETests` re-derives it).
    static let constantS = [UInt8](
        constantHex: "6f00dae87c1be1a73b5922ef431cd8f57879569c222d22b1cd71e8546ab8e6f1")
    static let passwordInfo = Array("SPAKE2 pw".utf8)

    let passwordScalar: SecretBytes
    let passwordTimesS: SecretBytes
    let passwordHash: SecretBytes
    let identityHash: [UInt8]

    /// Prepares one exchange. `password` is the code's bytes (Magic Wormhole: the NFC-normalised
    /// UTF-8 code, e.g. `7-guitarist-revenge`); `identity` is python-spake2's `idSymmetric`
    /// (Magic Wormhole: the AppID).
    public init(password: some ReadableBytes, identity: some ReadableBytes) {
        passwordScalar = Self.passwordScalar(password)
        passwordTimesS = Edwards25519Group.multiply(Self.constantS, by: passwordScalar)
        passwordHash = SecretBytes(count: SHA256.byteCount) { out in
            var hasher = SHA256()
            hasher.update(password)
            hasher.finalize(into: out)
        }
        identityHash = SHA256.hash(identity)
    }

    /// python-spake2's `password_to_scalar`: HKDF-SHA256(password, salt "", info "SPAKE2 pw",
    /// 48 bytes) read big-endian, mod L.
    static func passwordScalar(_ password: some ReadableBytes) -> SecretBytes {
        let wide = HKDFSHA256.deriveKey(from: password, info: passwordInfo, byteCount: 48)
        return wide.withUnsafeBytes { Edwards25519Group.scalar(reducingBigEndian: $0) }
    }

    /// Picks x (64 bytes from `random`, read big-endian, mod L: the way python-spake2 reads
    /// its entropy, so its test vectors replay) and computes `'S' ‖ x·B + w·S`.
    public consuming func start(using random: inout some RandomByteSource) -> AwaitingMessage {
        var x: SecretBytes
        repeat {
            let wide = SecretBytes(randomCount: 64, using: &random)
            x = wide.withUnsafeBytes { Edwards25519Group.scalar(reducingBigEndian: $0) }
        } while Edwards25519Group.isZero(x)
        let element = Edwards25519Group.blindedElement(x: x, blinding: passwordTimesS)
        return AwaitingMessage(exchange: self, x: x, element: element)
    }

    /// ``start(using:)`` with the system's random generator.
    public consuming func start() -> AwaitingMessage {
        var random = SystemRandom()
        return start(using: &random)
    }

    /// Our message is out; waiting for the peer's.
    public struct AwaitingMessage: ~Copyable, Sendable {
        private let exchange: WormholeSPAKE2
        private let x: SecretBytes
        private let element: [UInt8]

        init(exchange: consuming WormholeSPAKE2, x: SecretBytes, element: [UInt8]) {
            self.exchange = exchange
            self.x = x
            self.element = element
        }

        /// Our 33-byte message to send (Magic Wormhole: hex in `{"pake_v1": …}`).
        public var message: [UInt8] { [WormholeSPAKE2.sideByte] + element }

        /// Validates the peer's message and returns the 32-byte shared key:
        /// SHA256(SHA256(pw) ‖ SHA256(id) ‖ min(X*, Y*) ‖ max(X*, Y*) ‖ K), K = x·(Y* − w·S).
        public consuming func finish(_ peerMessage: [UInt8]) throws(SPAKE2Error) -> SecretBytes {
            guard peerMessage.count == WormholeSPAKE2.messageByteCount else {
                throw .wrongMessageLength(
                    expected: WormholeSPAKE2.messageByteCount, actual: peerMessage.count)
            }
            guard peerMessage[0] == WormholeSPAKE2.sideByte else { throw .unexpectedSideByte(peerMessage[0]) }
            let peerElement = Array(peerMessage[1...])
            guard peerElement != element else { throw .reflectedMessage }
            let shared = try Edwards25519Group.sharedElement(
                peer: peerElement, unblinding: exchange.passwordTimesS, scalar: x, cofactor: false)
            return WormholeSPAKE2.sharedKey(
                passwordHash: exchange.passwordHash, identityHash: exchange.identityHash,
                elements: (element, peerElement), sharedElement: shared)
        }
    }

    /// The transcript hash; the two elements are sorted bytewise, so both sides agree.
    static func sharedKey(
        passwordHash: SecretBytes, identityHash: [UInt8], elements: ([UInt8], [UInt8]),
        sharedElement: SecretBytes
    ) -> SecretBytes {
        let (first, second) =
            elements.0.lexicographicallyPrecedes(elements.1) ? elements : (elements.1, elements.0)
        return SecretBytes(count: SHA256.byteCount) { out in
            var hasher = SHA256()
            hasher.update(passwordHash)
            hasher.update(identityHash)
            hasher.update(first)
            hasher.update(second)
            hasher.update(sharedElement)
            hasher.finalize(into: out)
        }
    }
}

/// Magic Wormhole's key derivations from the SPAKE2 key (`wormhole-protocol.md` §12.4):
/// HKDF-SHA256 with no salt and the purpose as info.
public enum WormholeKeys {
    static let phasePrefix = Array("wormhole:phase:".utf8)
    static let verifierPurpose = Array("wormhole:verifier".utf8)

    /// `derive_key(key, purpose, length)`.
    public static func deriveKey(
        from key: SecretBytes, purpose: some ReadableBytes, byteCount: Int = 32
    ) -> SecretBytes {
        HKDFSHA256.deriveKey(from: key, info: purpose, byteCount: byteCount)
    }

    /// The SecretBox key for messages that `side` sends in `phase`:
    /// `derive_key(key, "wormhole:phase:" ‖ SHA256(side) ‖ SHA256(phase))`.
    public static func phaseKey(from key: SecretBytes, side: String, phase: String) -> SecretBytes {
        let info = phasePrefix + SHA256.hash(Array(side.utf8)) + SHA256.hash(Array(phase.utf8))
        return deriveKey(from: key, purpose: info)
    }

    /// The verifier both sides can compare out of band: `derive_key(key, "wormhole:verifier")`.
    public static func verifier(from key: SecretBytes) -> SecretBytes {
        deriveKey(from: key, purpose: verifierPurpose)
    }
}
