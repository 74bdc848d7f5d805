import Foundation
import JoinProtocol
import PAKE

/// What the owner of a ``WormholeTransfer`` must do next.
public enum WormholeAction: Sendable {
    /// Send this body in this phase (through `RendezvousConnection.send`).
    case send(phase: Rendezvous.Phase, body: [UInt8])
    /// The code exists now (after the relay allocated its nameplate): show it to the person.
    case codeReady(WormholeCode)
    /// The key is confirmed; the verifier (64 hex characters) both sides can compare.
    case keyConfirmed(verifier: String)
    /// `--verify`: show the verifier and ask; answer with ``WormholeTransfer/approveVerifier(_:using:)``.
    case askVerifier(String)
    /// Close the mailbox with this mood (through `RendezvousConnection.close`).
    case close(Rendezvous.Mood)
    /// The transfer is over; nothing more will happen.
    case finished(WormholeOutcome)
}

/// How a transfer ended.
public enum WormholeOutcome: Equatable, Sendable {
    /// The receiver acknowledged our text.
    case sent
    /// The sender's text, exactly as sent.
    case received(String)
    case failed(WormholeError)
}

/// A Magic Wormhole text transfer (the `lothar.com/wormhole/text-or-file-xfer` application,
/// text only) as a pure state machine over rendezvous events (`wormhole-protocol.md` §12).
///
/// Both sides: send `pake` (`{"pake_v1": hex}`) once the code is known; on the peer's `pake`
/// derive the key and send an encrypted `version` (`{"app_versions": {}}`). The first peer
/// message that decrypts confirms the key (implicit confirmation); one that does not means a
/// wrong code or an attacker (mood `scary`). Numeric phases are application messages, delivered
/// in numeric order. The sender then sends `{"offer": {"message": text}}` in phase `0`; the
/// receiver answers `{"answer": {"message_ack": "ok"}}`, or `{"error": …}` for a file or
/// directory offer, which eleven does not take. Every message is SecretBox-sealed under the
/// phase key of its sender's side.
///
/// No sockets, no clock: the owner feeds `RendezvousEvent`s (with the peer's side, which the
/// phase keys need), performs the returned actions and decides when to give up (``abandon(_:)``).
/// Randomness (SPAKE2 scalar, nonces, code words) is passed in.
public struct WormholeTransfer: ~Copyable {
    public enum Role: Sendable, Equatable {
        case sender(text: String)
        case receiver
    }

    /// The most application messages held back waiting for an earlier phase.
    static let maxPendingMessages = 64

    public let role: Role
    public let appID: String
    public let side: Rendezvous.Side
    /// Whether the person wants to compare the verifier before anything is released.
    public let verify: Bool
    /// The code: given at the start, or made when the relay allocates a nameplate.
    public private(set) var code: WormholeCode?
    private let wordCount: Int

    private var pake: WormholeSPAKE2.AwaitingMessage?
    private var key: SecretBytes?
    private var peerSide: Rendezvous.Side?
    /// Peer messages that arrived before we could derive the key.
    private var early: [(Rendezvous.Phase, [UInt8])] = []
    /// Decrypted application messages by phase number, waiting for their turn.
    private var pending: [Int: [UInt8]] = [:]
    private var nextInbound = 0
    private var nextOutbound = 0
    private var heardFromPeer = false
    private var verifierApproved: Bool
    /// Whether the key is confirmed (a peer message decrypted).
    public private(set) var isConfirmed = false
    /// The verifier as 64 lowercase hex characters, once confirmed.
    public private(set) var verifier: String?
    public private(set) var outcome: WormholeOutcome?

    /// A transfer whose code is known (the receiver, or a sender with `--code`).
    public init(role: Role, code: WormholeCode, appID: String, side: Rendezvous.Side, verify: Bool = false) {
        self.init(role: role, code: code, wordCount: 0, appID: appID, side: side, verify: verify)
    }

    /// A sender whose code is made from the nameplate the relay allocates: `wordCount` words.
    public init(
        sendingText text: String, wordCount: Int, appID: String, side: Rendezvous.Side, verify: Bool = false
    ) {
        precondition(wordCount >= 1, "a code needs at least one word")
        self.init(
            role: .sender(text: text), code: nil, wordCount: wordCount, appID: appID, side: side,
            verify: verify)
    }

    private init(
        role: Role, code: WormholeCode?, wordCount: Int, appID: String, side: Rendezvous.Side, verify: Bool
    ) {
        self.role = role
        self.code = code
        self.wordCount = wordCount
        self.appID = appID
        self.side = side
        self.verify = verify
        self.verifierApproved = !verify
    }

    /// Whether the relay must allocate a nameplate (no code yet).
    public var needsAllocation: Bool { code == nil }

    // MARK: Inputs

    /// Starts the key exchange if the code is known.
    public mutating func start(using random: inout some RandomByteSource) -> [WormholeAction] {
        guard code != nil, pake == nil, key == nil, outcome == nil else { return [] }
        return beginKeyExchange(using: &random)
    }

    /// One event from the rendezvous. `peerSide` is the other client's side
    /// (`RendezvousMachine.peerSide`), known once any of its messages has arrived.
    public mutating func handle(
        _ event: RendezvousEvent, peerSide: Rendezvous.Side?, using random: inout some RandomByteSource
    ) -> [WormholeAction] {
        guard outcome == nil else { return [] }
        switch event {
        case .motd:
            return []
        case .allocated(let nameplate):
            guard code == nil else { return [] }
            let made = WormholeCode(nameplate: nameplate, wordCount: wordCount, using: &random)
            code = made
            return [.codeReady(made)] + beginKeyExchange(using: &random)
        case .closed:
            return finish(.failed(.badPeerMessage("the relay closed the mailbox early")), mood: nil)
        case .received(let phase, let body):
            if let peerSide { self.peerSide = peerSide }
            heardFromPeer = true
            return receive(phase: phase, body: body, using: &random)
        }
    }

    /// The person's answer to ``WormholeAction/askVerifier(_:)``.
    public mutating func approveVerifier(_ approved: Bool, using random: inout some RandomByteSource)
        -> [WormholeAction]
    {
        guard outcome == nil, isConfirmed, verify, !verifierApproved else { return [] }
        guard approved else {
            let refusal = seal(
                WormholeMessage.error("verification rejected, abandoning transfer"), using: &random)
            return refusal + finish(.failed(.verifierRejected), mood: .scary)
        }
        verifierApproved = true
        return afterApproval(using: &random)
    }

    /// Gives up (time limit, the relay failed, the person interrupted): closes with `lonely` if
    /// the peer never showed up, `errory` otherwise.
    public mutating func abandon(_ error: WormholeError) -> [WormholeAction] {
        guard outcome == nil else { return [] }
        return finish(.failed(error), mood: heardFromPeer ? .errory : .lonely)
    }

    // MARK: Key exchange

    private mutating func beginKeyExchange(using random: inout some RandomByteSource) -> [WormholeAction] {
        guard let code else { return [] }
        let identity = Array(appID.precomposedStringWithCanonicalMapping.utf8)
        let started = WormholeSPAKE2(password: code.password, identity: identity).start(using: &random)
        let body = WormholeMessage.pakeBody(started.message)
        pake = consume started
        var actions: [WormholeAction] = [.send(phase: .pake, body: body)]
        // Anything the peer said before we had a code (only possible with a misbehaving relay).
        let queued = early
        early = []
        for (phase, body) in queued where outcome == nil {
            actions += receive(phase: phase, body: body, using: &random)
        }
        return actions
    }

    private mutating func receive(
        phase: Rendezvous.Phase, body: [UInt8], using random: inout some RandomByteSource
    ) -> [WormholeAction] {
        guard outcome == nil else { return [] }
        if phase == .pake {
            guard key == nil else { return [] }
            guard let started = pake.take() else {
                early.append((phase, body))
                return []
            }
            let derived: SecretBytes
            do throws(WormholeError) {
                let message = try WormholeMessage.parsePake(body)
                do {
                    derived = try started.finish(message)
                } catch {
                    throw WormholeError.badKeyExchange(error.message)
                }
            } catch {
                return finish(.failed(error), mood: .scary)
            }
            key = derived
            var actions = seal(WormholeMessage.versionPlaintext, phase: .version, using: &random)
            let queued = early
            early = []
            for (phase, body) in queued where outcome == nil {
                actions += receive(phase: phase, body: body, using: &random)
            }
            return actions
        }
        guard key != nil else {
            guard early.count < Self.maxPendingMessages else {
                return finish(
                    .failed(.badPeerMessage("too many messages before the key exchange")), mood: .errory)
            }
            early.append((phase, body))
            return []
        }
        if phase == .version {
            guard let plaintext = open(body, phase: phase) else {
                return finish(.failed(.codeMismatch), mood: .scary)
            }
            var actions = confirm(using: &random)
            if outcome == nil && !WormholeMessage.isValidVersion(plaintext) {
                actions += finish(
                    .failed(.badPeerMessage("its version message is not a JSON object")), mood: .errory)
            }
            return actions
        }
        guard let number = Self.phaseNumber(phase) else {
            // Dilation and future phases: not ours to read.
            return []
        }
        guard let plaintext = open(body, phase: phase) else {
            return finish(.failed(.codeMismatch), mood: .scary)
        }
        var actions = confirm(using: &random)
        guard outcome == nil, number >= nextInbound else { return actions }
        guard number < nextInbound + Self.maxPendingMessages else {
            return actions
                + finish(
                    .failed(.badPeerMessage("message \(number) arrived far ahead of \(nextInbound)")),
                    mood: .errory)
        }
        pending[number] = plaintext
        actions += deliver(using: &random)
        return actions
    }

    /// The first peer message decrypted: the key is confirmed.
    private mutating func confirm(using random: inout some RandomByteSource) -> [WormholeAction] {
        guard !isConfirmed, let key else { return [] }
        isConfirmed = true
        let hex = Hex.encode(WormholeKeys.verifier(from: key).unredactedBytes())
        verifier = hex
        var actions: [WormholeAction] = [.keyConfirmed(verifier: hex)]
        if verify {
            actions.append(.askVerifier(hex))
        } else {
            actions += afterApproval(using: &random)
        }
        return actions
    }

    /// Confirmed and, with `--verify`, approved: the sender offers; both read what waits.
    private mutating func afterApproval(using random: inout some RandomByteSource) -> [WormholeAction] {
        var actions: [WormholeAction] = []
        if case .sender(let text) = role {
            actions += seal(WormholeMessage.offer(text: text), using: &random)
        }
        actions += deliver(using: &random)
        return actions
    }

    // MARK: Application

    /// Hands the application messages that are next in order to the role.
    private mutating func deliver(using random: inout some RandomByteSource) -> [WormholeAction] {
        guard isConfirmed, verifierApproved else { return [] }
        var actions: [WormholeAction] = []
        while outcome == nil, let plaintext = pending.removeValue(forKey: nextInbound) {
            nextInbound += 1
            let message: WormholeMessage.Application
            do {
                message = try WormholeMessage.parseApplication(plaintext)
            } catch {
                return actions + finish(.failed(error), mood: .errory)
            }
            actions += apply(message, using: &random)
        }
        return actions
    }

    private mutating func apply(
        _ message: WormholeMessage.Application, using random: inout some RandomByteSource
    ) -> [WormholeAction] {
        switch (role, message) {
        case (_, .error(let text)):
            return finish(.failed(.peerError(text)), mood: .happy)
        case (_, .ignored):
            return []
        case (.sender, .textAcknowledged):
            return finish(.sent, mood: .happy)
        case (.sender, .otherAnswer(let what)):
            return finish(.failed(.textNotAccepted(what)), mood: .happy)
        case (.sender, .offerText), (.sender, .offerOther):
            // The Python sender ignores offers too: we are the one offering.
            return []
        case (.receiver, .offerText(let text)):
            return seal(WormholeMessage.textAcknowledgement, using: &random)
                + finish(.received(text), mood: .happy)
        case (.receiver, .offerOther(let kind)):
            let refusal = WormholeMessage.error("receiving \(kind) is not supported; ask for --text")
            return seal(refusal, using: &random) + finish(.failed(.offerNotSupported(kind)), mood: .happy)
        case (.receiver, .textAcknowledged), (.receiver, .otherAnswer):
            return []
        }
    }

    // MARK: Helpers

    private mutating func finish(_ result: WormholeOutcome, mood: Rendezvous.Mood?) -> [WormholeAction] {
        outcome = result
        pake = nil
        pending = [:]
        early = []
        return (mood.map { [.close($0)] } ?? []) + [.finished(result)]
    }

    /// Seals an application message in our next numeric phase.
    private mutating func seal(_ plaintext: [UInt8], using random: inout some RandomByteSource)
        -> [WormholeAction]
    {
        let phase = Rendezvous.Phase(String(nextOutbound))
        nextOutbound += 1
        return seal(plaintext, phase: phase, using: &random)
    }

    private func seal(
        _ plaintext: [UInt8], phase: Rendezvous.Phase, using random: inout some RandomByteSource
    ) -> [WormholeAction] {
        guard let key else { return [] }
        let phaseKey = WormholeKeys.phaseKey(from: key, side: side.value, phase: phase.value)
        return [.send(phase: phase, body: WormholeSecretBox.seal(plaintext, key: phaseKey, using: &random))]
    }

    private func open(_ body: [UInt8], phase: Rendezvous.Phase) -> [UInt8]? {
        guard let key, let peerSide else { return nil }
        let phaseKey = WormholeKeys.phaseKey(from: key, side: peerSide.value, phase: phase.value)
        return WormholeSecretBox.open(body, key: phaseKey)
    }

    /// `0`, `1`, … (`^\d+$`, at most 9 digits so it fits an Int); `nil` for any other phase.
    static func phaseNumber(_ phase: Rendezvous.Phase) -> Int? {
        let digits = phase.value.utf8
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return nil
        }
        return Int(phase.value)
    }
}
