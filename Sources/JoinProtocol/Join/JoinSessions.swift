import PAKE

/// Why a join ended without a membership.
public enum JoinFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The code did not match (or someone guessed wrong). The code is burned.
    case codeMismatch
    /// The other side broke the protocol; the code is burned.
    case protocolError(String)
    /// The attendant left a notice instead of a key-agreement message: the invite expired, was
    /// used up or was burned. No guess was possible.
    case inviteEnded(InviteEnd)

    public var code: String {
        switch self {
        case .codeMismatch: "code_mismatch"
        case .protocolError: "protocol_error"
        case .inviteEnded(let end): end.code
        }
    }

    /// The mood to close the mailbox with.
    public var mood: Rendezvous.Mood {
        switch self {
        case .codeMismatch: .scary
        case .protocolError: .errory
        case .inviteEnded: .lonely
        }
    }

    public var description: String {
        switch self {
        case .codeMismatch: "That code didn't match. Codes work once: ask for a new one."
        case .protocolError(let why): "The join failed: \(why)."
        case .inviteEnded(let end): end.message
        }
    }

    init(_ error: JoinHandshakeError) {
        self = error == .codeMismatch ? .codeMismatch : .protocolError(error.description)
    }
}

extension Rendezvous.Phase {
    /// Unauthenticated notice from the attendant that the confirmation failed.
    public static let abort = Rendezvous.Phase("abort")
}

/// Holds peer messages that arrived before the message they follow (a relay may deliver a
/// mailbox in any order, and a reconnect replays it), and hands them back once their turn came,
/// as Magic Wormhole's "order" machine does. Each phase is kept once; the buffer is bounded.
struct JoinInbox {
    private var held: [(Rendezvous.Phase, [UInt8])] = []
    static let capacity = 16

    /// Keeps a message for later; false when the buffer is full (a flooding peer).
    mutating func hold(_ phase: Rendezvous.Phase, _ body: [UInt8]) -> Bool {
        guard !held.contains(where: { $0.0 == phase }) else { return true }
        guard held.count < Self.capacity else { return false }
        held.append((phase, body))
        return true
    }

    /// Whether a message of `phase` may be handled now: the key-agreement message (and the
    /// unauthenticated notices) at once, the confirmation after it, the `reveal` (attendant) and
    /// the `grant` (joiner) once the nonces were exchanged, the rest once confirmed.
    static func isReady(
        _ phase: Rendezvous.Phase, pakeReceived: Bool, confirmed: Bool, noncesExchanged: Bool
    ) -> Bool {
        switch phase {
        case .pake, .abort: true
        case .confirm: pakeReceived
        case .reveal, .grant: noncesExchanged
        default: confirmed
        }
    }

    /// Removes and returns the held messages `ready` now accepts, oldest first.
    mutating func release(where ready: (Rendezvous.Phase) -> Bool) -> [(Rendezvous.Phase, [UInt8])] {
        let out = held.filter { ready($0.0) }
        held.removeAll { ready($0.0) }
        return out
    }
}

/// The joiner's side of a join as a pure state machine: feed it the peer's mailbox messages,
/// send what it returns. Ends with `.granted`, `.refused` or `.failed`.
public struct JoinerSession: ~Copyable {
    public enum Output: Equatable, Sendable {
        case send(Rendezvous.Phase, [UInt8])
        /// Our confirmation goes out next: from then on whoever answered in the mailbox can test
        /// one guess of the code against it. Record the attempt durably before sending.
        case codeSent
        /// The attendant's confirmation verified: the attempt checked out (whatever follows).
        case codeProven
        /// Both confirmations verified and the nonces exchanged: `sas` is shown as words
        /// (``VerificationWords``), for the person to compare with the inviter's.
        case codeAccepted(sas: [UInt8])
        case status(JoinStatus)
        case granted(object: [UInt8])
        case refused(reason: String, message: String)
        case failed(JoinFailure)
    }

    private var handshake: JoinHandshake
    private let request: JoinRequest
    private var inbox = JoinInbox()
    private var pakeReceived = false
    /// Our nonce nA, committed to after the confirmations and revealed once the attendant's
    /// nonce came. Drawn here, from the same source as the key agreement, so a resumed joiner
    /// (`PendingJoin`) reveals the nonce it committed to.
    private let nonce: SecretBytes
    /// The attendant's nonce arrived and ours was revealed.
    private var noncesExchanged = false
    public private(set) var isFinished = false

    public init(
        words: String, binding: JoinBinding, request: JoinRequest,
        using random: inout some RandomByteSource
    ) {
        handshake = JoinHandshake(role: .joiner, words: words, binding: binding, using: &random)
        nonce = SecretBytes(randomCount: ShortAuthenticationString.nonceByteCount, using: &random)
        self.request = request
    }

    /// What to send as soon as the mailbox is open.
    public var start: [Output] { [.send(.pake, handshake.firstMessage)] }

    public mutating func handle(
        phase: Rendezvous.Phase, body: [UInt8], using random: inout some RandomByteSource
    ) -> [Output] {
        guard !isFinished else { return [] }
        // Before the confirmation the attendant may also leave the notice in a mailbox it
        // already spoke in (an inviter who stopped attending); once confirmed, it would refuse
        // through the channel instead.
        if phase == .ended && handshake.channel == nil {
            return finish(.failed(.inviteEnded(InviteEnd(notice: body))))
        }
        guard
            JoinInbox.isReady(
                phase, pakeReceived: pakeReceived, confirmed: handshake.channel != nil,
                noncesExchanged: noncesExchanged)
        else {
            // Early: keep it for its turn (the confirm before the key-agreement message, the
            // answer before our own confirmation verified).
            guard Self.isExpected(phase) else { return [] }
            guard inbox.hold(phase, body) else { return finish(.failed(.protocolError("too many messages"))) }
            return []
        }
        var out = step(phase: phase, body: body, using: &random)
        // Whatever waited for this message may go now.
        while !isFinished {
            let (pake, confirmed, exchanged) = (pakeReceived, handshake.channel != nil, noncesExchanged)
            let ready = inbox.release {
                JoinInbox.isReady($0, pakeReceived: pake, confirmed: confirmed, noncesExchanged: exchanged)
            }
            if ready.isEmpty { break }
            for (p, b) in ready where !isFinished { out += step(phase: p, body: b, using: &random) }
        }
        return out
    }

    /// Phases the joiner acts on; anything else from the peer is ignored.
    private static func isExpected(_ phase: Rendezvous.Phase) -> Bool {
        phase == .pake || phase == .confirm || phase == .nonce || phase == .grant || phase == .refusal
            || phase.isStatus
    }

    private mutating func step(
        phase: Rendezvous.Phase, body: [UInt8], using random: inout some RandomByteSource
    ) -> [Output] {
        guard let channel = handshake.channel else {
            if phase == .abort { return finish(.failed(.codeMismatch)) }
            guard phase == .pake || phase == .confirm else { return [] }
            if phase == .pake { pakeReceived = true }
            do {
                var out: [Output] = []
                for (phase, body) in try handshake.receive(phase: phase, body: body) {
                    if phase == .confirm { out.append(.codeSent) }
                    out.append(.send(phase, body))
                }
                if let channel = handshake.channel {
                    out.append(.codeProven)
                    // Commit to our nonce before anything of the attendant's words is known;
                    // the request travels with the commitment.
                    let commitment = ShortAuthenticationString.commitment(to: nonce)
                    out.append(
                        .send(
                            .commit,
                            channel.seal(
                                ShortAuthenticationString.frame(commitment), phase: .commit, using: &random)
                        ))
                    let sealed = channel.seal(
                        JoinMessage.request(request).encoded(), phase: .request, using: &random)
                    out.append(.send(.request, sealed))
                }
                return out
            } catch {
                return finish(.failed(JoinFailure(error)))
            }
        }
        if phase == .nonce {
            guard !noncesExchanged else { return [] }
            do {
                let theirs = try ShortAuthenticationString.unframe(try channel.open(body, phase: .nonce))
                noncesExchanged = true
                let sas = ShortAuthenticationString.derive(
                    verifier: channel.verifier, joinerNonce: nonce, attendantNonce: theirs)
                let reveal = channel.seal(
                    ShortAuthenticationString.frame(nonce.unredactedBytes()), phase: .reveal, using: &random)
                return [.send(.reveal, reveal), .codeAccepted(sas: sas)]
            } catch {
                return finish(.failed(JoinFailure(error)))
            }
        }
        let allowed: Set<String>
        switch phase {
        case .grant: allowed = ["grant"]
        case .refusal: allowed = ["refusal"]
        default:
            guard phase.isStatus else { return [] }
            allowed = ["status"]
        }
        do {
            switch try JoinMessage(decoding: try channel.open(body, phase: phase), allowed: allowed) {
            case .status(let status): return [.status(status)]
            case .grant(let object): return finish(.granted(object: object))
            case .refusal(let reason, let message): return finish(.refused(reason: reason, message: message))
            case .request: return finish(.failed(.protocolError("an unexpected request")))
            }
        } catch {
            return finish(.failed(JoinFailure(error)))
        }
    }

    private mutating func finish(_ output: Output) -> [Output] {
        isFinished = true
        return [output]
    }
}

/// The attendant's side (the inviter's client or the bot): verifies the joiner's code, then
/// hands the request to whoever decides, and sends the grant or the refusal.
public struct AttendantSession: ~Copyable {
    public enum Output: Equatable, Sendable {
        case send(Rendezvous.Phase, [UInt8])
        /// The joiner proved the code and opened its commitment: show `sas` as words
        /// (``VerificationWords``), decide, then call `approve` or `refuse`.
        case requestReceived(JoinRequest, sas: [UInt8])
        /// The code is burned (wrong code or a protocol violation); tell the inviter.
        case burned(JoinFailure)
    }

    private var handshake: JoinHandshake
    private let inviterName: String?
    private let announceWaiting: Bool
    private var statusCount = 0
    private var inbox = JoinInbox()
    private var pakeReceived = false
    /// Our nonce nB, sent once the joiner committed to its own.
    private let nonce: [UInt8]
    /// The joiner's commitment to its nonce, once it came (and ours was sent).
    private var commitment: [UInt8]?
    private var noncesExchanged: Bool { commitment != nil }
    /// The joiner's request, held until the reveal verified.
    private var receivedRequest: JoinRequest?
    /// The words' bytes, once the joiner's reveal opened its commitment.
    private var sas: [UInt8]?
    /// The request, once the code is proven and the words are known: decide on it.
    public private(set) var pendingRequest: JoinRequest?
    public private(set) var isFinished = false

    /// `announceWaiting`: tell the joiner a person is deciding (human attendants; a bot answers
    /// at once and need not).
    public init(
        words: String, binding: JoinBinding, inviterName: String?, announceWaiting: Bool,
        using random: inout some RandomByteSource
    ) {
        handshake = JoinHandshake(role: .attendant, words: words, binding: binding, using: &random)
        nonce = random.bytes(count: ShortAuthenticationString.nonceByteCount)
        self.inviterName = inviterName
        self.announceWaiting = announceWaiting
    }

    /// What to send as soon as the mailbox is open (before any joiner exists).
    public var start: [Output] { [.send(.pake, handshake.firstMessage)] }

    public mutating func handle(
        phase: Rendezvous.Phase, body: [UInt8], using random: inout some RandomByteSource
    ) -> [Output] {
        guard !isFinished else { return [] }
        guard Self.isExpected(phase) else {
            // Nothing else may come from a joiner, before or after the code is proven.
            return handshake.channel == nil ? burn(.protocolError("'\(phase)' from the joiner")) : []
        }
        guard
            JoinInbox.isReady(
                phase, pakeReceived: pakeReceived, confirmed: handshake.channel != nil,
                noncesExchanged: noncesExchanged)
        else {
            guard inbox.hold(phase, body) else { return burn(.protocolError("too many messages")) }
            return []
        }
        var out = step(phase: phase, body: body, using: &random)
        while !isFinished {
            let (pake, confirmed, exchanged) = (pakeReceived, handshake.channel != nil, noncesExchanged)
            let ready = inbox.release {
                JoinInbox.isReady($0, pakeReceived: pake, confirmed: confirmed, noncesExchanged: exchanged)
            }
            if ready.isEmpty { break }
            for (p, b) in ready where !isFinished { out += step(phase: p, body: b, using: &random) }
        }
        return out
    }

    /// Phases a joiner may send.
    private static func isExpected(_ phase: Rendezvous.Phase) -> Bool {
        phase == .pake || phase == .confirm || phase == .commit || phase == .request || phase == .reveal
    }

    private mutating func step(
        phase: Rendezvous.Phase, body: [UInt8], using random: inout some RandomByteSource
    ) -> [Output] {
        guard let channel = handshake.channel else {
            if phase == .pake { pakeReceived = true }
            do {
                return try handshake.receive(phase: phase, body: body).map { Output.send($0.0, $0.1) }
            } catch {
                return burn(JoinFailure(error))
            }
        }
        do {
            var out: [Output] = []
            switch phase {
            case .commit:
                guard commitment == nil else { return [] }
                commitment = try ShortAuthenticationString.unframe(try channel.open(body, phase: .commit))
                // Our nonce only now: the joiner is bound to its own before it sees ours.
                let sealed = channel.seal(
                    ShortAuthenticationString.frame(nonce), phase: .nonce, using: &random)
                out.append(.send(.nonce, sealed))
            case .reveal:
                guard let commitment, sas == nil else { return [] }
                let theirs = SecretBytes(
                    try ShortAuthenticationString.unframe(try channel.open(body, phase: .reveal)))
                guard ShortAuthenticationString.opens(commitment, with: theirs) else {
                    return burn(.protocolError("the verification reveal does not match its commitment"))
                }
                sas = ShortAuthenticationString.derive(
                    verifier: channel.verifier, joinerNonce: theirs, attendantNonce: nonce)
            case .request:
                guard receivedRequest == nil else { return [] }
                guard
                    case .request(let request) = try JoinMessage(
                        decoding: try channel.open(body, phase: .request), allowed: ["request"])
                else { return burn(.protocolError("an unexpected message")) }
                receivedRequest = request
            default:
                return []
            }
            // Nobody sees words or decides before the reveal verified.
            guard pendingRequest == nil, let request = receivedRequest, let sas else { return out }
            pendingRequest = request
            if announceWaiting {
                out.append(send(.status(.waitingForApproval(inviter: inviterName)), channel, &random))
            }
            out.append(.requestReceived(request, sas: sas))
            return out
        } catch {
            return burn(JoinFailure(error))
        }
    }

    /// Lets the joiner in: `grant` is the JSON object the joiner needs to open the space.
    public mutating func approve(grant: [UInt8], using random: inout some RandomByteSource) -> [Output] {
        guard !isFinished, pendingRequest != nil, let channel = handshake.channel else { return [] }
        isFinished = true
        return [send(.grant(object: grant), channel, &random)]
    }

    /// Turns the joiner away with a reason code and a human message.
    public mutating func refuse(
        reason: RefusalReason, message: String, using random: inout some RandomByteSource
    ) -> [Output] {
        guard !isFinished, let channel = handshake.channel else { return [] }
        isFinished = true
        return [send(.refusal(reason: reason.rawValue, message: message), channel, &random)]
    }

    private mutating func send(
        _ message: JoinMessage, _ channel: JoinChannel, _ random: inout some RandomByteSource
    )
        -> Output
    {
        let phase: Rendezvous.Phase
        switch message {
        case .status:
            phase = .status(statusCount)
            statusCount += 1
        case .grant: phase = .grant
        case .refusal: phase = .refusal
        case .request: phase = .request
        }
        return .send(phase, channel.seal(message.encoded(), phase: phase, using: &random))
    }

    private mutating func burn(_ failure: JoinFailure) -> [Output] {
        isFinished = true
        return [.send(.abort, [JoinHandshake.version]), .burned(failure)]
    }
}
