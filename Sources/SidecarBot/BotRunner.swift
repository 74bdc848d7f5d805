import ClientCore
import Foundation
import JoinProtocol
import PAKE
import SpaceModel
import Support
import Synchronization

/// `eleven-bot run`: reads the bot's inbox for invite requests and attends every open invite on
/// a thread of its own, with the same attendant code as `eleven approve`
/// (``InviteAttendance``). Every step is saved before the next, so the process may be killed at
/// any point: on restart each open invite resumes from its saved relay connection, and a joiner
/// the bot already added is answered again rather than added twice.
public final class BotRunner: Sendable {
    public let store: BotStore
    public let configuration: BotConfiguration
    /// The time the attendants, the policy and the log read.
    let clock: any WallClock
    let session: SpaceSession
    private let emit: @Sendable ([String: Any]) -> Void
    /// Joiners admitted at once are added to the chain together, in the order they proved their
    /// codes, one request per batch (one at a time under a lock made the p99 of
    /// `eleven-bench bot`: each waited for every POST ahead of it).
    private let admissions = AdmissionQueue()
    /// The notes to inviters (who joined, what ended) that workers send at once go in one
    /// request, as the admissions do.
    private let notes = NoteQueue()
    private let rosters = RosterCache()
    private let threadKeys = ThreadKeyCache()
    private let limiter: Locked<JoinRateLimiter>
    private let workers = Locked(Set<String>())
    /// Each invite worker's wake (``InviteAttendantDriver/wake``), to count an attempt reported on
    /// its invite while it waits.
    private let wakes = Locked([String: Interruption]())
    private let stopped = Atomic<Bool>(false)

    /// `log` receives one event per line for people and machines (never a secret).
    public init(
        store: BotStore, configuration: BotConfiguration, clock: any WallClock = SystemClock(),
        log: @escaping @Sendable ([String: Any]) -> Void = { _ in }
    ) throws(BotError) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        emit = log
        limiter = Locked(JoinRateLimiter(limit: configuration.joinsPerMinute))
        let identity = try store.identity()
        guard let saved = try store.space() else {
            throw BotError(
                .state, code: .notJoined,
                "The bot is not in a space yet: have a member invite it (`eleven invite --short`), then run "
                    + "`eleven-bot join CODE`.")
        }
        do {
            session = try SpaceSession(saved: saved, identity: identity)
        } catch {
            throw BotError(.unavailable, reporting: error.code, error.message)
        }
    }

    /// How many invites are being attended right now.
    public var activeInvites: Int { workers.withLock { $0.count } }

    /// Asks ``run()`` and every invite's worker to stop soon (their state is saved as it is).
    public func stop() {
        stopped.store(true, ordering: .relaxed)
    }

    private var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// Resumes every open invite, then reads the inbox until ``stop()``.
    public func run() {
        do {
            for invite in try store.openInvites() { startWorker(invite.id) }
        } catch {
            log("state_failed", ["message": "\(error)"])
        }
        var next = (try? store.inboxNext()) ?? 0
        var backoff = Backoff(first: Self.seconds(configuration.pollInterval), cap: 5)
        log("started", ["space": session.saved.space.base64URL, "member": session.saved.member.base64URL])
        while !isStopped {
            do {
                let page = try session.receiveNotes(since: next, rosters: rosters)
                if let roster = page.roster {
                    for note in page.notes {
                        guard handle(note, roster: roster) else {
                            throw BotError(
                                .state, code: .stateUnwritable,
                                "The bot cannot write its state; the note stays in the inbox for later.")
                        }
                        try? session.client.deleteNote(session.saved.space, id: note.inboxID)
                    }
                }
                if page.next != next {
                    try store.setInboxNext(page.next)
                    next = page.next
                }
                backoff.reset()
                if page.notes.isEmpty {
                    Thread.sleep(forTimeInterval: Self.seconds(configuration.pollInterval))
                }
            } catch {
                log("inbox_failed", ["message": "\(error)"])
                Thread.sleep(forTimeInterval: backoff.delay)
                backoff.grow()
            }
        }
    }

    // MARK: Inbox

    /// Acts on one note; false when the state could not be written (a full disk), so the note
    /// stays in the inbox and is read again.
    private func handle(_ received: ReceivedNote, roster: Roster) -> Bool {
        let now = clock.seconds()
        let note: AttendantNote
        switch received.content {
        case .failure(let error):
            // Forged, garbled or not for us: never acted on, never answered.
            record(
                "request_refused", nameplate: nil, "a note from \(received.sender) was refused: \(error)", now
            )
            return true
        case .success(let opened):
            note = opened
        }
        let id = "\(received.sender.base64URL):\(note.id)"
        switch note.type {
        case .inviteRequest:
            if let refusal = BotPolicy.checkRequest(
                note, sender: received.sender, roster: roster, now: now, configuration: configuration)
            {
                if refusal.reason == .stale {
                    record("request_dropped", nameplate: nil, "a stale invite request was dropped", now)
                    return true
                }
                record(
                    "request_refused", nameplate: nil, "an invite request was refused: \(refusal.message)",
                    now)
                tell(
                    received.sender,
                    .notice(.inviteRefused, id: note.id, reason: refusal.reason, message: refusal.message),
                    roster: roster)
                return true
            }
            var random = SystemRandom()
            let invite = BotInvite(
                id: id, noteID: note.id, inviter: received.sender,
                inviterName: roster.members[received.sender].flatMap { $0.name.isEmpty ? nil : $0.name },
                secret: InviteSecret(
                    words: note.words ?? "", seed: SecretBytes(randomCount: 32, using: &random)),
                relay: configuration.relay, ask: note.ask ?? false, createdAt: now,
                attendant: InviteAttendant(
                    policy: .init(
                        uses: note.uses ?? 1, maxFailures: note.maxFailures ?? 1,
                        expiresAt: note.expiresAt ?? now)))
            do {
                if try store.save(invite, onlyIfNew: true) {
                    record(
                        "invite_accepted", nameplate: nil, "an invite request from \(received.sender)", now)
                }
            } catch {
                return false
            }
            startWorker(id)
        case .inviteRecord:
            guard let signed = note.invite, let invite = try? store.invite(id),
                invite.state == .awaitingRecord
            else { return true }
            if let refusal = BotPolicy.checkRecord(
                signed, for: invite, roster: roster, memo: rosters.signatures)
            {
                // The invite's worker ends it (the attendant machine has one writer).
                _ = try? store.update(id) { $0.cancelRequested = true }
                record("request_refused", nameplate: invite.nameplate, refusal.message, now)
                tell(
                    received.sender,
                    .notice(.inviteRefused, id: note.id, reason: refusal.reason, message: refusal.message),
                    roster: roster)
                return true
            }
            do {
                try store.update(id) { invite in invite.record = signed }
            } catch {
                return false
            }
        case .approval:
            // An answer for an earlier use (a bot restarted mid-question asks again) is stale.
            _ = try? store.update(id) { invite in
                if invite.state == .open, note.use == invite.use {
                    invite.approval = note.approve
                    invite.approvalUse = note.use
                }
            }
        case .attemptReported:
            // A member who joined another way (a full-length link) reporting an attempt of theirs;
            // signed by them and checked against the roster like every note.
            guard let report = note.attemptReport else { return true }
            let name = roster.members[received.sender]?.name ?? ""
            attemptsReported([report], by: name, joinedWith: nil)
        case .inviteReady, .inviteRefused, .inviteBurned, .inviteEnded, .approvalNeeded, .joined:
            break
        }
        return true
    }

    // MARK: Invites

    private func startWorker(_ id: String) {
        guard workers.withLock({ $0.insert(id).inserted }) else { return }
        Thread.detachNewThread { [self] in
            attend(id)
            workers.withLock { _ = $0.remove(id) }
        }
    }

    /// What one invite's worker remembers between its hooks (its thread only).
    private final class Worker {
        /// Why the current use's joiner was turned away, for the history.
        var refusal: AttendantRefusal?
        var readySent = false
        /// What ends a cancelled invite, for the history.
        var cancelKind = ("ended", "the invite was cancelled")
    }

    /// Attends one invite until it ends (or the bot stops) with the attendant machine every
    /// attendant shares (``InviteAttendantDriver``); only the policy, the record and the
    /// inviter's notes are the bot's own.
    private func attend(_ id: String) {
        var backoff = Backoff(first: 0.2, cap: 5)
        let worker = Worker()
        // An ended invite's wake goes with it: a bot that runs for months attends many invites.
        defer { _ = wakes.withLock { $0.removeValue(forKey: id) } }
        while !isStopped {
            // The wake is in place before the invite is read: a report saved after this read
            // wakes this run.
            let wake = Interruption()
            wakes.withLock { $0[id] = wake }
            guard let invite = try? store.invite(id), invite.attendant.isOpen else { return }
            let driver = self.driver(invite, worker)
            driver.wake = wake
            do {
                if !invite.reportedSides.isEmpty {
                    // Counted (and saved) before they leave the list: a restart in between
                    // counts nothing twice (the machine remembers the sides it counted).
                    try driver.attemptsReported(invite.reportedSides)
                    try store.update(id) { $0.reportedSides.removeAll(where: invite.reportedSides.contains) }
                    if !driver.attendant.isOpen { return }
                }
                if invite.record == nil, let nameplate = invite.attendant.nameplate {
                    if !worker.readySent { try sendReady(invite, nameplate, worker) }
                    if clock.seconds() > invite.createdAt + configuration.recordTimeout {
                        worker.cancelKind = ("cancelled", "the inviter never signed the invite")
                        try driver.cancel()
                        return
                    }
                }
                if invite.cancelRequested {
                    try driver.cancel()
                    return
                }
                // A joiner who comes before the record (or whose inviter was removed before
                // sending it) is answered rather than left waiting; the record's deadline
                // brings the worker back here.
                let until =
                    invite.record == nil
                    ? ContinuousClock.now
                        + .seconds(max(1, invite.createdAt + configuration.recordTimeout - clock.seconds()))
                    : nil
                if try driver.run(until: until, shouldStop: { isStopped }) != nil { return }
                backoff.reset()
            } catch {
                log("invite_retry", ["nameplate": invite.nameplate ?? "", "message": "\(error)"])
                Thread.sleep(forTimeInterval: backoff.delay)
                backoff.grow()
            }
        }
    }

    private func sendReady(_ invite: BotInvite, _ nameplate: Rendezvous.Nameplate, _ worker: Worker) throws {
        var ready = AttendantNote(.inviteReady, id: invite.noteID)
        ready.nameplate = nameplate.value
        try session.send(ready, to: try member(invite.inviter), via: notes)
        worker.readySent = true
    }

    private func driver(_ invite: BotInvite, _ worker: Worker) -> InviteAttendantDriver {
        let id = invite.id
        var hooks = InviteAttendantHooks(
            save: { [store] attendant in
                guard try store.update(id, { $0.attendant = attendant }) != nil else {
                    throw BotError(.state, code: .stateMissing, "the invite is gone from the bot's state")
                }
            },
            check: { [unowned self] request, verifier, use in
                worker.refusal = check(id, request, verifier, use: use)
                return worker.refusal
            },
            admit: { [unowned self] request, _ in admit(id, request, worker) },
            report: { [unowned self] report, request in tell(report, request, id: id, worker) },
            clock: clock)
        hooks.log = { [unowned self] kind, detail in
            record(kind, nameplate: (try? store.invite(id))?.nameplate, detail, clock.seconds())
        }
        hooks.codeProven = { [unowned self] request, _ in
            attemptsReported(request.failedAttempts, by: request.displayName, joinedWith: id)
        }
        let driver = InviteAttendantDriver(
            attendant: invite.attendant, relayURL: invite.relay, secret: invite.secret, hooks: hooks)
        driver.inviterName = invite.inviterName
        driver.stepTimeout = configuration.stepTimeout
        driver.announceWaiting = invite.ask
        driver.onAllocated = { [unowned self] nameplate in
            log("invite_ready", ["nameplate": nameplate.value])
            try sendReady(invite, nameplate, worker)
        }
        driver.createdAt = invite.createdAt
        return driver
    }

    /// Whether a joiner who proved the code may come in: the policy, the inviter's answer when
    /// they asked to be asked, the rate limit. The attendant takes the use next, then
    /// ``admit(_:_:_:)`` adds them.
    private func check(_ id: String, _ request: JoinRequest, _ verifier: [UInt8], use: Int)
        -> AttendantRefusal?
    {
        // The roster as last verified, without a request per joiner (`GET …/events` for the
        // events of others since): the admission itself signs its event onto that chain, and
        // the server takes it only on the chain's head, so a removal or a change of rights made
        // meanwhile refuses it and the chain is read again (``admit(_:_:_:)`` then refuses the
        // joiner for it, as here). Read afresh where the roster decides more than the admission:
        // whom to ask (policy "ask"), and whether to wait for a record not here yet.
        guard var invite = try? store.invite(id),
            let roster = (invite.ask || invite.record == nil ? nil : rosters.latest)
                ?? (try? rosters.refresh(session).roster)
        else {
            return BotRefusal(.unavailable, "The space's server cannot be reached; try again soon.")
                .attendant
        }
        if invite.cancelRequested {
            return BotRefusal(.revoked, "The invite was withdrawn; ask for a new one.").attendant
        }
        // A joiner quicker than the inviter's signed record (on its way through the inbox) waits
        // for it a little.
        let recordDeadline = ContinuousClock.now + .seconds(10)
        while invite.record == nil, ContinuousClock.now < recordDeadline, !isStopped,
            BotPolicy.checkInviter(invite.inviter, roster: roster) == nil
        {
            Thread.sleep(forTimeInterval: 0.02)
            invite = (try? store.invite(id)) ?? invite
        }
        if let r = BotPolicy.checkAdmission(
            invite, roster: roster, now: clock.seconds(), memo: rosters.signatures)
        {
            return r.attendant
        }
        if invite.ask {
            var ask = AttendantNote(.approvalNeeded, id: invite.noteID)
            ask.name = request.displayName
            ask.verification = VerificationWords.words(for: verifier).joined(separator: " ")
            ask.use = use
            guard let inviter = roster.members[invite.inviter],
                (try? session.send(ask, to: inviter, via: notes)) != nil
            else {
                return BotRefusal(.unavailable, "The inviter cannot be asked right now.").attendant
            }
            let until = ContinuousClock.now + configuration.askTimeout
            while invite.approvalUse != use || invite.approval == nil, ContinuousClock.now < until, !isStopped
            {
                Thread.sleep(forTimeInterval: 0.05)
                invite = (try? store.invite(id)) ?? invite
            }
            guard invite.approvalUse == use, invite.approval == true else {
                return BotRefusal(.declined, "The inviter declined.").attendant
            }
        }
        guard limiter.withLock({ $0.allow(now: .now) }) else {
            return BotRefusal(.busy, "Too many people are joining right now; try again in a minute.")
                .attendant
        }
        return nil
    }

    /// Adds the joiner (or finds them added already, for the same keys and invite) and makes
    /// their grant. A joiner seen not to be a member after a failure gets their use back; if in
    /// doubt it stays taken, the safe side.
    private func admit(_ id: String, _ request: JoinRequest, _ worker: Worker) -> AttendantAdmission {
        guard let invite = try? store.invite(id), let signed = invite.record else {
            let refusal = BotRefusal(.unavailable, "The invite is not ready yet; try again in a moment.")
                .attendant
            worker.refusal = refusal
            return .failed(refusal, mayBeMember: false)
        }
        do {
            let (grant, _) = try session.admit(
                request: request, invite: signed, carryInvite: true, rosters: rosters, admissions: admissions,
                keys: threadKeys)
            return .granted(grant.encoded())
        } catch  where error.typedCode == .alreadyMember {
            // Their device is in the space already: nothing changes and the use is not spent.
            let refusal = BotRefusal(
                .alreadyMember, "You are already in \(session.saved.name); nothing changed."
            )
            .attendant
            worker.refusal = refusal
            return .failed(refusal, mayBeMember: false)
        } catch {
            let roster = try? rosters.refresh(session).roster
            let seenNotMember =
                (try? request.publicKeys.keys()).map { keys in
                    roster.map { $0.currentMember(signingKey: keys.signing)?.keys != keys } ?? false
                } ?? false
            // ``check(_:_:_:use:)`` decided on the roster as last verified; the chain read again
            // says whether the invite stopped working meanwhile (its inviter removed).
            let refusal =
                (roster.flatMap {
                    BotPolicy.checkInviteWorks(
                        signed, inviter: invite.inviter, roster: $0, memo: rosters.signatures)
                }
                ?? BotRefusal(.unavailable, "The bot could not add you to the space: \(error.message)"))
                .attendant
            worker.refusal = refusal
            return .failed(refusal, mayBeMember: !seenNotMember)
        }
    }

    /// A joiner who proved the code of invite `current` (or a member who joined by link: no
    /// current invite) reported earlier attempts of theirs that failed after their code went out
    /// (``JoinAttemptReport``). One on an invite of the bot's
    /// that the bot never heard from was answered by someone else: the inviter is told, and a
    /// tested guess counts as a failure on that invite (its worker counts it; the current
    /// invite's own driver counts its own). The report came through the confirmed channel of a
    /// code the bot issued, so only someone given a code can send one; nameplates are public,
    /// and such a person could burn an invite by speaking on its nameplate anyway.
    private func attemptsReported(
        _ reports: [JoinAttemptReport], by joiner: String, joinedWith current: String?
    ) {
        guard !reports.isEmpty else { return }
        let now = clock.seconds()
        let name = joiner.isEmpty ? "Someone" : joiner
        let earliest = reports.map(\.at).min() ?? now
        let invites = (try? store.invites(expiringAfter: earliest - 300)) ?? []
        for report in reports {
            let when = Self.time(report.at)
            guard
                let invite = invites.first(where: {
                    $0.attendant.isAbout(report, relay: $0.relay, createdAt: $0.createdAt)
                })
            else {
                record(
                    "attempt_reported", nameplate: report.nameplate.value,
                    "\(name) reported a code that did not check out (\(report.outcome)) at \(when) on a "
                        + "nameplate of no invite of the bot's", now)
                continue
            }
            // An attempt the bot heard itself was counted (or proved) then.
            guard !invite.attendant.hasSeen(report.side) else { continue }
            let counted = report.isTestedGuess && invite.attendant.isOpen
            record(
                "attempt_reported", nameplate: report.nameplate.value,
                "\(name) reported an attempt (\(report.outcome)) at \(when) the bot never saw: someone may "
                    + "have tried to intercept the code\(counted ? "; counted as a failed attempt" : "")", now
            )
            if counted, invite.id != current {
                _ = try? store.update(invite.id) { $0.reportedSides.append(report.side) }
                _ = wakes.withLock { $0[invite.id] }?.interrupt()
            }
            var note = AttendantNote(.attemptReported, id: invite.noteID)
            note.name = joiner
            note.nameplate = report.nameplate.value
            note.reason = report.outcome
            note.message =
                "\(name)'s device says your invite \(invite.code ?? "") did not check out for them at \(when) "
                + "and the bot never heard from them: someone may have tried to intercept the code."
                + (counted ? " It counts as a failed attempt on that invite." : "")
            tell(invite.inviter, note, roster: nil)
        }
    }

    static func time(_ at: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(at)))
    }

    /// The history line and the inviter's note for what the attendant reports.
    private func tell(_ report: InviteAttendant.Report, _ request: JoinRequest?, id: String, _ worker: Worker)
    {
        guard let invite = try? store.invite(id) else { return }
        let nameplate = invite.nameplate
        let now = clock.seconds()
        switch report {
        case .joined:
            let name = (request?.displayName).flatMap { $0.isEmpty ? nil : $0 } ?? "Someone"
            // No note to the inviter: the `member_added` event just appended carries their signed
            // invite record, and `eleven bot notes` reads who joined from the member list
            // (`InviteJoin`). A sealed, signed note per join repeated it at the cost of a fifth of
            // the whole join (issue #23).
            record("joined", nameplate: nameplate, "\(name) joined", now)
        case .declined, .turnedAway:
            let why = worker.refusal?.message ?? "declined"
            record("refused", nameplate: nameplate, "a joiner was turned away: \(why)", now)
        case .wrongCode(let failure, _):
            record("wrong_code", nameplate: nameplate, "someone tried a wrong code (\(failure.code))", now)
        case .attemptReported:
            record(
                "wrong_code", nameplate: nameplate, "a joiner's attempt the bot never saw was counted", now)
        case .ended(.usedUp):
            record("used_up", nameplate: nameplate, "every use of the invite was taken", now)
        case .ended(.burned):
            record("burned", nameplate: nameplate, "the invite was burned", now)
            tell(
                invite.inviter,
                .notice(
                    .inviteBurned, id: invite.noteID, reason: .burned,
                    message:
                        "Someone tried a wrong code for your invite \(invite.code ?? ""); it has been "
                        + "cancelled. Run `eleven invite --short` to make a new one."), roster: nil)
        case .ended(.expired):
            record("expired", nameplate: nameplate, "the invite expired", now)
            tell(
                invite.inviter,
                .notice(.inviteEnded, id: invite.noteID, reason: .expired, message: "Your invite expired."),
                roster: nil)
        case .ended(.cancelled):
            if let refusal = worker.refusal, case .invalidated = refusal.kind {
                record("ended", nameplate: nameplate, refusal.message, now)
            } else {
                record(worker.cancelKind.0, nameplate: nameplate, worker.cancelKind.1, now)
            }
        }
    }

    // MARK: Helpers

    private func member(_ id: MemberID) throws -> MemberRecord {
        guard let record = try rosters.refresh(session).roster.members[id] else {
            throw BotError(.state, code: .notMember, "member \(id) left the space")
        }
        return record
    }

    private func tell(_ recipient: MemberID, _ note: AttendantNote, roster: Roster?) {
        guard let record = roster?.members[recipient] ?? (try? member(recipient)) else { return }
        try? session.send(note, to: record, via: notes)
    }

    private func record(_ kind: String, nameplate: String?, _ detail: String, _ at: Int64) {
        try? store.log(kind, nameplate: nameplate, detail, at: at)
        var fields: [String: Any] = ["detail": detail]
        if let nameplate { fields["nameplate"] = nameplate }
        log(kind, fields)
    }

    private func log(_ event: String, _ fields: [String: Any]) {
        var line = fields
        line["event"] = event
        line["at"] = clock.seconds()
        emit(line)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
