/// A short-code invite's whole life as a pure machine: the nameplate, each use's mailbox, the
/// uses taken and the wrong codes counted, expiry, and how the invite ended. The bot
/// (`eleven-bot run`) and the inviter's own device (`eleven invite --short`, `eleven approve`)
/// drive this one machine through ``InviteAttendantDriver``; neither keeps counts of its own.
///
/// Events go in with the time (`now`, Unix seconds), actions come out; nothing here touches a
/// socket, a clock or a file. The driver saves the machine after every ``handle(_:now:)`` and
/// before it performs any returned action, so a process killed at any point resumes from what
/// was decided, never from before it (``resume(now:)``).
///
/// Counting (one rule for every attendant, `docs/join-protocol.md`):
/// - a joiner let in takes a use; so does one a person turned away (they proved the code, so the
///   use was spent on them);
/// - a joiner turned away for the attendant's own trouble (the space server unreachable, too
///   many joins at once, an interrupted admission) takes nothing and may try the code again;
/// - every joiner's attempt counts as a failure the moment their first message arrives, and the
///   failure is given back only once their confirmation verifies: a wrong code, a protocol
///   violation, or an exchange abandoned before the confirmation keeps it (so silence is not a
///   free guess); the failure that reaches `maxFailures` burns the invite;
/// - a joiner's use is taken before they are added to the space (``Event/admitting(joinerKeys:)``),
///   so a restart in between never gives that use to someone else.
public struct InviteAttendant: Codable, Sendable, Equatable {
    /// What the inviter asked for.
    public struct Policy: Codable, Sendable, Equatable {
        /// How many people may join.
        public let uses: Int
        /// Failed attempts tolerated over the invite's whole life (each one an online guess).
        public let maxFailures: Int
        /// Unix time from which the invite no longer works.
        public let expiresAt: Int64

        public static let defaultMaxFailures = 1
        public static let maxFailuresRange = 1...100

        public init(uses: Int, maxFailures: Int = defaultMaxFailures, expiresAt: Int64) {
            self.uses = max(1, uses)
            self.maxFailures = max(1, maxFailures)
            self.expiresAt = expiresAt
        }
    }

    /// How an invite ended.
    public enum Ending: String, Codable, Sendable, Equatable {
        case usedUp = "used_up"
        case burned
        case expired
        /// Withdrawn without being used up: the inviter lost the right to add members, never
        /// signed the invite, or asked to stop.
        case cancelled

        /// The notice left on the nameplate for late joiners (none for a cancelled invite: the
        /// mailbox is simply closed).
        public var notice: InviteEnd? {
            switch self {
            case .usedUp: .usedUp
            case .burned: .burned
            case .expired: .expired
            case .cancelled: nil
            }
        }
    }

    /// Where the invite stands. Each case carries exactly what is valid in it.
    public enum State: Codable, Sendable, Equatable {
        /// No nameplate yet.
        case allocating
        /// Use `use`'s mailbox is to be prepared: claim `nameplate` again and publish the use's
        /// first key-agreement message.
        case preparing(nameplate: Rendezvous.Nameplate, use: Int)
        /// Use `use`'s first message is in the mailbox; `connection` is the relay connection's
        /// state to resume from (saved so that a restart hears the joiner again from the start).
        /// `attempt`: a joiner spoke and their failure is counted until they prove the code.
        case attending(
            nameplate: Rendezvous.Nameplate, use: Int, connection: RendezvousMachine, attempt: Bool)
        /// A joiner proved the code and is being added: their use is taken already. After a
        /// restart only the same joiner (the same public keys, replayed by the relay) is answered.
        case admitting(
            nameplate: Rendezvous.Nameplate, use: Int, connection: RendezvousMachine, joinerKeys: JoinerKeys)
        /// Over. `nameplate` is where the ending's notice was left, if it had one.
        case ended(Ending, nameplate: Rendezvous.Nameplate?)
    }

    /// How one use ended, as the driver saw it.
    public enum UseOutcome: Equatable, Sendable {
        /// The joiner was let in (the use was taken at ``Event/admitting(joinerKeys:)``).
        case admitted
        /// A person turned the joiner away after they proved the code: the use is spent.
        case declined
        /// Turned away for the attendant's own trouble; the joiner may try again.
        case turnedAway
        /// A wrong code or a protocol violation.
        case wrongCode(JoinFailure)
        /// The joiner stopped answering, or a restart lost the mailbox: a joiner who spoke and
        /// never proved the code keeps their failure.
        case abandoned
        /// Adding the joiner failed and they may have become a member all the same: the use stays
        /// taken (the safe side).
        case unconfirmed
        /// The joiner was told the invite no longer works (its inviter was removed, …).
        case invalidated(Ending)
    }

    /// Something that happened to the invite.
    public enum Event: Equatable, Sendable {
        /// A nameplate was allocated and the first use's message published on `connection`.
        case allocated(Rendezvous.Nameplate, connection: RendezvousMachine)
        /// The current use's mailbox is ready: its first message is in it.
        case prepared(connection: RendezvousMachine)
        /// A joiner's first message arrived: their attempt counts as a failure from now on
        /// (saved before their message is looked at) until ``codeProven``. `connection` is saved to
        /// hear them again after a restart.
        case joinerSpoke(connection: RendezvousMachine)
        /// The joiner's confirmation verified: their failure is given back.
        case codeProven
        /// A joiner proved the code and is about to be added: take their use now.
        case admitting(joinerKeys: JoinerKeys)
        /// Adding that joiner failed and they are seen not to be a member: give the use back.
        case admissionFailed
        /// The current use ended.
        case useEnded(UseOutcome)
        /// The attended wait ran out with nobody there (check the expiry).
        case idle
        /// Stop attending (an inviter who lost the right, a record never signed, a person's
        /// cancel).
        case cancel
        /// A joiner who proved another code reported an attempt on this invite, from `side`,
        /// that failed after its confirmation went out (``JoinAttemptReport``). One this
        /// attendant never heard from was answered by someone else (a relay posing as the
        /// attendant, who tested a guess on it): it counts as a failure, and may burn the invite.
        case attemptReported(side: Rendezvous.Side)
    }

    /// What the driver does, in order. The last step action (`allocate`, `prepare`, `attend`)
    /// answers with an event; the others are fire-and-forget.
    public enum Action: Equatable, Sendable {
        /// Get a nameplate from the relay and publish use 0's first message; answer
        /// ``Event/allocated(_:connection:)``.
        case allocate
        /// Claim `nameplate` again and publish use `use`'s first message; answer
        /// ``Event/prepared(connection:)``.
        case prepare(nameplate: Rendezvous.Nameplate, use: Int)
        /// Resume `connection` and attend use `use` until a joiner is answered or `until` (Unix
        /// time); answer ``Event/useEnded(_:)`` or ``Event/idle``. `admittingKeys`: the joiner
        /// whose use was taken before a restart (only they are answered).
        case attend(
            nameplate: Rendezvous.Nameplate, use: Int, connection: RendezvousMachine, until: Int64,
            admittingKeys: JoinerKeys?)
        /// Close the mailbox of an abandoned use (mood lonely), so its joiner hears nobody attends.
        case closeMailbox(RendezvousMachine)
        /// Leave `notice` on `nameplate` for late joiners.
        case leaveNotice(nameplate: Rendezvous.Nameplate, InviteEnd)
        /// Tell the inviter (or the person at the terminal).
        case report(Report)
    }

    /// What the inviter hears.
    public enum Report: Equatable, Sendable {
        case joined
        case declined
        /// Turned away for the attendant's own trouble (the use was not spent).
        case turnedAway
        /// A wrong code; `failuresLeft` 0 means it burned the invite (``ended(_:)`` follows).
        case wrongCode(JoinFailure, failuresLeft: Int)
        /// A joiner's failed attempt this attendant never saw was reported and counted
        /// (``Event/attemptReported(side:)``); `failuresLeft` 0: the invite is burned.
        case attemptReported(failuresLeft: Int)
        case ended(Ending)
    }

    public let policy: Policy
    public private(set) var state: State
    /// Uses taken so far.
    public private(set) var taken: Int
    /// Failed attempts so far.
    public private(set) var failures: Int
    /// The sides of the joiners heard on this invite (the latest ``seenCapacity``), so that a
    /// reported attempt is told apart from one counted here already. Optional: invites saved
    /// before it have none.
    public private(set) var seenSides: [Rendezvous.Side]?
    static let seenCapacity = 256

    /// A new invite: allocate a nameplate first.
    public init(policy: Policy) {
        self.policy = policy
        state = .allocating
        taken = 0
        failures = 0
    }

    /// An invite restored from counts saved before this machine existed (older state files).
    public init(policy: Policy, state: State, taken: Int, failures: Int) {
        self.policy = policy
        self.state = state
        self.taken = max(0, taken)
        self.failures = max(0, failures)
    }

    // MARK: Reading

    public var usesLeft: Int { max(0, policy.uses - taken) }
    public var failuresLeft: Int { max(0, policy.maxFailures - failures) }

    public var nameplate: Rendezvous.Nameplate? {
        switch state {
        case .allocating: nil
        case .preparing(let nameplate, _), .attending(let nameplate, _, _, _),
            .admitting(let nameplate, _, _, _):
            nameplate
        case .ended(_, let nameplate): nameplate
        }
    }

    /// The current use (0 for the first); nil before a nameplate and once ended.
    public var use: Int? {
        switch state {
        case .allocating, .ended: nil
        case .preparing(_, let use), .attending(_, let use, _, _), .admitting(_, let use, _, _): use
        }
    }

    /// The saved relay connection of the current use.
    public var connection: RendezvousMachine? {
        switch state {
        case .attending(_, _, let connection, _), .admitting(_, _, let connection, _): connection
        case .allocating, .preparing, .ended: nil
        }
    }

    public var ending: Ending? {
        if case .ended(let ending, _) = state { return ending }
        return nil
    }

    public var isOpen: Bool { ending == nil }

    /// Whether a joiner on `side` was heard on this invite.
    public func hasSeen(_ side: Rendezvous.Side) -> Bool { seenSides?.contains(side) == true }

    private mutating func remember(_ side: Rendezvous.Side) {
        var sides = seenSides ?? []
        guard !sides.contains(side) else { return }
        sides.append(side)
        seenSides = Array(sides.suffix(Self.seenCapacity))
    }

    /// Whether `report` is about this invite: the same relay and nameplate, at a time the invite
    /// was open (`createdAt`: when it was made; five minutes either way for the joiner's clock).
    /// Nameplates are reused, so the time matters.
    public func isAbout(_ report: JoinAttemptReport, relay: String, createdAt: Int64) -> Bool {
        let skew: Int64 = 300
        return report.relay == relay && report.nameplate == nameplate && report.at >= createdAt - skew
            && report.at <= policy.expiresAt + skew
    }

    // MARK: Events

    /// What to do now: after a restart, or to begin. Ends an invite whose time is up.
    public mutating func resume(now: Int64) -> [Action] {
        if isOpen, now >= policy.expiresAt { return end(.expired) }
        return nextStep
    }

    /// Records `event` at `now` and says what to do next. Save the machine before acting.
    public mutating func handle(_ event: Event, now: Int64) -> [Action] {
        switch (state, event) {
        case (.ended, _):
            return []
        case (_, .cancel):
            return end(.cancelled)
        case (.allocating, .allocated(let nameplate, let connection)):
            state = .attending(nameplate: nameplate, use: 0, connection: connection, attempt: false)
        case (.preparing(let nameplate, let use), .prepared(let connection)):
            state = .attending(nameplate: nameplate, use: use, connection: connection, attempt: false)
        case (.attending(let nameplate, let use, _, let attempt), .joinerSpoke(let connection)):
            // Mid-step (the driver is attending): counted and saved before the joiner's message
            // is looked at, whatever it turns out to be.
            if !attempt { failures += 1 }
            if let side = connection.peerSide { remember(side) }
            state = .attending(nameplate: nameplate, use: use, connection: connection, attempt: true)
            return []
        case (.attending(let nameplate, let use, let connection, true), .codeProven):
            failures -= 1
            state = .attending(nameplate: nameplate, use: use, connection: connection, attempt: false)
            return []
        case (.attending(let nameplate, let use, let connection, let attempt), .admitting(let keys)):
            // Only a joiner who proved the code is admitted; their failure went back then.
            if attempt { failures -= 1 }
            // Taken before the member is added: see the type's comment.
            taken += 1
            state = .admitting(nameplate: nameplate, use: use, connection: connection, joinerKeys: keys)
            return []
        case (.admitting(let nameplate, let use, let connection, _), .admissionFailed):
            taken -= 1
            state = .attending(nameplate: nameplate, use: use, connection: connection, attempt: false)
            return []
        case (.attending(let nameplate, let use, _, let attempt), .useEnded(let outcome)):
            return endUse(outcome, nameplate: nameplate, use: use, attempt: attempt, now: now)
        case (.admitting(let nameplate, let use, _, _), .useEnded(let outcome)):
            return endUse(outcome, nameplate: nameplate, use: use, attempt: false, now: now)
        case (_, .attemptReported(let side)):
            // Counted between steps: the current step is asked again (or the invite ends).
            guard !hasSeen(side) else { return [] }
            remember(side)
            failures += 1
            let report = Action.report(.attemptReported(failuresLeft: failuresLeft))
            return failures >= policy.maxFailures ? [report] + end(.burned) : [report]
        case (_, .idle):
            break
        default:
            // An event that does not belong to this state (a driver's bug, or a late answer
            // for an earlier step): ignored, the step is asked again.
            break
        }
        return resume(now: now)
    }

    private mutating func endUse(
        _ outcome: UseOutcome, nameplate: Rendezvous.Nameplate, use: Int, attempt: Bool, now: Int64
    ) -> [Action] {
        let wasAdmitting: Bool
        if case .admitting = state { wasAdmitting = true } else { wasAdmitting = false }
        var reports: [Action] = []
        switch outcome {
        case .admitted:
            // The use was taken at `admitting`; an admission reported without it takes one now.
            if !wasAdmitting { taken += 1 }
            reports.append(.report(.joined))
        case .declined:
            if !wasAdmitting { taken += 1 }
            reports.append(.report(.declined))
        case .turnedAway:
            // A use taken for a joiner who was not let in goes back (they may try again).
            if wasAdmitting { taken -= 1 }
            reports.append(.report(.turnedAway))
        case .abandoned:
            if wasAdmitting { taken -= 1 }
            // A joiner who spoke and never proved the code keeps their failure.
            if attempt {
                reports.append(
                    .report(
                        .wrongCode(
                            .protocolError("the joiner stopped before proving the code"),
                            failuresLeft: failuresLeft)))
            }
        case .unconfirmed:
            if !wasAdmitting { taken += 1 }
            reports.append(.report(.turnedAway))
        case .wrongCode(let failure):
            if wasAdmitting { taken -= 1 }
            // Counted when the joiner spoke; one that did not speak first is counted now.
            if !attempt { failures += 1 }
            reports.append(.report(.wrongCode(failure, failuresLeft: failuresLeft)))
        case .invalidated(let ending):
            if wasAdmitting { taken -= 1 }
            state = .ended(ending, nameplate: nameplate)
            // The joiner was answered and the mailbox closed; later joiners find the notice.
            if let notice = ending.notice { reports.append(.leaveNotice(nameplate: nameplate, notice)) }
            return reports + [.report(.ended(ending))]
        }
        state = .preparing(nameplate: nameplate, use: use + 1)
        if failures >= policy.maxFailures { return reports + end(.burned) }
        if taken >= policy.uses { return reports + end(.usedUp) }
        return reports + resume(now: now)
    }

    /// Ends the invite: the current use's mailbox is closed (its joiner, if any, hears nobody
    /// attends), the notice left, the inviter told.
    private mutating func end(_ ending: Ending) -> [Action] {
        var actions: [Action] = []
        if let connection { actions.append(.closeMailbox(connection)) }
        let nameplate = self.nameplate
        state = .ended(ending, nameplate: nameplate)
        if let nameplate, let notice = ending.notice {
            actions.append(.leaveNotice(nameplate: nameplate, notice))
        }
        actions.append(.report(.ended(ending)))
        return actions
    }

    /// The step that moves the invite on from where it stands.
    private var nextStep: [Action] {
        switch state {
        case .allocating:
            [.allocate]
        case .preparing(let nameplate, let use):
            [.prepare(nameplate: nameplate, use: use)]
        case .attending(let nameplate, let use, let connection, _):
            [
                .attend(
                    nameplate: nameplate, use: use, connection: connection, until: policy.expiresAt,
                    admittingKeys: nil)
            ]
        case .admitting(let nameplate, let use, let connection, let keys):
            [
                .attend(
                    nameplate: nameplate, use: use, connection: connection, until: policy.expiresAt,
                    admittingKeys: keys)
            ]
        case .ended:
            []
        }
    }
}
