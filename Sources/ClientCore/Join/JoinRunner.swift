import JoinProtocol
import PAKE

/// Why a join run stopped, for the command line: a stable `code` and a sentence for people.
public enum JoinRunError: Error, Equatable, Sendable, CustomStringConvertible {
    case relay(RelayConnectionError)
    case failed(JoinFailure)
    case refused(reason: String, message: String)
    /// The person stopped the wait (``Interruption``); the other side was told.
    case interrupted
    /// This device could not record that its code was about to go out, so it did not send it
    /// (a full disk): an attempt nobody could report later is not made.
    case unrecorded

    public var code: String {
        switch self {
        case .relay(let e): e.code
        case .failed(let f): f.code
        case .refused(let reason, _): "refused_\(reason)"
        case .interrupted: "interrupted"
        case .unrecorded: "state_unwritable"
        }
    }

    public var description: String {
        switch self {
        case .relay(let e): e.description
        case .failed(let f): f.description
        case .refused(_, let message): message
        case .interrupted: "Interrupted."
        case .unrecorded:
            "This device cannot record the join attempt, so the code was not sent. Free some disk space "
                + "and try again."
        }
    }
}

/// Progress a person can follow while joining.
public enum JoinProgress: Equatable, Sendable {
    case connecting
    /// The code is proven and the verification words agreed on: show `sas` as words
    /// (``VerificationWords``) for the person to compare with the inviter's.
    case codeAccepted(sas: [UInt8])
    case waitingForApproval(inviter: String?)
    case reconnecting
    /// The joiner's confirmation goes out as soon as this returns: whoever answered in the
    /// mailbox can test one guess of the code against it. Record the attempt first.
    case codeSent
    /// The attendant's confirmation verified: the attempt checked out.
    case codeProven
}

/// Points of a join for measuring where its time goes (`eleven-bench bot --phases`); nothing a
/// person needs to see.
public enum JoinStep: Equatable, Sendable {
    /// The relay connection is open (bind, claim and open sent).
    case connected
    /// A message of the attendant's arrived.
    case received(Rendezvous.Phase)
    /// The grant arrived (the mailbox is closed next).
    case granted
}

/// What the attendant decided about a request.
public enum JoinDecision: Sendable {
    case approve(grant: [UInt8])
    case refuse(reason: RefusalReason, message: String)
}

/// Runs the join sessions over a real relay connection (blocking; for the CLI and the bot).
public enum JoinRunner {
    /// The joiner: claim the nameplate, prove the code, send the request, wait for the answer.
    /// Returns the grant object. `firstAnswer` bounds the wait for the attendant's first message,
    /// which an attendant (online or detached) leaves in the mailbox before anyone joins: when it
    /// does not come, nobody attends that code, and the join fails early with `.timedOut`.
    public static func join(
        relayURL: String, nameplate: Rendezvous.Nameplate, words: String, intent: JoinIntent = .join,
        request: JoinRequest, timeout: Duration, firstAnswer: Duration? = nil,
        step: ((JoinStep) -> Void)? = nil, progress: @escaping (JoinProgress) -> Void
    ) throws(JoinRunError) -> [UInt8] {
        var random = SystemRandom()
        let pending = PendingJoin(
            relay: relayURL, nameplate: nameplate, intent: intent, words: words, request: request,
            createdAt: 0, deadline: 0, using: &random)
        return try join(
            pending, timeout: timeout, firstAnswer: firstAnswer, step: step, progress: progress,
            save: { _ in })
    }

    /// The joiner, resumable: `pending` is a fresh ``PendingJoin`` or one saved by an earlier
    /// process. `save` is called with the state after every step (store it sealed); a process
    /// killed at any point calls this again with the last saved state and carries on: the same
    /// key-agreement randomness, the peer messages already seen fed again, nothing sent twice.
    /// `interruption`: once set, the joiner tells the attendant it left (phase `left`), closes
    /// the mailbox and throws `.interrupted`. `recordAttempt` is called right before the
    /// confirmation goes out (``JoinProgress/codeSent``); false: it is not sent and the join fails
    /// with `.unrecorded`.
    public static func join(
        _ pending: PendingJoin, timeout: Duration, firstAnswer: Duration? = nil,
        step: ((JoinStep) -> Void)? = nil, progress: @escaping (JoinProgress) -> Void,
        save: (PendingJoin) -> Void, interruption: Interruption? = nil, recordAttempt: () -> Bool = { true }
    ) throws(JoinRunError) -> [UInt8] {
        var state = pending
        var random = SystemRandom()
        var derived = DerivedRandom(seed: state.seedBytes, use: 0)
        let binding = JoinBinding(intent: state.intent, nameplate: state.nameplate)
        let connection = RendezvousConnection(url: state.relay, machine: state.machine)
        connection.onReconnect = { _ in progress(.reconnecting) }
        progress(.connecting)
        return try mappingErrors(closing: connection) {
            var session = JoinerSession(
                words: state.words, binding: binding, request: state.request, using: &derived)
            try connection.start()
            step?(.connected)
            var outputs = session.start
            for message in state.received {
                outputs += session.handle(phase: message.phase, body: message.body, using: &random)
            }
            let deadline = ContinuousClock.now + timeout
            let firstDeadline = firstAnswer.map { ContinuousClock.now + $0 } ?? deadline
            var answered = !state.received.isEmpty
            while true {
                for output in outputs {
                    switch output {
                    case .send(let phase, let body):
                        guard !state.sent.contains(phase) else { continue }
                        // The attendant answers each (the grant answers the last), and the
                        // answer is the receipt: no echo.
                        try connection.send(phase: phase, body: body, echo: false)
                        state.sent.append(phase)
                    case .codeSent:
                        guard !state.sent.contains(.confirm) else { continue }
                        progress(.codeSent)
                        guard recordAttempt() else {
                            connection.close(mood: .errory, timeout: .seconds(2))
                            throw JoinRunError.unrecorded
                        }
                    case .codeProven:
                        progress(.codeProven)
                    case .codeAccepted(let sas):
                        progress(.codeAccepted(sas: sas))
                    case .status(let status):
                        if status.state == .waitingForApproval {
                            progress(.waitingForApproval(inviter: status.inviterName))
                        }
                    case .granted(let object):
                        step?(.granted)
                        connection.close(mood: .happy)
                        return object
                    case .refused(let reason, let message):
                        connection.close(mood: .happy)
                        throw JoinRunError.refused(reason: reason, message: message)
                    case .failed(let failure):
                        connection.close(mood: failure.mood)
                        throw JoinRunError.failed(failure)
                    }
                }
                state.machine = connection.machine
                save(state)
                let limit = answered ? deadline : min(deadline, firstDeadline)
                guard let event = try connection.next(until: limit, unless: interruption) else {
                    try? connection.send(phase: .left, body: [])
                    try? connection.waitUntilEchoed(timeout: .seconds(2))
                    connection.close(mood: .lonely, timeout: .seconds(2))
                    throw JoinRunError.interrupted
                }
                guard case .received(let phase, let body) = event else {
                    outputs = []
                    continue
                }
                answered = true
                step?(.received(phase))
                state.received.append(PendingJoin.Received(phase: phase, body: body))
                outputs = session.handle(phase: phase, body: body, using: &random)
            }
        }
    }

    /// The attendant: allocate a nameplate (`onNameplate` shows the code), wait for a joiner,
    /// verify the code, ask `decide` (with the verification words' bytes, the SAS), answer. Returns
    /// the request that was approved or refused.
    public static func attend(
        relayURL: String, words: String, intent: JoinIntent = .join, inviterName: String?,
        announceWaiting: Bool, timeout: Duration, onNameplate: (Rendezvous.Nameplate) -> Void,
        decide: (JoinRequest, [UInt8]) -> JoinDecision
    ) throws(JoinRunError) -> JoinRequest {
        var random = SystemRandom()
        var generator = SystemRandomNumberGenerator()
        let connection = RendezvousConnection(
            url: relayURL,
            machine: RendezvousMachine(
                appID: intent.appID, side: .random(using: &generator), start: .allocate))
        return try mappingErrors(closing: connection) {
            try connection.start()
            let deadline = ContinuousClock.now + timeout
            var nameplate: Rendezvous.Nameplate?
            while nameplate == nil {
                if case .allocated(let n) = try connection.next(timeout: deadline - .now) { nameplate = n }
            }
            guard let nameplate else { throw JoinRunError.relay(.timedOut("no nameplate")) }
            onNameplate(nameplate)
            var session = AttendantSession(
                words: words, binding: JoinBinding(intent: intent, nameplate: nameplate),
                inviterName: inviterName, announceWaiting: announceWaiting, using: &random)
            var outputs = session.start
            while true {
                for output in outputs {
                    switch output {
                    case .send(let phase, let body):
                        try connection.send(phase: phase, body: body)
                    case .burned(let failure):
                        connection.close(mood: failure.mood)
                        throw JoinRunError.failed(failure)
                    case .requestReceived(let request, let sas):
                        let answer: [AttendantSession.Output]
                        switch decide(request, sas) {
                        case .approve(let grant):
                            answer = session.approve(grant: grant, using: &random)
                        case .refuse(let reason, let message):
                            answer = session.refuse(reason: reason, message: message, using: &random)
                        }
                        for case .send(let phase, let body) in answer {
                            try connection.send(phase: phase, body: body)
                        }
                        // Wait until the relay stored the answer before closing.
                        try connection.waitUntilEchoed(timeout: deadline - .now)
                        connection.close(mood: .happy)
                        return request
                    }
                }
                guard case .received(let phase, let body) = try connection.next(timeout: deadline - .now)
                else {
                    outputs = []
                    continue
                }
                outputs = session.handle(phase: phase, body: body, using: &random)
            }
        }
    }

    /// Runs a join step, turning every error into a `JoinRunError`; a relay failure closes the
    /// mailbox (mood lonely) first.
    private static func mappingErrors<T>(
        closing connection: RendezvousConnection, _ body: () throws -> T
    ) throws(JoinRunError) -> T {
        do {
            return try body()
        } catch let error as JoinRunError {
            throw error
        } catch let error as RelayConnectionError {
            connection.close(mood: .lonely, timeout: .seconds(1))
            throw .relay(error)
        } catch {
            throw .relay(.rendezvous(.misuse("\(error)")))
        }
    }
}
