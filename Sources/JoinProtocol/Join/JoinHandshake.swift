import CSodium
import PAKE
import Support

/// What a short code is for. Bound into the key agreement, so a code minted for one purpose is
/// useless for another.
public enum JoinIntent: String, Sendable, Codable {
    case join
    case linkDevice = "link-device"

    /// The relay AppID of each intent.
    public var appID: String {
        switch self {
        case .join: "elevenmessenger.com/join/v1"
        case .linkDevice: "elevenmessenger.com/link/v1"
        }
    }
}

/// Everything both sides must agree on besides the words (`docs/join-protocol.md`).
public struct JoinBinding: Sendable, Equatable {
    public let intent: JoinIntent
    public let appID: String
    public let nameplate: Rendezvous.Nameplate

    public init(intent: JoinIntent, nameplate: Rendezvous.Nameplate, appID: String? = nil) {
        self.intent = intent
        self.nameplate = nameplate
        self.appID = appID ?? intent.appID
    }

    static let identityA = Array("eleven joiner".utf8)
    static let identityB = Array("eleven attendant".utf8)

    /// HKDF info for the password scalar: separates intents and AppIDs.
    var passwordContext: [UInt8] {
        Array("eleven/spake2/w/v1".utf8) + lengthPrefixed(intent.rawValue) + lengthPrefixed(appID)
    }

    /// The SPAKE2 AAD: intent, AppID and nameplate.
    var additionalData: [UInt8] {
        Array("eleven/v1".utf8) + lengthPrefixed(intent.rawValue) + lengthPrefixed(appID)
            + lengthPrefixed(nameplate.value)
    }

    private func lengthPrefixed(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        var length = UInt64(bytes.count).littleEndian
        return withUnsafeBytes(of: &length) { Array($0) } + bytes
    }
}

/// The mailbox phases of the join protocol.
extension Rendezvous.Phase {
    public static let confirm = Rendezvous.Phase("confirm")
    public static let request = Rendezvous.Phase("request")
    /// The verification words' exchange (``ShortAuthenticationString``): the joiner's commitment,
    /// the attendant's nonce, the joiner's reveal.
    public static let commit = Rendezvous.Phase("commit")
    public static let nonce = Rendezvous.Phase("nonce")
    public static let reveal = Rendezvous.Phase("reveal")
    public static let grant = Rendezvous.Phase("grant")
    public static let refusal = Rendezvous.Phase("refusal")
    public static func status(_ n: Int) -> Rendezvous.Phase { Rendezvous.Phase("status-\(n)") }
    /// Whether this is one of the attendant's ``status(_:)`` phases.
    public var isStatus: Bool { value.hasPrefix("status-") }
    /// Whether this is an attendant's message the joiner must answer before the join goes on
    /// (its confirmation, its nonce): the joiner's answer proves it reached the mailbox.
    public var isAnsweredByJoiner: Bool { self == .confirm || self == .nonce }
}

/// Why a join's key agreement failed. None of these carries secret material.
public enum JoinHandshakeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The confirmations did not match: a different code, or someone guessing.
    case codeMismatch
    /// The peer's SPAKE2 message was invalid (wrong length, not a valid point, reflected, …).
    case invalidPeerMessage(SPAKE2Error)
    /// A message arrived that the protocol does not allow at this point.
    case outOfOrder(String)
    /// A message's framing or version is not one we understand.
    case badMessage(String)

    public var code: String {
        switch self {
        case .codeMismatch: "join_code_mismatch"
        case .invalidPeerMessage(let e): e.code
        case .outOfOrder: "join_out_of_order"
        case .badMessage: "join_bad_message"
        }
    }

    public var description: String {
        switch self {
        case .codeMismatch: "the code did not match"
        case .invalidPeerMessage(let e): "the other side sent an invalid key-agreement message (\(e.code))"
        case .outOfOrder(let what): "unexpected message: \(what)"
        case .badMessage(let what): "unreadable message: \(what)"
        }
    }
}

/// The key agreement of a join (RFC 9382 SPAKE2-edwards25519 with confirmation), as a pure
/// state machine over mailbox phases. The joiner is A, the attendant B.
///
/// Joiner: `init` → send `pake`; on the attendant's `pake` → send `confirm`; on the attendant's
/// `confirm` → ``channel`` is ready. Attendant: `init` → send `pake`; on the joiner's `pake`
/// nothing; on the joiner's `confirm` → verified, send our `confirm`, ``channel`` is ready. The
/// attendant therefore never reveals its confirmation to a wrong guess.
public struct JoinHandshake: ~Copyable {
    public enum Role: Sendable, Equatable {
        case joiner, attendant
    }

    static let version: UInt8 = 1

    public let role: Role
    public let binding: JoinBinding
    /// Our first message, to send as phase `pake` as soon as the mailbox is open.
    public let firstMessage: [UInt8]
    private var awaitingMessage: SPAKE2.AwaitingMessage?
    private var awaitingConfirmation: SPAKE2.AwaitingConfirmation?
    /// The encrypted channel, once both confirmations verified.
    public private(set) var channel: JoinChannel?
    private var finished = false

    /// Starts a handshake for `words` (the code's words, canonical, joined by `-`).
    public init(
        role: Role, words: String, binding: JoinBinding, using random: inout some RandomByteSource
    ) {
        self.role = role
        self.binding = binding
        let password =
            role == .attendant
            ? Self.attendantPassword(words: words, context: binding.passwordContext)
            : SPAKE2.Password(
                deriving: Array(words.utf8), context: binding.passwordContext, suite: .edwards25519)
        let exchange = SPAKE2(
            role: role == .joiner ? .a : .b, password: password, identityA: JoinBinding.identityA,
            identityB: JoinBinding.identityB, additionalData: binding.additionalData,
            // Before the confirmation nothing may depend on the code: see IdentityResult.
            identityResult: .continueWithRandomKey)
        let started = exchange.start(using: &random)
        firstMessage = [Self.version] + started.message
        awaitingMessage = .some(started)
    }

    /// The attendant's SPAKE2 passwords by code words and context. An attendant serving one code
    /// again and again (every use of a multi-use invite is a fresh exchange with the same words)
    /// derives w, w·M and w·N once instead of two scalar multiplications per use. Each exchange
    /// still draws its own secret x. Held in memory only, like the words themselves; keyed by
    /// their hash; bounded.
    private static let attendantPasswords = Locked<[[UInt8]: SPAKE2.Password]>([:])
    static let attendantPasswordCacheSize = 1024

    static func attendantPassword(words: String, context: [UInt8]) -> SPAKE2.Password {
        var keyInput = Array("eleven/spake2/cache".utf8)
        keyInput += withUnsafeBytes(of: UInt32(context.count).bigEndian) { Array($0) } + context
        keyInput += Array(words.utf8)
        let key = SHA256.hash(keyInput)
        keyInput.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
        if let cached = attendantPasswords.withLock({ $0[key] }) { return cached }
        let password = SPAKE2.Password(deriving: Array(words.utf8), context: context, suite: .edwards25519)
        attendantPasswords.withLock { cache in
            if cache.count >= attendantPasswordCacheSize { cache.removeAll() }
            cache[key] = password
        }
        return password
    }

    /// Whether the channel is ready.
    public var isConfirmed: Bool { channel != nil }

    /// Feeds a peer message of phase `pake` or `confirm`; returns what to send (phase, body).
    /// Any error ends the handshake: for the attendant it burns the code.
    public mutating func receive(phase: Rendezvous.Phase, body: [UInt8]) throws(JoinHandshakeError)
        -> [(Rendezvous.Phase, [UInt8])]
    {
        guard !finished else { throw .outOfOrder("a \(phase) message after the handshake ended") }
        do {
            switch phase {
            case .pake:
                guard let started = awaitingMessage.take() else {
                    throw JoinHandshakeError.outOfOrder("a second key-agreement message")
                }
                let peer = try unframe(body, expectedCount: 32)
                let confirming: SPAKE2.AwaitingConfirmation
                do {
                    confirming = try started.receive(peer)
                } catch {
                    throw JoinHandshakeError.invalidPeerMessage(error)
                }
                let ours = confirming.confirmation
                awaitingConfirmation = consume confirming
                return role == .joiner ? [(.confirm, [Self.version] + ours)] : []
            case .confirm:
                guard let confirming = awaitingConfirmation.take() else {
                    throw JoinHandshakeError.outOfOrder("a confirmation before the key-agreement message")
                }
                let peer = try unframe(body, expectedCount: 32)
                let ours = confirming.confirmation
                let key: SecretBytes
                do {
                    key = try confirming.finish(peerConfirmation: peer)
                } catch .confirmationMismatch {
                    throw JoinHandshakeError.codeMismatch
                } catch {
                    throw JoinHandshakeError.invalidPeerMessage(error)
                }
                channel = JoinChannel(sessionKey: key, role: role)
                finished = true
                return role == .attendant ? [(.confirm, [Self.version] + ours)] : []
            default:
                throw JoinHandshakeError.outOfOrder("'\(phase)' before the code was confirmed")
            }
        } catch let error as JoinHandshakeError {
            finished = true
            awaitingMessage = nil
            awaitingConfirmation = nil
            throw error
        } catch {
            finished = true
            throw .badMessage("unexpected failure")
        }
    }

    private func unframe(_ body: [UInt8], expectedCount: Int) throws(JoinHandshakeError) -> [UInt8] {
        guard let first = body.first else { throw .badMessage("an empty message") }
        guard first == Self.version else { throw .badMessage("protocol version \(first) is not supported") }
        guard body.count == expectedCount + 1 else {
            throw .badMessage("a message of \(body.count) bytes where \(expectedCount + 1) were expected")
        }
        return Array(body.dropFirst())
    }
}
