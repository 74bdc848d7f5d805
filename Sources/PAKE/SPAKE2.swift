/// RFC 9382 SPAKE2 with explicit key confirmation, as a consuming state machine.
///
/// ```swift
/// let password = SPAKE2.Password(deriving: codeBytes, context: purpose, suite: .edwards25519)
/// let started = SPAKE2(role: .a, password: password, identityA: joiner, identityB: attendant)
///     .start()                                          // → started.message: send it
/// let confirming = try started.receive(peerMessage)     // → confirming.confirmation: send it
/// let key = try confirming.finish(peerConfirmation: c)  // → Ke, only after the peer proved it
/// ```
///
/// Each step consumes its state (the types are `~Copyable`), so finishing twice or finishing
/// before starting does not compile, and a step that throws leaves nothing to retry with: one
/// exchange, one guess. The key is released only after the peer's confirmation verified.
///
/// Both sides must agree on the suite, the password, the identities (A's and B's, in that
/// order, whichever role is local) and the associated data; any difference makes the
/// confirmations fail on both sides.
public struct SPAKE2: ~Copyable, Sendable {
    /// What to do when the shared element K comes out as the identity.
    public enum IdentityResult: Sendable {
        /// Abort at once, as RFC 9382 says.
        case abort
        /// Go on with a random K, so that only the confirmation fails. A peer that publishes
        /// its message first and waits (the attendant of a short code) would otherwise be a
        /// free password oracle: `pA = w'·M` gives the identity exactly when the guess `w'` is
        /// right, and an immediate abort tells the prober so. With this, what the prober sees
        /// before confirming does not depend on the password (`docs/join-protocol.md`).
        case continueWithRandomKey
    }

    let role: Role
    let password: Password
    let identityA: [UInt8]
    let identityB: [UInt8]
    let additionalData: [UInt8]
    let identityResult: IdentityResult

    /// Prepares one exchange. `identityA`/`identityB` name the two parties (RFC 9382
    /// recommends non-empty ones unless implied by the application); `additionalData` (AAD)
    /// is bound into the confirmation keys.
    public init(
        role: Role, password: Password, identityA: [UInt8], identityB: [UInt8],
        additionalData: [UInt8] = [], identityResult: IdentityResult = .abort
    ) {
        self.identityResult = identityResult
        self.role = role
        self.password = password
        self.identityA = identityA
        self.identityB = identityB
        self.additionalData = additionalData
    }

    /// The suite of the password.
    public var suite: Suite { password.suite }

    /// Picks the secret x from `random` and computes our message (pA for A, pB for B).
    ///
    /// x is 64 bytes from `random` read big-endian and reduced mod the group order (a zero
    /// result draws again). To replay a known x (test vectors), supply 32 zero bytes followed by
    /// x big-endian.
    public consuming func start(using random: inout some RandomByteSource) -> AwaitingMessage {
        let group = suite.group
        var x: SecretBytes
        repeat {
            let wide = SecretBytes(randomCount: 64, using: &random)
            x = wide.withUnsafeBytes { group.scalar(reducingBigEndian: $0) }
        } while group.isZero(x)
        let blinding = role == .a ? password.timesM : password.timesN
        let message = group.blindedElement(x: x, blinding: blinding)
        return AwaitingMessage(exchange: self, x: x, message: message)
    }

    /// ``start(using:)`` with the system's random generator.
    public consuming func start() -> AwaitingMessage {
        var random = SystemRandom()
        return start(using: &random)
    }

    /// Our message is out; waiting for the peer's.
    public struct AwaitingMessage: ~Copyable, Sendable {
        private let exchange: SPAKE2
        private let x: SecretBytes
        /// Our message (pA or pB) to send to the peer.
        public let message: [UInt8]

        init(exchange: consuming SPAKE2, x: SecretBytes, message: [UInt8]) {
            self.exchange = exchange
            self.x = x
            self.message = message
        }

        /// The suite in use.
        public var suite: Suite { exchange.suite }

        /// Validates the peer's message and computes the shared secret, the key schedule and our
        /// confirmation. Throws (and ends the exchange) on a malformed, invalid or reflected
        /// message.
        public consuming func receive(_ peerMessage: [UInt8]) throws(SPAKE2Error) -> AwaitingConfirmation {
            let group = exchange.suite.group
            guard peerMessage != message else { throw .reflectedMessage }
            // The group checks the length, the encoding and the subgroup.
            let isA = exchange.role == .a
            let unblinding = isA ? exchange.password.timesN : exchange.password.timesM
            let shared: SecretBytes
            do {
                shared = try group.sharedElement(peer: peerMessage, unblinding: unblinding, x: x)
            } catch .identityElement
                where exchange.identityResult == .continueWithRandomKey && !group.encodesIdentity(peerMessage)
            {
                // The peer's element is valid and only the result is the identity: that depends
                // on the password, so it must look like any other wrong password.
                var random = SystemRandom()
                shared = SecretBytes(randomCount: peerMessage.count, using: &random)
            }
            let schedule = KeySchedule(
                identityA: exchange.identityA, identityB: exchange.identityB,
                messageA: isA ? message : peerMessage, messageB: isA ? peerMessage : message,
                sharedElement: shared, passwordScalar: group.bigEndianBytes(of: exchange.password.scalar),
                additionalData: exchange.additionalData)
            return AwaitingConfirmation(role: exchange.role, schedule: schedule)
        }
    }

    /// Our confirmation is ready; waiting for the peer's.
    public struct AwaitingConfirmation: ~Copyable, Sendable {
        private let role: Role
        let schedule: KeySchedule
        /// Our key confirmation (cA or cB) to send to the peer.
        public var confirmation: [UInt8] {
            (role == .a ? schedule.confirmationA : schedule.confirmationB).unredactedBytes()
        }

        init(role: Role, schedule: KeySchedule) {
            self.role = role
            self.schedule = schedule
        }

        /// Verifies the peer's confirmation in constant time and, only if it verifies, returns
        /// the session key Ke (16 bytes for these suites). Derive application keys from it with
        /// ``HKDFSHA256``.
        public consuming func finish(peerConfirmation: [UInt8]) throws(SPAKE2Error) -> SecretBytes {
            guard peerConfirmation.count == HMACSHA256.byteCount else {
                throw .wrongConfirmationLength(expected: HMACSHA256.byteCount, actual: peerConfirmation.count)
            }
            let expected = role == .a ? schedule.confirmationB : schedule.confirmationA
            guard expected.isEqual(toBytes: peerConfirmation) else { throw .confirmationMismatch }
            return schedule.sessionKey
        }
    }
}

/// RFC 9382 §3.3–§4: the transcript TT and everything derived from it.
struct KeySchedule: Sendable {
    /// TT = len(A) ‖ A ‖ len(B) ‖ B ‖ len(pA) ‖ pA ‖ len(pB) ‖ pB ‖ len(K) ‖ K ‖ len(w) ‖ w,
    /// lengths as 8-byte little-endian integers, w big-endian.
    let transcript: SecretBytes
    /// Ke ‖ Ka = SHA-256(TT).
    let sessionKey: SecretBytes
    let confirmationKey: SecretBytes
    /// KcA ‖ KcB = HKDF(ikm = Ka, salt = "", info = "ConfirmationKeys" ‖ AAD, L = 32).
    let confirmationKeyA: SecretBytes
    let confirmationKeyB: SecretBytes
    /// cA = HMAC(KcA, TT), cB = HMAC(KcB, TT). Secret until sent: a leaked expected value
    /// would let a man in the middle forge the peer's confirmation.
    let confirmationA: SecretBytes
    let confirmationB: SecretBytes
    /// Kept for tests against the RFC vectors.
    let sharedElement: SecretBytes

    static let confirmationKeysLabel = Array("ConfirmationKeys".utf8)

    init(
        identityA: [UInt8], identityB: [UInt8], messageA: [UInt8], messageB: [UInt8],
        sharedElement: SecretBytes, passwordScalar: SecretBytes, additionalData: [UInt8]
    ) {
        let parts: [any ReadableBytes] = [
            identityA, identityB, messageA, messageB, sharedElement, passwordScalar,
        ]
        var length = 0
        for part in parts { length += 8 + part.withReadableBytes { $0.count } }
        let transcript = SecretBytes(count: length) { out in
            var offset = 0
            for part in parts {
                part.withReadableBytes { bytes in
                    withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { prefix in
                        out.baseAddress!.advanced(by: offset).copyMemory(
                            from: prefix.baseAddress!, byteCount: 8)
                    }
                    offset += 8
                    if bytes.count > 0 {
                        out.baseAddress!.advanced(by: offset).copyMemory(
                            from: bytes.baseAddress!, byteCount: bytes.count)
                    }
                    offset += bytes.count
                }
            }
        }
        let digest = SecretBytes(count: SHA256.byteCount) { out in
            var hasher = SHA256()
            hasher.update(transcript)
            hasher.finalize(into: out)
        }
        let confirmationKey = digest.slice(16..<32)
        let keys = HKDFSHA256.deriveKey(
            from: confirmationKey, info: Self.confirmationKeysLabel + additionalData, byteCount: 32)
        let confirmationKeyA = keys.prefix(16)
        let confirmationKeyB = keys.slice(16..<32)
        self.transcript = transcript
        self.sessionKey = digest.prefix(16)
        self.confirmationKey = confirmationKey
        self.confirmationKeyA = confirmationKeyA
        self.confirmationKeyB = confirmationKeyB
        self.confirmationA = SecretBytes(count: HMACSHA256.byteCount) { out in
            transcript.withUnsafeBytes { tt in
                confirmationKeyA.withUnsafeBytes { HMACSHA256.compute(message: tt, key: $0, into: out) }
            }
        }
        self.confirmationB = SecretBytes(count: HMACSHA256.byteCount) { out in
            transcript.withUnsafeBytes { tt in
                confirmationKeyB.withUnsafeBytes { HMACSHA256.compute(message: tt, key: $0, into: out) }
            }
        }
        self.sharedElement = sharedElement
    }
}
