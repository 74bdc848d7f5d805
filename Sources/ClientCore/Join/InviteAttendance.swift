import JoinProtocol
import PAKE

/// The attendant's side of a short-code invite over a real relay, one use at a time, with a
/// connection whose state can be saved and resumed (blocking; for the CLI and the bot).
public enum InviteAttendance {
    /// How one use of an invite ended.
    public enum Outcome: Equatable, Sendable {
        /// The joiner proved the code and was let in.
        case admitted(JoinRequest)
        /// The joiner proved the code and was turned away.
        case refused(JoinRequest)
        /// A wrong code or a protocol violation: the invite is burned.
        case burned(JoinFailure)
        /// The use ended unanswered: the joiner said it left, or the attendant was interrupted
        /// after a joiner spoke (the joiner was told). A joiner who had not proven the code keeps
        /// its failure.
        case stopped
    }

    /// Connects, allocates a nameplate and returns the connection (mailbox open).
    public static func allocate(relayURL: String, intent: JoinIntent = .join, timeout: Duration)
        throws(JoinRunError) -> (connection: RendezvousConnection, nameplate: Rendezvous.Nameplate)
    {
        var generator = SystemRandomNumberGenerator()
        let connection = RendezvousConnection(
            url: relayURL,
            machine: RendezvousMachine(
                appID: intent.appID, side: .random(using: &generator), start: .allocate))
        let deadline = ContinuousClock.now + timeout
        do {
            try connection.start()
            while true {
                if case .allocated(let nameplate) = try connection.next(timeout: deadline - .now) {
                    return (connection, nameplate)
                }
            }
        } catch {
            connection.close(mood: .lonely, timeout: .seconds(1))
            throw .relay(error)
        }
    }

    /// Puts the attendant's first message in the mailbox and waits until the relay stored it,
    /// so the connection can be dropped and resumed later.
    public static func publish(
        on connection: RendezvousConnection, words: String, binding: JoinBinding, seed: SecretBytes, use: Int,
        timeout: Duration
    ) throws(JoinRunError) {
        var derived = DerivedRandom(seed: seed, use: use)
        let session = AttendantSession(
            words: words, binding: binding, inviterName: nil, announceWaiting: false, using: &derived)
        do {
            for case .send(let phase, let body) in session.start {
                try connection.send(phase: phase, body: body)
            }
            try connection.waitUntilEchoed(timeout: timeout)
        } catch {
            throw .relay(error)
        }
    }

    /// Attends one use on `connection` until a joiner is answered, the code is burned, or
    /// `deadline` passes. `published` says whether this use's first message is already in the
    /// mailbox (``publish(on:words:binding:seed:use:timeout:)`` or a resumed connection).
    /// `decide` is called once the code is proven; an approval's grant is sent and echoed before
    /// the mailbox is closed. The connection is closed when this returns or throws, except that
    /// with `keepOpenOnTimeout` a deadline that passes before any joiner proved the code only
    /// drops the connection when no joiner message arrived yet (the invite stays pending; save
    /// `connection.machine`). `stepTimeout` bounds each wait once a joiner has spoken, so a
    /// joiner who stops answering cannot hold the invite until `deadline`. `announceWaiting`:
    /// tell the joiner a person decides (a bot that answers at once need not).
    /// `joinerSpoke`: a resumed use whose joiner had spoken before a restart (their attempt is
    /// counted): the relay replays them, and `stepTimeout` bounds the wait from the start, so a
    /// joiner that is never replayed (a relay that injected them and kept nothing) ends the use
    /// instead of holding it open until `deadline`.
    /// `onFirstPeerMessage` sees the connection's state once the joiner has spoken, before their
    /// message is looked at; it returns false when it could not record the attempt durably, and
    /// then the message is not looked at and the use ends (`docs/join-protocol.md`, one guess
    /// per code). `decide` gets a probe that says whether the joiner still waits (false once it
    /// said it left), for a person who answers slowly. `interruption`: once set, a joiner who
    /// spoke is told the inviter stopped attending (a refusal through the channel once confirmed,
    /// the `ended` notice before) and `.stopped` is returned; with no joiner yet, `.interrupted`
    /// is thrown and the connection dropped as on a timeout (the invite stays resumable).
    public static func attendOne(
        on connection: RendezvousConnection, words: String, binding: JoinBinding, seed: SecretBytes, use: Int,
        published: Bool, inviterName: String?, deadline: ContinuousClock.Instant,
        keepOpenOnTimeout: Bool = false, stepTimeout: Duration? = nil, announceWaiting: Bool = true,
        joinerSpoke: Bool = false,
        onFirstPeerMessage: (RendezvousMachine) -> Bool = { _ in true },
        onCodeProven: (JoinRequest, [UInt8]) -> Void = { _, _ in },
        interruption: Interruption? = nil,
        decide: (JoinRequest, [UInt8], _ joinerWaiting: () -> Bool) -> JoinDecision
    ) throws(JoinRunError) -> Outcome {
        var random = SystemRandom()
        var derived = DerivedRandom(seed: seed, use: use)
        var session = AttendantSession(
            words: words, binding: binding, inviterName: inviterName, announceWaiting: announceWaiting,
            using: &derived)
        var outputs = published ? [] : session.start
        // A resumed connection does not deliver a peer message twice, so the invite can stay
        // pending only while no joiner message arrived.
        var receivedAny = joinerSpoke
        var unrecorded = false
        do throws(RelayConnectionError) {
            while true {
                for output in outputs {
                    switch output {
                    case .send(let phase, let body):
                        // The joiner's next message is the receipt of the handshake's (no echo);
                        // the rest keep theirs (waited for before a person decides, or closing).
                        try connection.send(phase: phase, body: body, echo: !phase.isAnsweredByJoiner)
                    case .burned(let failure):
                        // Let the abort reach the joiner, then close scary.
                        try? connection.waitUntilEchoed(timeout: .seconds(2))
                        connection.close(mood: failure.mood)
                        return .burned(failure)
                    case .requestReceived(let request, let sas):
                        // The status ("waiting for approval") goes out before a person decides.
                        // `sas`: the verification words' bytes, known only once the joiner's
                        // reveal opened its commitment.
                        try connection.waitUntilEchoed(timeout: deadline - .now)
                        onCodeProven(request, sas)
                        let answer: [AttendantSession.Output]
                        let approved: Bool
                        var left = false
                        let joinerWaiting = {
                            if !left { left = Self.joinerLeft(connection) }
                            return !left
                        }
                        let decision = decide(request, sas, joinerWaiting)
                        if left {
                            connection.close(mood: .lonely, timeout: .seconds(1))
                            return .stopped
                        }
                        switch decision {
                        case .approve(let grant):
                            answer = session.approve(grant: grant, using: &random)
                            approved = true
                        case .refuse(let reason, let message):
                            answer = session.refuse(reason: reason, message: message, using: &random)
                            approved = false
                        }
                        for case .send(let phase, let body) in answer {
                            try connection.send(phase: phase, body: body)
                        }
                        try connection.waitUntilEchoed(timeout: deadline - .now)
                        connection.close(mood: .happy)
                        return approved ? .admitted(request) : .refused(request)
                    }
                }
                var limit = deadline
                if receivedAny, let stepTimeout { limit = min(deadline, .now + stepTimeout) }
                guard let event = try connection.next(until: limit, unless: interruption) else {
                    guard receivedAny else { throw RelayConnectionError.timedOut("interrupted") }
                    // A joiner is in the mailbox: tell them before going.
                    let refusal = session.refuse(
                        reason: .left,
                        message: "\(inviterName ?? "The inviter") stopped attending this invite.",
                        using: &random)
                    if refusal.isEmpty {
                        try connection.send(phase: .ended, body: InviteEnd.left.notice)
                    }
                    for case .send(let phase, let body) in refusal {
                        try connection.send(phase: phase, body: body)
                    }
                    try? connection.waitUntilEchoed(timeout: .seconds(2))
                    connection.close(mood: .lonely, timeout: .seconds(1))
                    return .stopped
                }
                guard case .received(let phase, let body) = event else {
                    outputs = []
                    continue
                }
                // The joiner's notice that it stopped waiting: read here, before the session,
                // which would take an unknown phase for a protocol violation.
                if phase == .left {
                    connection.close(mood: .lonely, timeout: .seconds(1))
                    return .stopped
                }
                if !receivedAny {
                    receivedAny = true
                    guard onFirstPeerMessage(connection.machine) else {
                        unrecorded = true
                        break
                    }
                }
                outputs = session.handle(phase: phase, body: body, using: &random)
            }
        } catch {
            if interruption?.isInterrupted == true, case .timedOut = error, !receivedAny {
                connection.disconnect()
                throw .interrupted
            }
            guard keepOpenOnTimeout, case .timedOut = error else {
                connection.close(mood: .lonely, timeout: .seconds(1))
                throw .relay(error)
            }
            guard !receivedAny else {
                // Half a handshake cannot be resumed: the invite ends here.
                connection.close(mood: .lonely, timeout: .seconds(1))
                throw .failed(.protocolError("the joiner stopped answering"))
            }
            connection.disconnect()
            throw .relay(error)
        }
        // Only an attempt that could not be recorded leaves the loop: its message is never
        // looked at.
        precondition(unrecorded)
        connection.close(mood: .errory, timeout: .seconds(1))
        throw .failed(.protocolError("the attendant could not record the attempt"))
    }

    /// Whether the joiner said it left (phase `left`) in the messages the relay has for us now.
    /// Nothing else may come from a joiner while its request is decided; anything else is dropped.
    static func joinerLeft(_ connection: RendezvousConnection) -> Bool {
        while let event = try? connection.next(timeout: .milliseconds(20)) {
            if case .received(.left, _) = event { return true }
        }
        return false
    }

    /// ``attendOne(on:words:binding:seed:use:published:inviterName:deadline:keepOpenOnTimeout:stepTimeout:announceWaiting:onFirstPeerMessage:onCodeProven:interruption:decide:)``
    /// for a `decide` that answers at once (it needs no probe of the joiner).
    public static func attendOne(
        on connection: RendezvousConnection, words: String, binding: JoinBinding, seed: SecretBytes, use: Int,
        published: Bool, inviterName: String?, deadline: ContinuousClock.Instant,
        keepOpenOnTimeout: Bool = false, stepTimeout: Duration? = nil, announceWaiting: Bool = true,
        onFirstPeerMessage: (RendezvousMachine) -> Bool = { _ in true },
        onCodeProven: (JoinRequest, [UInt8]) -> Void = { _, _ in },
        decide: (JoinRequest, [UInt8]) -> JoinDecision
    ) throws(JoinRunError) -> Outcome {
        try attendOne(
            on: connection, words: words, binding: binding, seed: seed, use: use, published: published,
            inviterName: inviterName, deadline: deadline, keepOpenOnTimeout: keepOpenOnTimeout,
            stepTimeout: stepTimeout, announceWaiting: announceWaiting,
            onFirstPeerMessage: onFirstPeerMessage,
            onCodeProven: onCodeProven, interruption: nil, decide: { request, sas, _ in decide(request, sas) }
        )
    }

    /// A connection for a further use of the same invite: claims the same nameplate again (the
    /// relay frees it once both sides of the previous use released it).
    public static func reclaim(
        relayURL: String, nameplate: Rendezvous.Nameplate, intent: JoinIntent = .join
    ) throws(JoinRunError) -> RendezvousConnection {
        var generator = SystemRandomNumberGenerator()
        let connection = RendezvousConnection(
            url: relayURL,
            machine: RendezvousMachine(
                appID: intent.appID, side: .random(using: &generator), start: .claim(nameplate)))
        do {
            try connection.start()
        } catch {
            throw .relay(error)
        }
        return connection
    }

    /// Leaves `end` for late joiners once an invite is over (`docs/join-protocol.md`, "Ended
    /// invites"): claims the nameplate again (a fresh mailbox, once the last use's mailbox is
    /// closed and its sides released the nameplate), adds the `ended` notice, waits until the
    /// relay stored it, and drops the connection without closing, so the relay keeps the
    /// nameplate (and the notice) until its idle expiry instead of handing the number on.
    public static func leaveEndNotice(
        relayURL: String, nameplate: Rendezvous.Nameplate, intent: JoinIntent = .join, end: InviteEnd,
        timeout: Duration = .seconds(10)
    ) throws(JoinRunError) {
        let connection = try reclaim(relayURL: relayURL, nameplate: nameplate, intent: intent)
        do {
            try connection.send(phase: .ended, body: end.notice)
            try connection.waitUntilEchoed(timeout: timeout)
        } catch {
            connection.close(mood: .lonely, timeout: .seconds(1))
            throw .relay(error)
        }
        connection.disconnect()
    }

    /// A connection resumed from a saved machine (after `eleven invite --detach`).
    public static func resume(relayURL: String, machine: RendezvousMachine) throws(JoinRunError)
        -> RendezvousConnection
    {
        let connection = RendezvousConnection(url: relayURL, machine: machine)
        do {
            try connection.start()
        } catch {
            throw .relay(error)
        }
        return connection
    }
}
