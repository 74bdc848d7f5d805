import JoinProtocol
import PAKE
import Support

/// Why an attendant turns a joiner away after they proved the code, and what that does to the
/// invite (``InviteAttendant/UseOutcome``).
public struct AttendantRefusal: Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        /// A person said no: the use is spent.
        case declined
        /// The attendant's own trouble; the joiner may try again.
        case turnedAway
        /// The invite no longer works; it ends.
        case invalidated(InviteAttendant.Ending)
    }

    public let kind: Kind
    /// The reason code the joiner's client shows (`refused_<reason>`).
    public let reason: RefusalReason
    /// A sentence for the joiner.
    public let message: String

    public init(_ kind: Kind, reason: RefusalReason, _ message: String) {
        self.kind = kind
        self.reason = reason
        self.message = message
    }

    public static let interrupted = AttendantRefusal(
        .turnedAway, reason: .interrupted,
        "Your join was interrupted; try the code again if it has uses left.")
    public static let cannotRecord = AttendantRefusal(
        .turnedAway, reason: .unavailable, "The attendant cannot record your join right now; try again soon."
    )
}

/// What adding a joiner gave.
public enum AttendantAdmission: Sendable {
    /// Added: the grant the joiner needs to open the space.
    case granted([UInt8])
    /// Not added. `mayBeMember`: it is not known whether they became a member (then their use
    /// stays taken).
    case failed(AttendantRefusal, mayBeMember: Bool)
}

/// What the owner of an attendant supplies: where the machine is saved, who decides about a
/// joiner who proved the code, and who hears how it went. The bot and the CLI differ only here.
public struct InviteAttendantHooks {
    /// Saves the machine durably. Called after every event before anything is acted on, except
    /// a use's prepared mailbox (the `preparing` saved before restarts as well; see `run`).
    public var save: (InviteAttendant) throws -> Void
    /// Whether the joiner who proved the code may come in (the policy, a person's answer); nil
    /// lets them in.
    public var check: (_ request: JoinRequest, _ verifier: [UInt8], _ use: Int) -> AttendantRefusal?
    /// Adds the joiner to the space and makes their grant (`nameplate`: the invite's).
    public var admit: (_ request: JoinRequest, _ nameplate: Rendezvous.Nameplate) -> AttendantAdmission
    /// What the inviter hears, with the current use's joiner when there is one. A throw stops the
    /// driver (the machine is saved already).
    public var report: (_ report: InviteAttendant.Report, _ request: JoinRequest?) throws -> Void
    /// Asks a person instead of ``check`` when set: `joinerWaiting` says whether the joiner still
    /// waits, so a slow answer notices one who left (false from then on).
    public var ask: ((_ request: JoinRequest, _ joinerWaiting: () -> Bool) -> AttendantRefusal?)?
    /// A joiner proved the code (before any decision).
    public var codeProven: (_ request: JoinRequest, _ verifier: [UInt8]) -> Void = { _, _ in }
    /// A line for the attendant's own log (abandoned uses).
    public var log: (_ kind: String, _ detail: String) -> Void = { _, _ in }
    /// Where the machine's `now` comes from.
    public var clock: any WallClock

    public init(
        save: @escaping (InviteAttendant) throws -> Void,
        check: @escaping (JoinRequest, [UInt8], Int) -> AttendantRefusal?,
        admit: @escaping (JoinRequest, Rendezvous.Nameplate) -> AttendantAdmission,
        report: @escaping (InviteAttendant.Report, JoinRequest?) throws -> Void,
        clock: any WallClock = SystemClock()
    ) {
        self.save = save
        self.check = check
        self.admit = admit
        self.report = report
        self.clock = clock
    }
}

/// Drives an ``InviteAttendant`` over a real relay (blocking; one invite per thread): performs
/// its actions, feeds back what happened, and saves the machine after every step that a restart
/// needs through the owner's hooks. The bot (`eleven-bot run`) and the CLI (`eleven invite --short`,
/// `eleven approve`) use this one driver.
public final class InviteAttendantDriver {
    public private(set) var attendant: InviteAttendant
    public let relayURL: String
    public let secret: InviteSecret
    public var inviterName: String?
    /// Tell the joiner a person decides (a bot that answers at once need not).
    public var announceWaiting = true
    /// The longest wait for a joiner's next message once they started.
    public var stepTimeout: Duration?
    /// Once set, the driver stops at the next wait: a joiner who spoke is told the inviter left
    /// and their use ends; ``run(until:untilAttending:shouldStop:)`` returns nil.
    public var interruption: Interruption?
    /// A nameplate was allocated and saved: the code can be shown now.
    public var onAllocated: (Rendezvous.Nameplate) throws -> Void = { _ in }
    /// Use `use`'s mailbox is prepared (its first message is in it). Not saved (see
    /// ``run(until:untilAttending:shouldStop:)``): an owner that watches for it hears it here.
    public var onPrepared: (_ use: Int) -> Void = { _ in }
    /// When the invite was made (Unix seconds): a reported attempt older than that is about
    /// another invite that had the same nameplate.
    public var createdAt: Int64 = 0
    /// Once set, a wait with no joiner in the mailbox ends and ``run(until:untilAttending:shouldStop:)``
    /// returns nil (the invite stays as saved): the owner has something to tell this invite
    /// (``attemptsReported(_:)``). A joiner already in the mailbox is attended to the end first.
    public var wake: Interruption?
    /// Attempts on this very invite that its joiners reported, counted before the next step.
    private let reported = Locked<[Rendezvous.Side]>([])
    private var hooks: InviteAttendantHooks
    /// The current use's connection, kept open from preparing it to attending it (one relay
    /// connection per use).
    private var live: RendezvousConnection?
    /// The joiner of the current use once they proved the code.
    private var request: JoinRequest?

    public init(
        attendant: InviteAttendant, relayURL: String, secret: InviteSecret, hooks: InviteAttendantHooks
    ) {
        self.attendant = attendant
        self.relayURL = relayURL
        self.secret = secret
        self.hooks = hooks
    }

    deinit { live?.disconnect() }

    /// Runs until the invite ends (its ending is returned), `until` passes or `shouldStop` says
    /// so (nil: the invite stays open, saved as it stands). `untilAttending`: stop once the
    /// current use's first message is in the mailbox (`eleven invite --detach`).
    @discardableResult
    public func run(
        until: ContinuousClock.Instant? = nil, untilAttending: Bool = false,
        shouldStop: () -> Bool = { false }
    ) throws -> InviteAttendant.Ending? {
        var actions = attendant.resume(now: hooks.clock.seconds())
        try hooks.save(attendant)
        // Whether the machine in memory is ahead of the saved one (a prepared mailbox only).
        var unsaved = false
        // Returns with the open invite saved as it stands (an owner that stops here, such as
        // `eleven invite --detach`, resumes from the prepared mailbox).
        func stopHere() throws -> InviteAttendant.Ending? {
            if unsaved { try hooks.save(attendant) }
            return nil
        }
        while true {
            var step: InviteAttendant.Action?
            for action in actions {
                switch action {
                case .allocate, .prepare, .attend: step = action
                default: try perform(action)
                }
            }
            guard let step else { return attendant.ending }
            let queued = reported.withLock { queue in
                defer { queue = [] }
                return queue
            }
            if !queued.isEmpty {
                // The step stays what it was unless the count ended the invite.
                try attemptsReported(queued)
                if let ending = attendant.ending { return ending }
            }
            if shouldStop() || interruption?.isInterrupted == true { return try stopHere() }
            if untilAttending, case .attend = step { return try stopHere() }
            guard let event = try perform(step: step, until: until) else { return try stopHere() }
            actions = attendant.handle(event, now: hooks.clock.seconds())
            if case .prepared = event {
                // Not saved: the saved `preparing` is as good to restart from. A restart claims
                // the nameplate again as the same side (derived from the seed) and publishes the
                // same first message (derived from the seed and the use), so the relay replays
                // whoever spoke meanwhile; the next save (the joiner's first message, before it
                // is looked at) records the connection. One sealed write per use fewer.
                unsaved = true
                if let use = attendant.use { onPrepared(use) }
                continue
            }
            unsaved = false
            try hooks.save(attendant)
            // Saved before the code is shown: a code shown is a code attended.
            if case .allocated(let nameplate, _) = event { try onAllocated(nameplate) }
        }
    }

    /// Counts attempts on this invite that joiners reported and this attendant never saw
    /// (``InviteAttendant/Event/attemptReported(side:)``), each saved before it is acted on.
    /// Call between runs; the invite may end (burned).
    public func attemptsReported(_ sides: [Rendezvous.Side]) throws {
        for side in sides where attendant.isOpen {
            let actions = attendant.handle(.attemptReported(side: side), now: hooks.clock.seconds())
            try hooks.save(attendant)
            for action in actions {
                switch action {
                case .allocate, .prepare, .attend: break
                default: try perform(action)
                }
            }
        }
    }

    /// Ends the invite now (the mailbox closed, the inviter told). `notice`: left on the
    /// nameplate for joiners who come later (an inviter who stopped attending).
    public func cancel(notice: InviteEnd? = nil) throws {
        let nameplate = attendant.nameplate
        let actions = attendant.handle(.cancel, now: hooks.clock.seconds())
        try hooks.save(attendant)
        for action in actions {
            if case .closeMailbox(let machine) = action {
                closeMailbox(machine, notice: notice)
            } else {
                try perform(action)
            }
        }
        if let nameplate, let notice {
            try perform(.leaveNotice(nameplate: nameplate, notice))
        }
    }

    /// Closes a use's mailbox (mood lonely); `notice` first, for a joiner who is in it already.
    private func closeMailbox(_ machine: RendezvousMachine, notice: InviteEnd?) {
        live?.disconnect()
        live = nil
        guard let connection = try? InviteAttendance.resume(relayURL: relayURL, machine: machine) else {
            return
        }
        if let notice {
            try? connection.send(phase: .ended, body: notice.notice)
            try? connection.waitUntilEchoed(timeout: .seconds(2))
        }
        connection.close(mood: .lonely, timeout: .seconds(2))
    }

    // MARK: Actions

    private func perform(_ action: InviteAttendant.Action) throws {
        switch action {
        case .closeMailbox(let machine):
            closeMailbox(machine, notice: nil)
        case .leaveNotice(let nameplate, let notice):
            // Best effort: a relay that cannot be reached leaves late joiners to time out.
            try? InviteAttendance.leaveEndNotice(
                relayURL: relayURL, nameplate: nameplate, end: notice, timeout: .seconds(5))
        case .report(let report):
            let request = self.request
            if case .ended = report { self.request = nil }
            try hooks.report(report, request)
        case .allocate, .prepare, .attend:
            preconditionFailure("a step is performed by perform(step:until:)")
        }
    }

    private func perform(step: InviteAttendant.Action, until: ContinuousClock.Instant?) throws
        -> InviteAttendant.Event?
    {
        switch step {
        case .allocate:
            let (connection, nameplate) = try InviteAttendance.allocate(
                relayURL: relayURL, timeout: .seconds(20))
            do {
                try InviteAttendance.publish(
                    on: connection, words: secret.words,
                    binding: JoinBinding(intent: .join, nameplate: nameplate),
                    seed: secret.seedBytes, use: 0, timeout: .seconds(20))
            } catch {
                connection.disconnect()
                throw error
            }
            live = connection
            return .allocated(nameplate, connection: connection.machine.replayingPeer())
        case .prepare(let nameplate, let use):
            request = nil
            // The side comes from the invite's seed, so an attendant killed while preparing
            // claims as the same side after a restart.
            let connection = RendezvousConnection(
                url: relayURL,
                machine: RendezvousMachine(
                    appID: JoinIntent.join.appID, side: Self.side(secret, use: use), start: .claim(nameplate))
            )
            do {
                try connection.start()
                try InviteAttendance.publish(
                    on: connection, words: secret.words,
                    binding: JoinBinding(intent: .join, nameplate: nameplate),
                    seed: secret.seedBytes, use: use, timeout: .seconds(20))
            } catch {
                connection.disconnect()
                throw error
            }
            live = connection
            // A joiner may already have spoken on this connection: a restart hears them again.
            return .prepared(connection: connection.machine.replayingPeer())
        case .attend(let nameplate, let use, let saved, let expiresAt, let admittingKeys):
            return try attend(
                nameplate: nameplate, use: use, saved: saved, expiresAt: expiresAt,
                admittingKeys: admittingKeys,
                until: until)
        default:
            preconditionFailure("not a step")
        }
    }

    private func attend(
        nameplate: Rendezvous.Nameplate, use: Int, saved: RendezvousMachine, expiresAt: Int64,
        admittingKeys: JoinerKeys?, until: ContinuousClock.Instant?
    ) throws -> InviteAttendant.Event? {
        let connection = try live ?? InviteAttendance.resume(relayURL: relayURL, machine: saved)
        live = nil
        let machine = connection.machine
        var deadline = ContinuousClock.now + .seconds(max(1, expiresAt - hooks.clock.seconds()))
        if let until { deadline = min(deadline, until) }
        var refusal: AttendantRefusal?
        var joinerSpoke = false
        if case .attending(_, _, _, true) = attendant.state { joinerSpoke = true }
        // A wake ends only a wait nobody has spoken in yet.
        let spoke = Locked(joinerSpoke)
        let stop = wake.map { wake in
            Interruption(parent: interruption) { wake.isInterrupted && !spoke.withLock { $0 } }
        }
        let outcome: InviteAttendance.Outcome
        do {
            outcome = try InviteAttendance.attendOne(
                on: connection, words: secret.words,
                binding: JoinBinding(intent: .join, nameplate: nameplate),
                seed: secret.seedBytes, use: use, published: true, inviterName: inviterName,
                deadline: deadline,
                keepOpenOnTimeout: true, stepTimeout: stepTimeout, announceWaiting: announceWaiting,
                joinerSpoke: joinerSpoke,
                onFirstPeerMessage: { machine in
                    // The attempt counts before the joiner's message is looked at, and from now
                    // on a restart must hear the joiner again from the start. Nothing is looked
                    // at that was not saved.
                    spoke.withLock { $0 = true }
                    _ = self.attendant.handle(
                        .joinerSpoke(connection: machine.replayingPeer()), now: self.hooks.clock.seconds())
                    return (try? self.hooks.save(self.attendant)) != nil
                },
                onCodeProven: { request, verifier in
                    self.request = request
                    // The confirmation verified: the attempt's failure goes back. Not saved
                    // here: the next event (the use taken, or the use's end) always saves, and a
                    // restart before it finds the failure still counted, the safe side, and gives
                    // it back when the relay replays the same joiner. One sealed write per join
                    // fewer.
                    _ = self.attendant.handle(.codeProven, now: self.hooks.clock.seconds())
                    // Earlier attempts of this joiner on this very invite that never reached it:
                    // counted once this use is over (the machine is mid-step now).
                    let missed = request.failedAttempts.filter {
                        $0.isTestedGuess
                            && self.attendant.isAbout($0, relay: self.relayURL, createdAt: self.createdAt)
                            && !self.attendant.hasSeen($0.side)
                    }
                    self.reported.withLock { $0 += missed.map(\.side) }
                    self.hooks.codeProven(request, verifier)
                },
                interruption: stop ?? interruption,
                decide: { request, verifier, joinerWaiting in
                    let decision = self.decide(
                        request, verifier, nameplate: nameplate, use: use, admittingKeys: admittingKeys,
                        joinerWaiting: joinerWaiting)
                    if case .refuse = decision.answer { refusal = decision.refusal }
                    return decision.answer
                })
        } catch {
            switch error {
            case .relay(.timedOut):
                // Nobody came: the owner's own deadline, or the invite's expiry (the machine
                // checks it).
                if let until, ContinuousClock.now >= until, hooks.clock.seconds() < expiresAt { return nil }
                return .idle
            case .relay(.rendezvous(.nameplateMoved)):
                // Killed in the instant between a joiner's first message and saving it: the
                // resumed claim made a fresh mailbox. Let that claim go and end the use.
                abandon(nameplate: nameplate, machine: machine)
                hooks.log("abandoned", "a join was interrupted by a restart")
                return .useEnded(.abandoned)
            case .relay(.rendezvous(.crowded)):
                // A third side in the invite's mailbox: the mailbox is spoiled for good (the
                // reference relay keeps the third side), so the invite ends.
                try cancel()
                throw error
            case .failed(let failure):
                hooks.log("abandoned", "a joiner stopped answering (\(failure.code))")
                return .useEnded(.abandoned)
            case .interrupted:
                // Nobody had spoken: the invite stays as saved, resumable.
                return nil
            default:
                throw error
            }
        }
        switch outcome {
        case .admitted:
            return .useEnded(.admitted)
        case .burned(let failure):
            return .useEnded(.wrongCode(failure))
        case .stopped:
            hooks.log("abandoned", "the joiner left, or attending was interrupted")
            return .useEnded(.abandoned)
        case .refused:
            switch refusal?.kind {
            case .declined: return .useEnded(.declined)
            case .invalidated(let ending): return .useEnded(.invalidated(ending))
            case .turnedAway, nil:
                if case .admitting = attendant.state { return .useEnded(.unconfirmed) }
                return .useEnded(.turnedAway)
            }
        }
    }

    private struct Decision {
        let answer: JoinDecision
        let refusal: AttendantRefusal?

        static func refuse(_ refusal: AttendantRefusal) -> Decision {
            Decision(answer: .refuse(reason: refusal.reason, message: refusal.message), refusal: refusal)
        }
    }

    /// The decision once a joiner proved the code: the owner's check, the use taken (saved),
    /// then the admission.
    private func decide(
        _ request: JoinRequest, _ verifier: [UInt8], nameplate: Rendezvous.Nameplate, use: Int,
        admittingKeys: JoinerKeys?, joinerWaiting: () -> Bool
    ) -> Decision {
        // Restarted while this use's joiner was being added: the same joiner (same keys,
        // replayed by the relay) is answered again; anyone else ends the use.
        if let admittingKeys {
            guard admittingKeys == request.publicKeys else { return .refuse(.interrupted) }
            return admit(request, nameplate, giveBack: false)
        }
        let refusal = hooks.ask.map { $0(request, joinerWaiting) } ?? hooks.check(request, verifier, use)
        if let refusal { return .refuse(refusal) }
        _ = attendant.handle(.admitting(joinerKeys: request.publicKeys), now: hooks.clock.seconds())
        do {
            try hooks.save(attendant)
        } catch {
            // Admit only a joiner whose use the state can record (not on a full disk).
            _ = attendant.handle(.admissionFailed, now: hooks.clock.seconds())
            return .refuse(.cannotRecord)
        }
        return admit(request, nameplate, giveBack: true)
    }

    private func admit(_ request: JoinRequest, _ nameplate: Rendezvous.Nameplate, giveBack: Bool) -> Decision
    {
        switch hooks.admit(request, nameplate) {
        case .granted(let grant):
            return Decision(answer: .approve(grant: grant), refusal: nil)
        case .failed(let refusal, let mayBeMember):
            // If in doubt the use stays taken, the safe side.
            if giveBack && !mayBeMember {
                _ = attendant.handle(.admissionFailed, now: hooks.clock.seconds())
                try? hooks.save(attendant)
            }
            return .refuse(refusal)
        }
    }

    private func abandon(nameplate: Rendezvous.Nameplate, machine: RendezvousMachine) {
        let connection = RendezvousConnection(
            url: relayURL,
            machine: RendezvousMachine(appID: machine.appID, side: machine.side, start: .claim(nameplate)))
        if (try? connection.start()) != nil { connection.close(mood: .lonely, timeout: .seconds(2)) }
    }

    /// The side of use `use`'s connection, derived from the invite's seed.
    static func side(_ secret: InviteSecret, use: Int) -> Rendezvous.Side {
        var info = Array("eleven-bot/side/v1".utf8)
        info += withUnsafeBytes(of: UInt64(use).littleEndian) { Array($0) }
        let side = HKDFSHA256.deriveKey(from: secret.seedBytes, info: info, byteCount: 5)
        return Rendezvous.Side(Hex.encode(side.unredactedBytes()))
    }
}
