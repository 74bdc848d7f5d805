import ClientCore
import Foundation
import PAKE
import SpaceModel
import Synchronization

/// `eleven-bot run`: reads the bot's inbox for invite requests and attends every open invite on
/// a thread of its own, with the same attendant code as `eleven approve`
/// (``InviteAttendance``). Every step is saved before the next, so the process may be killed at
/// any point: on restart each open invite resumes from its saved relay connection, and a joiner
/// the bot already added is answered again rather than added twice.
public final class BotRunner: Sendable {
    public let store: BotStore
    public let configuration: BotConfiguration
    let session: SpaceSession
    private let emit: @Sendable ([String: Any]) -> Void
    /// Joiners admitted at once are added to the chain together, in the order they proved their
    /// codes, one request per batch (one at a time under a lock made the p99 of
    /// `eleven-bench bot`: each waited for every POST ahead of it).
    private let admissions = AdmissionQueue()
    private let rosters = RosterCache()
    private let threadKeys = ThreadKeyCache()
    private let limiter: Mutex<JoinRateLimiter>
    private let workers = Mutex(Set<String>())
    private let stopped = Atomic<Bool>(false)

    /// `log` receives one event per line for people and machines (never a secret).
    public init(
        store: BotStore, configuration: BotConfiguration,
        log: @escaping @Sendable ([String: Any]) -> Void = { _ in }
    ) throws(BotError) {
        self.store = store
        self.configuration = configuration
        emit = log
        limiter = Mutex(JoinRateLimiter(limit: configuration.joinsPerMinute))
        let identity = try store.identity()
        guard let saved = try store.space() else {
            throw BotError(
                .state, code: "not_joined",
                "The bot is not in a space yet: have a member invite it (`eleven invite --short`), then run "
                    + "`eleven-bot join CODE`.")
        }
        do {
            session = try SpaceSession(saved: saved, identity: identity)
        } catch {
            throw BotError(.unavailable, code: error.code, error.message)
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
        var backoff = configuration.pollInterval
        log("started", ["space": session.saved.space.base64URL, "member": session.saved.member.base64URL])
        while !isStopped {
            do {
                let page = try session.receiveNotes(since: next, rosters: rosters)
                if let roster = page.roster {
                    for note in page.notes {
                        guard handle(note, roster: roster) else {
                            throw BotError(
                                .state, code: "state_unwritable",
                                "The bot cannot write its state; the note stays in the inbox for later.")
                        }
                        try? session.client.deleteNote(session.saved.space, id: note.inboxID)
                    }
                }
                if page.next != next {
                    try store.setInboxNext(page.next)
                    next = page.next
                }
                backoff = configuration.pollInterval
                if page.notes.isEmpty {
                    Thread.sleep(forTimeInterval: Self.seconds(configuration.pollInterval))
                }
            } catch {
                log("inbox_failed", ["message": "\(error)"])
                Thread.sleep(forTimeInterval: Self.seconds(backoff))
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    // MARK: Inbox

    /// Acts on one note; false when the state could not be written (a full disk), so the note
    /// stays in the inbox and is read again.
    private func handle(_ received: ReceivedNote, roster: Roster) -> Bool {
        let now = Self.now()
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
                relay: configuration.relay, nameplate: nil, machine: nil, use: 0, usesLeft: note.uses ?? 1,
                uses: note.uses ?? 1, failures: 0, maxFailures: note.maxFailures ?? 1, ask: note.ask ?? false,
                createdAt: now, expiresAt: note.expiresAt ?? now, record: nil, state: .allocating,
                approval: nil)
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
            if let refusal = BotPolicy.checkRecord(signed, for: invite, roster: roster) {
                _ = try? store.update(id) { $0.state = .cancelled }
                record("request_refused", nameplate: invite.nameplate, refusal.message, now)
                tell(
                    received.sender,
                    .notice(.inviteRefused, id: note.id, reason: refusal.reason, message: refusal.message),
                    roster: roster)
                return true
            }
            do {
                try store.update(id) { invite in
                    invite.record = signed
                    invite.state = .open
                }
            } catch {
                return false
            }
        case .approval:
            // An answer for an earlier use (a bot restarted mid-question asks again) is stale.
            _ = try? store.update(id) { invite in
                if invite.state == .open, note.use == invite.use { invite.approval = note.approve }
            }
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

    /// Attends one invite until it ends (or the bot stops): allocate, hand the nameplate back,
    /// wait for the signed record, then serve its uses one after another.
    private func attend(_ id: String) {
        var backoff = 0.2
        var readySent = false
        while !isStopped {
            guard let invite = try? store.invite(id), invite.state.isOpen else { return }
            let now = Self.now()
            if now > invite.expiresAt {
                end(invite, .expired, kind: "expired", "the invite expired", notify: .inviteEnded)
                return
            }
            do {
                switch invite.state {
                case .allocating:
                    try allocate(invite)
                case .awaitingRecord:
                    if !readySent {
                        var ready = AttendantNote(.inviteReady, id: invite.noteID)
                        ready.nameplate = invite.nameplate
                        try session.send(ready, to: try member(invite.inviter))
                        readySent = true
                    }
                    if now > invite.createdAt + configuration.recordTimeout {
                        end(
                            invite, .cancelled, kind: "cancelled", "the inviter never signed the invite",
                            notify: nil)
                        return
                    }
                    // A joiner who comes before the record (or whose inviter was removed before
                    // sending it) is answered rather than left waiting.
                    try serveOneUse(invite, until: invite.createdAt + configuration.recordTimeout)
                case .open:
                    try serveOneUse(invite)
                case .usedUp, .burned, .expired, .cancelled:
                    return
                }
                backoff = 0.2
            } catch {
                log("invite_retry", ["nameplate": invite.nameplate ?? "", "message": "\(error)"])
                Thread.sleep(forTimeInterval: backoff)
                backoff = min(backoff * 2, 5)
            }
        }
    }

    private func allocate(_ invite: BotInvite) throws {
        let (connection, nameplate) = try InviteAttendance.allocate(
            relayURL: invite.relay, timeout: .seconds(20))
        defer { connection.disconnect() }
        try InviteAttendance.publish(
            on: connection, words: invite.secret.words,
            binding: JoinBinding(intent: .join, nameplate: nameplate),
            seed: invite.secret.seedBytes, use: invite.use, timeout: .seconds(20))
        let machine = connection.machine.replayingPeer()
        try store.update(invite.id) { saved in
            saved.nameplate = nameplate.value
            saved.machine = machine
            saved.state = .awaitingRecord
        }
        log("invite_ready", ["nameplate": nameplate.value])
    }

    /// A use's mailbox: the same nameplate claimed again with a side derived from the invite's
    /// seed, so a bot killed while preparing it claims as the same side after a restart. The
    /// connection stays open for the use (what a restart resumes from is saved before it is
    /// attended), so each use costs one relay connection, not two.
    private func prepareUse(_ invite: BotInvite, nameplate: Rendezvous.Nameplate) throws
        -> RendezvousConnection
    {
        let connection = RendezvousConnection(
            url: invite.relay,
            machine: RendezvousMachine(
                appID: JoinIntent.join.appID, side: Self.side(invite, use: invite.use),
                start: .claim(nameplate)))
        do {
            try connection.start()
            try InviteAttendance.publish(
                on: connection, words: invite.secret.words,
                binding: JoinBinding(intent: .join, nameplate: nameplate),
                seed: invite.secret.seedBytes, use: invite.use, timeout: .seconds(20))
            // A joiner may already have spoken on this connection: a restart hears them again.
            let machine = connection.machine.replayingPeer()
            try store.update(invite.id) { $0.machine = machine }
            return connection
        } catch {
            connection.disconnect()
            throw error
        }
    }

    static func side(_ invite: BotInvite, use: Int) -> Rendezvous.Side {
        var info = Array("eleven-bot/side/v1".utf8)
        info += withUnsafeBytes(of: UInt64(use).littleEndian) { Array($0) }
        let side = HKDFSHA256.deriveKey(from: invite.secret.seedBytes, info: info, byteCount: 5)
        return Rendezvous.Side(side.unredactedBytes().map { String(format: "%02x", $0) }.joined())
    }

    /// A bot killed in the instant between a joiner's first message and saving it finds the
    /// nameplate gone (its resumed claim made a fresh one): let that claim go and end the use.
    private func abandonVanishedNameplate(
        _ invite: BotInvite, machine: RendezvousMachine, nameplate: Rendezvous.Nameplate
    ) {
        let connection = RendezvousConnection(
            url: invite.relay,
            machine: RendezvousMachine(appID: machine.appID, side: machine.side, start: .claim(nameplate)))
        if (try? connection.start()) != nil { connection.close(mood: .lonely, timeout: .seconds(2)) }
        advance(invite, consumed: false)
        record("abandoned", nameplate: nameplate.value, "a join was interrupted by a restart", Self.now())
    }

    private func serveOneUse(_ invite: BotInvite, until: Int64? = nil) throws {
        guard let nameplateText = invite.nameplate else {
            throw BotError(.state, code: "no_nameplate", "no nameplate")
        }
        let nameplate = Rendezvous.Nameplate(nameplateText)
        let connection: RendezvousConnection
        if let machine = invite.machine {
            connection = try InviteAttendance.resume(relayURL: invite.relay, machine: machine)
        } else {
            connection = try prepareUse(invite, nameplate: nameplate)
        }
        let machine = connection.machine
        let deadline =
            ContinuousClock.now + .seconds(max(1, min(invite.expiresAt, until ?? .max) - Self.now()))
        let decision = Decision()
        let outcome: InviteAttendance.Outcome
        do {
            outcome = try InviteAttendance.attendOne(
                on: connection, words: invite.secret.words,
                binding: JoinBinding(intent: .join, nameplate: nameplate),
                seed: invite.secret.seedBytes, use: invite.use, published: true,
                inviterName: invite.inviterName,
                deadline: deadline, keepOpenOnTimeout: true, stepTimeout: configuration.stepTimeout,
                announceWaiting: invite.ask,
                onFirstPeerMessage: { machine in
                    // From now on a restart must hear the joiner again from the start.
                    _ = try? self.store.update(invite.id) { $0.machine = machine.replayingPeer() }
                },
                decide: { request, verifier in self.decide(invite.id, request, verifier, decision) })
        } catch {
            switch error {
            case .relay(.timedOut):
                return  // nobody came before the deadline; the expiry check ends the invite
            case .relay(.rendezvous(.protocolViolation(let what))) where what.contains("another mailbox"):
                abandonVanishedNameplate(invite, machine: machine, nameplate: nameplate)
                return
            case .failed(let failure):
                // A joiner who stopped answering: this use ends, the invite goes on.
                advance(invite, consumed: false)
                record(
                    "abandoned", nameplate: nameplateText, "a joiner stopped answering (\(failure.code))",
                    Self.now())
                return
            default:
                throw error
            }
        }
        let admitted = decision.admitted
        let now = Self.now()
        switch outcome {
        case .admitted(let request):
            let after = advance(invite, consumed: true)
            let name = request.displayName.isEmpty ? "Someone" : request.displayName
            record("joined", nameplate: nameplateText, "\(name) joined", now)
            var joined = AttendantNote(.joined, id: invite.noteID)
            joined.name = request.displayName
            joined.member = admitted
            joined.message = "\(name) joined \(session.saved.name) with your invite \(invite.code ?? "")."
            // The roster admit just refreshed names the inviter: no request for it.
            if let inviter = rosters.latest?.members[invite.inviter] ?? (try? member(invite.inviter)) {
                try? session.send(joined, to: inviter)
            }
            if after?.state == .usedUp {
                record("used_up", nameplate: nameplateText, "every use of the invite was taken", now)
                leaveEndNotice(invite, .usedUp)
            }
        case .refused:
            let refusal = decision.refusal ?? BotRefusal("declined", "declined")
            record("refused", nameplate: nameplateText, "a joiner was turned away: \(refusal.message)", now)
            if refusal.reason == "revoked" || refusal.reason == "expired" || refusal.reason == "used_up" {
                // The mailbox is closed and the nameplate released already.
                end(
                    invite, refusal.reason == "expired" ? .expired : .cancelled, kind: "ended",
                    refusal.message,
                    notify: nil, closeMailbox: false)
            } else {
                advance(invite, consumed: false)
            }
        case .burned(let failure):
            let after = try store.update(invite.id) { saved in
                saved.failures += 1
                saved.use += 1
                saved.machine = nil
                saved.approval = nil
                if saved.failures >= saved.maxFailures { saved.state = .burned }
            }
            record(
                "wrong_code", nameplate: nameplateText, "someone tried a wrong code (\(failure.code))", now)
            if after?.state == .burned {
                record("burned", nameplate: nameplateText, "the invite was burned", now)
                leaveEndNotice(invite, .burned)
                tell(
                    invite.inviter,
                    .notice(
                        .inviteBurned, id: invite.noteID, reason: "burned",
                        message:
                            "Someone tried a wrong code for your invite \(invite.code ?? ""); it has been "
                            + "cancelled. Run `eleven invite --short` to make a new one."), roster: nil)
            }
        }
    }

    /// The attendant's decision once a joiner proved the code: the policy, the inviter's answer
    /// when they asked to be asked, then the admission itself (one at a time, so the membership
    /// chain grows in order).
    private func decide(_ id: String, _ request: JoinRequest, _ verifier: [UInt8], _ decision: Decision)
        -> JoinDecision
    {
        func refuse(_ r: BotRefusal) -> JoinDecision { decision.refuse(r) }
        guard var invite = try? store.invite(id), let roster = try? rosters.refresh(session).roster else {
            return refuse(BotRefusal("unavailable", "The space's server cannot be reached; try again soon."))
        }
        // Restarted while this use's joiner was being added: the use is counted already and
        // the same joiner (same keys, replayed by the relay) is answered again; anyone else ends
        // the use.
        let resuming = invite.admitting == invite.use
        if resuming {
            guard invite.admittingKeys == request.publicKeys, let signed = invite.record else {
                return refuse(
                    BotRefusal(
                        "interrupted", "Your join was interrupted; try the code again if it has uses left."))
            }
            return admit(id, request, signed, decision, giveBack: false)
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
        if let r = BotPolicy.checkAdmission(invite, roster: roster, now: Self.now()) { return refuse(r) }
        guard let signed = invite.record else {
            return refuse(BotRefusal("unavailable", "The invite is not ready yet; try again in a moment."))
        }
        if invite.ask {
            var ask = AttendantNote(.approvalNeeded, id: invite.noteID)
            ask.name = request.displayName
            ask.verification = VerificationWords.words(for: verifier).joined(separator: " ")
            ask.use = invite.use
            guard let inviter = roster.members[invite.inviter], (try? session.send(ask, to: inviter)) != nil
            else {
                return refuse(BotRefusal("unavailable", "The inviter cannot be asked right now."))
            }
            let until = ContinuousClock.now + configuration.askTimeout
            while invite.approval == nil, ContinuousClock.now < until, !isStopped {
                Thread.sleep(forTimeInterval: 0.05)
                invite = (try? store.invite(id)) ?? invite
            }
            guard invite.approval == true else {
                return refuse(BotRefusal("declined", "The inviter declined."))
            }
        }
        guard limiter.withLock({ $0.allow(now: .now) }) else {
            return refuse(BotRefusal("busy", "Too many people are joining right now; try again in a minute."))
        }
        // Count the use before adding the member (and admit only a joiner whose use the state
        // can record, not on a full disk): a bot killed after adding the member must find the
        // use taken, or a single-use code would let a second person in.
        let use = invite.use
        let counted = try? store.update(id) { saved in
            saved.usesLeft -= 1
            saved.admitting = use
            saved.admittingKeys = request.publicKeys
        }
        guard counted != nil else {
            return refuse(
                BotRefusal("unavailable", "The bot cannot record your join right now; try again soon."))
        }
        return admit(id, request, signed, decision, giveBack: true)
    }

    /// Adds the joiner (or finds them added already, for the same keys and invite) and makes
    /// their grant. On failure the counted use goes back only when the joiner is seen not to be a
    /// member: if in doubt it stays taken, the safe side.
    private func admit(
        _ id: String, _ request: JoinRequest, _ signed: SignedInvite, _ decision: Decision, giveBack: Bool
    ) -> JoinDecision {
        do {
            let (grant, record) = try session.admit(
                request: request, invite: signed, carryInvite: true, rosters: rosters, admissions: admissions,
                keys: threadKeys)
            decision.admitted = record.id
            return .approve(grant: grant.encoded())
        } catch {
            if giveBack, let keys = try? MemberPublicKeys(text: request.publicKeys),
                let roster = try? rosters.refresh(session).roster,
                !roster.members.values.contains(where: { $0.keys == keys })
            {
                _ = try? store.update(id) { saved in
                    saved.usesLeft += 1
                    saved.admitting = nil
                    saved.admittingKeys = nil
                }
            }
            return decision.refuse(
                BotRefusal("unavailable", "The bot could not add you to the space: \(error.message)"))
        }
    }

    @discardableResult
    private func advance(_ invite: BotInvite, consumed: Bool) -> BotInvite? {
        var delay = 0.1
        while true {
            do {
                return try store.update(invite.id) { saved in
                    // A use whose joiner was being added was counted already.
                    if consumed && saved.admitting != saved.use { saved.usesLeft -= 1 }
                    saved.admitting = nil
                    saved.admittingKeys = nil
                    saved.use += 1
                    saved.machine = nil
                    saved.approval = nil
                    if saved.usesLeft <= 0 { saved.state = .usedUp }
                }
            } catch {
                // An admitted joiner's use must be counted: when the state cannot be written (a
                // full disk) retry until it can, so the use is never lost and nobody else is
                // served on this invite meanwhile.
                guard consumed, !isStopped else { return nil }
                log("state_failed", ["message": error.message])
                Thread.sleep(forTimeInterval: delay)
                delay = min(delay * 2, 2)
            }
        }
    }

    private func end(
        _ invite: BotInvite, _ state: BotInvite.State, kind: String, _ why: String,
        notify: AttendantNote.Kind?,
        closeMailbox: Bool = true
    ) {
        // Close the mailbox and release the nameplate, so later joiners hear nobody attends.
        if closeMailbox, let machine = (try? store.invite(invite.id))?.machine,
            let connection = try? InviteAttendance.resume(relayURL: invite.relay, machine: machine)
        {
            connection.close(mood: .lonely, timeout: .seconds(2))
        }
        _ = try? store.update(invite.id) { $0.state = state }
        record(kind, nameplate: invite.nameplate, why, Self.now())
        if state == .expired { leaveEndNotice(invite, .expired) }
        if let notify {
            tell(
                invite.inviter,
                .notice(notify, id: invite.noteID, reason: kind, message: "Your invite \(why)."), roster: nil)
        }
    }

    /// Leaves the `ended` notice on the invite's nameplate once its state says it ended
    /// (`docs/join-protocol.md`, "Ended invites"), so a joiner who comes later hears why at once
    /// instead of waiting for an answer that never comes. Best effort: a bot killed first, or a
    /// relay that cannot be reached, leaves the joiner to time out as before.
    private func leaveEndNotice(_ invite: BotInvite, _ end: InviteEnd) {
        guard let nameplate = invite.nameplate else { return }
        try? InviteAttendance.leaveEndNotice(
            relayURL: invite.relay, nameplate: Rendezvous.Nameplate(nameplate), end: end, timeout: .seconds(5)
        )
    }

    // MARK: Helpers

    /// What ``decide(_:_:_:_:)`` chose, for the code that reports the outcome (one invite's
    /// worker thread only).
    private final class Decision {
        var refusal: BotRefusal?
        var admitted: MemberID?

        /// Notes the refusal and turns it into the answer for the joiner.
        func refuse(_ r: BotRefusal) -> JoinDecision {
            refusal = r
            return .refuse(reason: r.reason, message: r.message)
        }
    }

    private func member(_ id: MemberID) throws -> MemberRecord {
        guard let record = try rosters.refresh(session).roster.members[id] else {
            throw BotError(.state, code: "not_member", "member \(id) left the space")
        }
        return record
    }

    private func tell(_ recipient: MemberID, _ note: AttendantNote, roster: Roster?) {
        guard let record = roster?.members[recipient] ?? (try? member(recipient)) else { return }
        try? session.send(note, to: record)
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
        line["at"] = Self.now()
        emit(line)
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
