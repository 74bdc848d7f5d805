import Foundation
import JoinProtocol
import PAKE
import SpaceModel
import Support
import WordCodes

// `eleven invite --short` and `eleven approve` as functions: the inviter's own device attends
// (``InviteAttendantDriver``), asks its person through a callback, admits the joiner on the
// space server and says what happened as ``InviterEvent``s. The CLI only parses and prints.

/// What the inviter's device says while it attends a short-code invite. Names are as the
/// joiner sent them: the printer makes them safe to show.
public enum InviterEvent: Equatable, Sendable {
    /// The code is ready to share; `pending`: it was left for `eleven approve`.
    case code(code: String, link: String, expiresAt: Int64, pending: Bool, space: String)
    /// A joiner proved the code; `verification`: the words both sides show.
    case codeProven(name: String, verification: String)
    case joined(name: String, space: String)
    case declined(name: String)
    case alreadyMember(name: String, space: String)
    /// The joiner stopped waiting while the person was asked.
    case joinerLeft(name: String)
    /// A wrong code; `failuresLeft` more and the invite stops working.
    case failedAttempt(failuresLeft: Int)
    /// A joiner who proved the code says an earlier attempt of theirs failed after their code
    /// went out (``JoinAttemptReport``): on `nameplate` at `at`, ending with `outcome`.
    /// `thisInvite`: it was this invite's nameplate and this device never heard from them, so
    /// someone else answered them (a tested guess counts as a failed attempt).
    case attemptReported(name: String, nameplate: String, at: Int64, outcome: String, thisInvite: Bool)
    case burned
    /// An attended pending invite expired (`eleven approve`).
    case expired(spaceName: String)
    /// `eleven approve` attends these codes now, until each is used or its time runs out.
    case attending(codes: [String])
    /// `eleven approve`: nobody used `code` in the time given.
    case unused(code: String?)
    /// `eleven approve`: nothing is pending.
    case nonePending
}

/// A person's answer to "Let Sam join Family?".
public enum InviterAnswer: Sendable {
    case yes
    case no
    /// The person stopped attending (Ctrl-C, SIGTERM): the joiner hears the inviter left.
    case stopped
}

/// Asks the person whether `name` may join `space`; `joinerWaiting` turns false once the joiner
/// left (then the answer no longer matters). Called one joiner at a time.
public typealias InviterAsk = (_ name: String, _ space: String, _ joinerWaiting: () -> Bool) -> InviterAnswer

/// How a short-code invite attended by this device is made.
public struct ShortInviteOptions: Sendable {
    public var relay: String
    public var uses: Int
    public var maxFailures: Int
    /// Seconds the code works.
    public var lifetime: Int64
    public var wordCount: Int
    /// Leave the invite pending for `eleven approve` once its first message is in the mailbox.
    public var detach: Bool
    /// A re-admission: the member who gets a new identity.
    public var readmit: MemberID?

    public init(
        relay: String, uses: Int = 1, maxFailures: Int = InviteAttendant.Policy.defaultMaxFailures,
        lifetime: Int64 = 3600, wordCount: Int = 2, detach: Bool = false, readmit: MemberID? = nil
    ) {
        self.relay = relay
        self.uses = uses
        self.maxFailures = maxFailures
        self.lifetime = lifetime
        self.wordCount = wordCount
        self.detach = detach
        self.readmit = readmit
    }
}

/// Why an attended invite flow stopped without an ending of its own.
public enum ShortInviteError: Error, Equatable, Sendable {
    /// A joiner was being attended when `error` happened.
    case attending(JoinRunError)
}

public enum ShortInviteFlow {
    /// `eleven invite --short` attended here: mints the invite, shows the code (``InviterEvent/code``)
    /// and attends it until it ends (its ending is returned with the machine), or, with
    /// `options.detach`, until its first message is in the mailbox (nil: saved for
    /// `eleven approve`). `ask` nil lets in whoever proves the code. Interrupted, the invite is
    /// cancelled: a joiner in the mailbox is told the inviter left, and so are later ones (the
    /// `ended` notice `left`).
    public static func attend(
        session: SpaceSession, options: ShortInviteOptions, store: PendingInviteStore, ask: InviterAsk?,
        interruption: Interruption? = nil, now: Int64 = Int64(Date().timeIntervalSince1970),
        events: @escaping (InviterEvent) -> Void
    ) throws -> (ending: InviteAttendant.Ending?, attendant: InviteAttendant) {
        let words = Code.generate(nameplate: Nameplate(1)!, wordCount: options.wordCount).secretWords
        var random = SystemRandom()
        let pending = PendingInvite(
            id: Base64URL.encode(random.bytes(count: 9)), space: session.saved.space,
            spaceName: session.saved.name, relay: options.relay,
            secret: InviteSecret(words: words, seed: SecretBytes(randomCount: 32, using: &random)),
            createdAt: now,
            attendant: InviteAttendant(
                policy: .init(
                    uses: options.uses, maxFailures: options.maxFailures, expiresAt: now + options.lifetime)))
        let person = InviterAttendant(session: session, ask: ask, events: events, readmit: options.readmit)
        // The name slot carries the inviter's name ("Paul invited you"), else the space's.
        let linkName = person.inviterName ?? session.saved.name
        let detach = options.detach
        let driver = person.driver(
            for: pending,
            // A detached invite is saved for `eleven approve` once it has a nameplate; an attended
            // one lives as long as this process.
            save: { attendant in
                guard detach, attendant.nameplate != nil else { return }
                var invite = pending
                invite.attendant = attendant
                try store.put(invite)
            })
        driver.interruption = interruption
        driver.onAllocated = { nameplate in
            let code = "\(words)-\(nameplate.value)"
            events(
                .code(
                    code: code, link: inviteLink(server: session.saved.server, name: linkName, code: code),
                    expiresAt: pending.expiresAt, pending: detach, space: session.saved.name))
        }
        let ending = try person.run(driver, untilAttending: detach)
        if ending == nil, !detach, interruption?.isInterrupted == true {
            try driver.cancel(notice: .left)
        }
        return (driver.attendant.ending, driver.attendant)
    }

    /// `eleven approve`: attends every invite in `invites` at once (one thread each; the person
    /// is asked about one joiner at a time), each until it ends or `until`. Returns whether one
    /// was burned. The first failure stops the others (each stays saved, resumable) and is
    /// thrown. Interrupted, a joiner in a mailbox is told the inviter left; the invites stay
    /// pending.
    public static func approve(
        _ invites: [(invite: PendingInvite, session: SpaceSession)], store: PendingInviteStore,
        until: ContinuousClock.Instant, ask: InviterAsk?, interruption: Interruption? = nil,
        events: @escaping (InviterEvent) -> Void
    ) throws -> Bool {
        guard !invites.isEmpty else {
            events(.nonePending)
            return false
        }
        events(.attending(codes: invites.compactMap(\.invite.code)))
        // One question at a time, and one line at a time.
        let asking = Locked(())
        let serialAsk: InviterAsk? = ask.map { ask in
            { name, space, waiting in asking.withLock { _ in ask(name, space, waiting) } }
        }
        let serialEvents: (InviterEvent) -> Void = { event in asking.withLock { _ in events(event) } }
        let stop = Interruption(parent: interruption)
        let results = Locked<[Result<InviteAttendant.Ending?, Error>]>([])
        let group = DispatchGroup()
        for (invite, session) in invites {
            let person = InviterAttendant(session: session, ask: serialAsk, events: serialEvents)
            person.expiredSpace = invite.spaceName
            // Saved after every step, so a process killed at any point resumes where it was.
            let driver = person.driver(
                for: invite,
                save: { attendant in
                    var changed = invite
                    changed.attendant = attendant
                    try store.put(changed)
                })
            driver.interruption = stop
            let attending = Attending(person: person, driver: driver, code: invite.code, events: serialEvents)
            group.enter()
            Thread.detachNewThread {
                let result = Result { try attending.person.run(attending.driver, until: until) }
                if case .failure = result { stop.interrupt() }
                if case .success(nil) = result, !stop.isInterrupted {
                    attending.events(.unused(code: attending.code))
                }
                results.withLock { $0.append(result) }
                group.leave()
            }
        }
        group.wait()
        var burned = false
        for result in results.withLock({ $0 }) {
            if case .success(.burned?) = result { burned = true }
        }
        for case .failure(let error) in results.withLock({ $0 }) { throw error }
        return burned
    }
}

/// One invite's attendant and its driver, handed to the thread that alone uses them.
private final class Attending: @unchecked Sendable {
    let person: InviterAttendant
    let driver: InviteAttendantDriver
    let code: String?
    let events: (InviterEvent) -> Void

    init(
        person: InviterAttendant, driver: InviteAttendantDriver, code: String?,
        events: @escaping (InviterEvent) -> Void
    ) {
        self.person = person
        self.driver = driver
        self.code = code
        self.events = events
    }
}

/// `<space server>/invite#<Name>/<code>` (the server as saved: scheme, host and port, like a
/// full-length link), the name percent-encoded so `/` stays ours.
public func inviteLink(server: String, name space: String, code: String) -> String {
    var base = "https://elevenmessenger.com"
    if let url = URL(string: server), let scheme = url.scheme, let host = url.host {
        base = "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    let name = space.addingPercentEncoding(withAllowedCharacters: allowed) ?? "space"
    return "\(base)/invite#\(name)/\(code)"
}

/// The refusal an attendant sends a joiner whose device is a member already (the use is not
/// spent): the joiner's `eleven join` says so and changes nothing, as for a link.
public func alreadyMemberRefusal(_ spaceName: String) -> AttendantRefusal {
    AttendantRefusal(
        .turnedAway, reason: .alreadyMember, "You are already in \(spaceName); nothing changed.")
}

/// The inviter's own device as the attendant (``InviteAttendantDriver``'s hooks): asks its
/// person (or, without `ask`, does not ask), admits the joiner on the space server, and reports.
final class InviterAttendant {
    let session: SpaceSession
    let ask: InviterAsk?
    let events: (InviterEvent) -> Void
    let readmit: MemberID?
    let inviterName: String?
    /// Said when the invite expires while attended (`eleven approve`); nil: the caller says it.
    var expiredSpace: String?
    /// The joiner added on the space server in the current use, until the joiner heard so.
    private var admitted: MemberRecord?
    private var admitFailure: Error?
    /// The joiner of the current use turned out to be a member already.
    private var alreadyMember = false

    init(
        session: SpaceSession, ask: InviterAsk?, events: @escaping (InviterEvent) -> Void,
        readmit: MemberID? = nil
    ) {
        self.session = session
        self.ask = ask
        self.events = events
        self.readmit = readmit
        inviterName = (try? session.roster().members[session.saved.member]?.name).flatMap {
            $0.isEmpty ? nil : $0
        }
    }

    func driver(for invite: PendingInvite, save: @escaping (InviteAttendant) throws -> Void)
        -> InviteAttendantDriver
    {
        var hooks = InviteAttendantHooks(
            save: save,
            check: { _, _, _ in nil },
            admit: { [unowned self] request, nameplate in admit(request, nameplate: nameplate, invite: invite)
            },
            report: { [unowned self] report, request in try tell(report, request) })
        if let ask {
            hooks.ask = { [unowned self] request, joinerWaiting in
                switch ask(request.displayName, session.saved.name, joinerWaiting) {
                case .yes:
                    return nil
                case _ where !joinerWaiting():
                    events(.joinerLeft(name: request.displayName))
                    return AttendantRefusal(.turnedAway, reason: .left, "You left.")
                case .no:
                    return AttendantRefusal(.declined, reason: .declined, "The inviter declined.")
                case .stopped:
                    return AttendantRefusal(
                        .turnedAway, reason: .left,
                        "\(inviterName ?? "The inviter") stopped attending this invite.")
                }
            }
        }
        let attendant = Locked(invite.attendant)
        hooks.codeProven = { [events] request, sas in
            events(
                .codeProven(
                    name: request.displayName,
                    verification: VerificationWords.words(for: sas).joined(separator: " ")))
            // The driver counts the ones on this invite; the person hears of every one.
            let current = attendant.withLock { $0 }
            for report in request.failedAttempts {
                let mine = current.isAbout(report, relay: invite.relay, createdAt: invite.createdAt)
                guard !(mine && current.hasSeen(report.side)) else { continue }
                events(
                    .attemptReported(
                        name: request.displayName, nameplate: report.nameplate.value, at: report.at,
                        outcome: report.outcome, thisInvite: mine))
            }
        }
        hooks.save = { state in
            attendant.withLock { $0 = state }
            try save(state)
        }
        let driver = InviteAttendantDriver(
            attendant: invite.attendant, relayURL: invite.relay, secret: invite.secret, hooks: hooks)
        driver.inviterName = inviterName
        driver.createdAt = invite.createdAt
        return driver
    }

    /// Runs the driver; on any failure, nothing is left half-joined: a member added whose grant
    /// never reached them is removed.
    func run(
        _ driver: InviteAttendantDriver, until: ContinuousClock.Instant? = nil, untilAttending: Bool = false
    ) throws -> InviteAttendant.Ending? {
        do {
            return try driver.run(until: until, untilAttending: untilAttending)
        } catch {
            if let admitted { try? session.removeMember(admitted.id) }
            if let error = error as? JoinRunError { throw ShortInviteError.attending(error) }
            // A relay that could not be reached again between uses: the same relay error a wait
            // would have had (exit 4), not a bare failure.
            if let error = error as? RelayConnectionError { throw ShortInviteError.attending(.relay(error)) }
            throw error
        }
    }

    private func admit(_ request: JoinRequest, nameplate: Rendezvous.Nameplate, invite: PendingInvite)
        -> AttendantAdmission
    {
        let now = Int64(Date().timeIntervalSince1970)
        let signed = session.identity.signInvite(
            space: session.saved.space, inviter: session.saved.member,
            nameplate: nameplate.value, createdAt: now,
            expiresAt: invite.expiresAt, uses: 1)
        do {
            let (grant, record) = try session.admit(request: request, invite: signed, readmit: readmit)
            admitted = record
            return .granted(grant.encoded())
        } catch  where error.typedCode == .alreadyMember {
            // Their device is in the space already: nothing to add, and their use is not spent.
            alreadyMember = true
            return .failed(alreadyMemberRefusal(session.saved.name), mayBeMember: false)
        } catch {
            admitFailure = error
            return .failed(
                AttendantRefusal(
                    .turnedAway, reason: .unavailable,
                    "The inviter's device could not add you to the space: \(error)"),
                mayBeMember: false)
        }
    }

    private func tell(_ report: InviteAttendant.Report, _ request: JoinRequest?) throws {
        let name = request?.displayName ?? ""
        switch report {
        case .joined:
            admitted = nil
            events(.joined(name: name, space: session.saved.name))
        case .declined:
            events(.declined(name: name))
        case .turnedAway where alreadyMember:
            alreadyMember = false
            events(.alreadyMember(name: name, space: session.saved.name))
        case .turnedAway:
            if let failure = admitFailure {
                admitFailure = nil
                throw failure
            }
        case .wrongCode(_, let left) where left > 0, .attemptReported(let left) where left > 0:
            events(.failedAttempt(failuresLeft: left))
        case .wrongCode, .attemptReported:
            break  // the ending says it
        case .ended(.burned):
            events(.burned)
        case .ended(.expired):
            if let expiredSpace { events(.expired(spaceName: expiredSpace)) }
        case .ended(.usedUp), .ended(.cancelled):
            break
        }
    }
}
