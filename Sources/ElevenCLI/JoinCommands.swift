import CLISupport
import ClientCore
import Foundation
import JoinProtocol
import PAKE
import SpaceModel
import WordCodes

// `eleven invite --short`, `eleven approve`, `eleven join`: short-code joins through a relay
// (docs/join-protocol.md). The inviter's own device attends: it proves the code with SPAKE2,
// asks its person, registers the joiner on the space server and sends the grant.

/// The join relay used when neither `--relay` nor `ELEVEN_RELAY` names one.
let joinDefaultRelay = "ws://127.0.0.1:4000/v1"

private let relayOption = OptionSpec(
    "relay", value: "URL", help: "the join relay (default \(joinDefaultRelay), a local eleven-relay)",
    environment: "ELEVEN_RELAY")

let joinCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "invite"],
            summary: "Invite someone into a space with a link, or a short code (--short).",
            options: [
                OptionSpec(
                    "short",
                    help:
                        "a short code such as coral-piano-42; without it, a full-length link (expires in 7d)"),
                CommonOptions.space,
                OptionSpec("uses", value: "N", help: "how many people may join with it", default: "1"),
                OptionSpec(
                    "max-failures", value: "N",
                    help: "wrong codes tolerated in total before it stops working",
                    default: "1"),
                OptionSpec("expires", value: "DURATION", help: "how long the code works", default: "1h"),
                OptionSpec("words", value: "N", help: "words in the code (2 to 8)", default: "2"),
                OptionSpec("detach", help: "leave the invite pending and let `eleven approve` attend it"),
                OptionSpec("yes", help: "let in whoever proves the code, without asking (scripts)"),
                OptionSpec("ask", help: "when the space's bot attends: ask me before it lets anyone in"),
                OptionSpec(
                    "bot-timeout", value: "DURATION",
                    help: "how long the space's bot has to answer before this device attends instead",
                    default: "5s"),
                OptionSpec(
                    "no-fallback",
                    help:
                        "when the space's bot does not answer, fail (exit status 7) instead of attending here"
                ),
                readmitOption, relayOption, CommonOptions.json,
            ] + linkInviteOptions,
            discussion: """
                Without --short: prints a full-length link (and a QR code) that works while you are \
                offline; the person runs `eleven join LINK`. With --short, when the space has a bot \
                (`eleven bot enable`), the invite goes to it and this returns at once; when the bot does \
                not answer within --bot-timeout, this device attends the invite itself (unless \
                --no-fallback). Otherwise prints the code and a link, then waits here until someone joins with it, asking \
                "Let Sam join Family?" first. A wrong code burns the invite at once. With --detach \
                the invite waits in the relay and `eleven approve` attends it later.
                """)
    ) { arguments in
        try checkRelayOption(arguments)
        try runInvite(arguments)
    },
    .init(
        CommandSpec(
            ["eleven", "approve"], summary: "Attend invites left pending with `eleven invite --detach`.",
            options: [
                CommonOptions.space,
                OptionSpec("yes", help: "let in whoever proves the code, without asking (scripts)"),
                OptionSpec(
                    "timeout", value: "DURATION", help: "how long to wait for joiners", default: "10m"),
                CommonOptions.json,
            ])
    ) { arguments in
        try checkRelayOption(arguments)
        try runApprove(arguments)
    },
    .init(
        CommandSpec(
            ["eleven", "join"], summary: "Join a space with a short code or invite link.",
            options: [
                OptionSpec("name", value: "NAME", help: "your name in the space (default: your login name)"),
                OptionSpec(
                    "verify", help: "accepted for compatibility: the verification words are always shown"),
                OptionSpec("resume", help: "finish a join that was interrupted (the process was stopped)"),
                OptionSpec(
                    "timeout", value: "DURATION", help: "how long to wait for the inviter", default: "5m"),
                relayOption, CommonOptions.json,
            ] + linkJoinOptions,
            positionals: [
                PositionalSpec(
                    "CODE_OR_LINK", help: "coral-piano-42 or https://host/invite#Family/…", optional: true)
            ],
            discussion: """
                Asks for the code when it is not given (so it need not sit in your shell history). \
                Exit status 3: the code did not match (codes work once), or nobody is attending it \
                (mistyped, used, burned or expired) or it is crowded; 4: the relay cannot be reached; \
                6: the inviter declined; 7: the inviter did not answer in time. A full-length link \
                shows its invite and joins once you say yes (--yes: at once); exit status 2: the \
                link is malformed; 3: it is unknown, expired or used up; 6: you said no.
                """)
    ) { arguments in
        // The command line's own mistakes, before any flow starts: a usage error (2).
        if let code = arguments.positional(0) { _ = try requireCode(code) }
        _ = try checkedName(arguments.value("name"), field: "--name")
        try checkRelayOption(arguments)
        try runJoin(arguments)
    },
]

// MARK: eleven invite --short

private func runInvite(_ arguments: ParsedArguments) throws {
    guard arguments.flag("short") else { return try runLinkInvite(arguments) }
    try refuseLinkOnlyOptions(arguments)
    let json = arguments.flag("json")
    let uses = try arguments.int("uses", in: 1...100) ?? 1
    let maxFailures =
        try arguments.int("max-failures", in: InviteAttendant.Policy.maxFailuresRange)
        ?? InviteAttendant.Policy.defaultMaxFailures
    let wordCount = try arguments.int("words", in: Code.wordCountRange) ?? 2
    let lifetime = try arguments.duration("expires", max: 30 * 86_400) ?? 3600
    let relay = try relayURL(arguments)
    let session = try openSpace(arguments)
    let readmit = try readmitTarget(arguments, session: session)
    // A space with a bot: the invite goes to the bot (BotCommands.swift); a re-admission is
    // attended here, by the member who vouches for the new identity, and so is an invite the bot
    // did not answer in time.
    if readmit == nil,
        try inviteThroughBot(
            session, arguments, relay: relay, uses: uses, wordCount: wordCount, lifetime: lifetime)
    {
        return
    }

    let words = Code.generate(nameplate: Nameplate(1)!, wordCount: wordCount).secretWords
    var random = SystemRandom()
    let now = Int64(Date().timeIntervalSince1970)
    let pending = PendingInvite(
        id: Base64URL.encode(random.bytes(count: 9)), space: session.saved.space,
        spaceName: session.saved.name,
        relay: relay, secret: InviteSecret(words: words, seed: SecretBytes(randomCount: 32, using: &random)),
        createdAt: now,
        attendant: InviteAttendant(
            policy: .init(uses: uses, maxFailures: maxFailures, expiresAt: now + Int64(lifetime))))
    let detach = arguments.flag("detach")
    let person = PersonAttendant(session: session, yes: arguments.flag("yes"), json: json, readmit: readmit)
    // The name slot carries the inviter's name ("Paul invited you"), else the space's.
    let linkName = person.inviterName ?? session.saved.name
    let store = PendingInviteStore(directory: localState().directory)
    let driver = person.driver(
        for: pending,
        // A detached invite is saved for `eleven approve` once it has a nameplate; an attended
        // one lives as long as this process.
        save: { attendant in
            guard detach, attendant.nameplate != nil else { return }
            var invite = pending
            invite.attendant = attendant
            try withSpaceErrors { try store.put(invite) }
        })
    driver.onAllocated = { nameplate in
        let code = "\(words)-\(nameplate.value)"
        let link = inviteLink(server: session.saved.server, name: linkName, code: code)
        if json {
            var event: [String: Any] = [
                "event": "code", "code": code, "link": link, "expiresAt": pending.expiresAt,
            ]
            if detach { event["pending"] = true }
            Terminal.json(event)
        } else {
            Terminal.out("Invite code: \(code)")
            Terminal.out("Link: \(link)")
            printQR(link)
            Terminal.out(
                detach
                    ? "The invite is pending; run `eleven approve` to let people in."
                    : "Waiting for someone to join \(session.saved.shownName) with it…")
        }
    }
    let ending = try person.run(driver, untilAttending: detach)
    switch ending {
    case .burned?: throw burnedError()
    case .expired?: throw expiredError(driver.attendant)
    case .usedUp?, .cancelled?, nil: return
    }
}

// MARK: eleven approve

private func runApprove(_ arguments: ParsedArguments) throws {
    let json = arguments.flag("json")
    let wait = try arguments.duration("timeout", max: 30 * 86_400) ?? 600
    let state = localState()
    let store = PendingInviteStore(directory: state.directory)
    let pending = try withSpaceErrors { try store.load() }
    let saved = try withSpaceErrors { try state.spaces() }
    let wanted: SpaceID? =
        arguments.value("space") != nil ? try chooseSpace(arguments.value("space"), in: saved).space : nil
    let mine = pending.filter { wanted == nil || $0.space == wanted }
    guard !mine.isEmpty else {
        report(json, ["event": "none"], "No pending invites.")
        return
    }
    var burned = false
    for invite in mine {
        guard let space = saved.spaces.first(where: { $0.space == invite.space }) else { continue }
        let session = try withSpaceErrors {
            try SpaceSession(saved: space, identity: state.identity(for: space))
        }
        let person = PersonAttendant(session: session, yes: arguments.flag("yes"), json: json)
        person.expiredNotice = "An invite for \(invite.spaceName) expired."
        // Saved after every step, so a process killed at any point resumes where it was.
        let driver = person.driver(
            for: invite,
            save: { attendant in
                var changed = invite
                changed.attendant = attendant
                try withSpaceErrors { try store.put(changed) }
            })
        switch try person.run(driver, until: ContinuousClock.now + .seconds(wait)) {
        case nil:
            report(
                json, ["event": "waiting", "code": invite.code ?? ""],
                "Nobody has used \(invite.code ?? "the invite") yet.")
        case .burned?: burned = true
        case .expired?, .usedUp?, .cancelled?: break
        }
    }
    if burned { throw burnedError() }
}

// MARK: The attendant's person

/// The inviter's own device as the attendant (``InviteAttendantDriver``'s hooks): asks its
/// person (or, with --yes, does not ask), admits the joiner on the space server, and reports.
private final class PersonAttendant {
    let session: SpaceSession
    let yes: Bool
    let json: Bool
    let readmit: MemberID?
    let inviterName: String?
    /// Printed when the invite expires while attended (`eleven approve`); nil: the caller says it.
    var expiredNotice: String?
    /// The joiner added on the space server in the current use, until the joiner heard so.
    private var admitted: MemberRecord?
    private var admitFailure: Error?
    /// The joiner of the current use turned out to be a member already.
    private var alreadyMember = false

    init(session: SpaceSession, yes: Bool, json: Bool, readmit: MemberID? = nil) {
        self.session = session
        self.yes = yes
        self.json = json
        self.readmit = readmit
        inviterName = (try? session.roster().members[session.saved.member]?.name).flatMap {
            $0.isEmpty ? nil : $0
        }
    }

    func driver(for invite: PendingInvite, save: @escaping (InviteAttendant) throws -> Void)
        -> InviteAttendantDriver
    {
        let session = self.session
        var hooks = InviteAttendantHooks(
            save: save,
            check: { [unowned self] request, _, _ in
                guard yes || askYesNo("Let \(nameOf(request)) join \(session.saved.shownName)? [y/N] ") else {
                    return AttendantRefusal(.declined, reason: "declined", "The inviter declined.")
                }
                return nil
            },
            admit: { [unowned self] request, nameplate in admit(request, nameplate: nameplate, invite: invite)
            },
            report: { [unowned self] report, request in try tell(report, request) },
            now: { Int64(Date().timeIntervalSince1970) })
        hooks.codeProven = { [json] request, sas in
            let check = VerificationWords.words(for: sas).joined(separator: " ")
            report(
                json, ["event": "code_proven", "name": request.displayName, "verification": check],
                "\(nameOf(request)) proved the code (verification words: \(check)).")
        }
        let driver = InviteAttendantDriver(
            attendant: invite.attendant, relayURL: invite.relay, secret: invite.secret, hooks: hooks)
        driver.inviterName = inviterName
        return driver
    }

    /// Runs the driver; on any failure, nothing is left half-joined: a member added whose grant
    /// never reached them is removed.
    func run(
        _ driver: InviteAttendantDriver, until: ContinuousClock.Instant? = nil, untilAttending: Bool = false
    )
        throws -> InviteAttendant.Ending?
    {
        do {
            return try driver.run(until: until, untilAttending: untilAttending)
        } catch {
            if let admitted { try? session.removeMember(admitted.id) }
            throw joinCLIError(error, codeAccepted: true)
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
        } catch  where error.code == alreadyMemberReason {
            // Their device is in the space already: nothing to add, and their use is not spent.
            alreadyMember = true
            return .failed(alreadyMemberRefusal(session.saved.name), mayBeMember: false)
        } catch {
            admitFailure = error
            return .failed(
                AttendantRefusal(
                    .turnedAway, reason: "unavailable",
                    "The inviter's device could not add you to the space: \(error)"),
                mayBeMember: false)
        }
    }

    private func tell(_ event: InviteAttendant.Report, _ request: JoinRequest?) throws {
        let name = request.map(nameOf) ?? "Someone"
        switch event {
        case .joined:
            admitted = nil
            report(
                json, ["event": "joined", "name": request?.displayName ?? ""],
                "\(name) joined \(session.saved.shownName).")
        case .declined:
            report(
                json, ["event": "declined", "name": request?.displayName ?? ""], "\(name) was not let in.")
        case .turnedAway where alreadyMember:
            alreadyMember = false
            report(
                json, ["event": "already_member", "name": request?.displayName ?? ""],
                "\(name) is already in \(session.saved.shownName); nothing changed.")
        case .turnedAway:
            if let failure = admitFailure {
                admitFailure = nil
                throw (failure as? SpaceClientError).map { cliError($0) } ?? failure
            }
        case .wrongCode(_, let left) where left > 0:
            report(
                json, ["event": "failed_attempt", "code": "code_mismatch", "failures_left": left],
                "Someone tried a wrong code for your invite; after \(left) more it stops working.")
        case .wrongCode:
            break  // the ending says it
        case .ended(.burned):
            report(
                json, ["event": "burned", "code": "invite_burned"],
                "Someone tried a wrong code for your invite; it no longer works. Make a new one.")
        case .ended(.expired):
            if let expiredNotice {
                report(json, ["event": "expired", "code": "invite_expired"], expiredNotice)
            }
        case .ended(.usedUp), .ended(.cancelled):
            break
        }
    }
}

private func expiredError(_ attendant: InviteAttendant) -> CLIError {
    let uses = attendant.policy.uses
    return CLIError(
        code: "invite_expired",
        message:
            "The invite expired after \(attendant.taken) of \(uses) use\(uses == 1 ? "" : "s"); make a new one.",
        status: .timedOut)
}

/// The invite link as a QR code, when a person is looking at a terminal.
func printQR(_ link: String) {
    guard Terminal.isInteractive, let lines = TerminalQR.render(link) else { return }
    for line in lines { Terminal.out(line) }
}

private func nameOf(_ request: JoinRequest) -> String {
    request.displayName.isEmpty ? "Someone" : SafeText.line(request.displayName)
}

/// The refusal an attendant sends a joiner whose device is a member already (the use is not
/// spent): the joiner's `eleven join` says so and changes nothing, as for a link.
let alreadyMemberReason = "already_member"

func alreadyMemberRefusal(_ spaceName: String) -> AttendantRefusal {
    AttendantRefusal(
        .turnedAway, reason: alreadyMemberReason, "You are already in \(spaceName); nothing changed.")
}

private func burnedError() -> CLIError {
    CLIError(
        code: "invite_burned", message: "The invite was burned by a wrong code; make a new one.",
        status: .codeRejected)
}

// MARK: eleven join

private func runJoin(_ arguments: ParsedArguments) throws {
    let json = arguments.flag("json")
    let wait = try arguments.duration("timeout", max: 7 * 86_400) ?? 300
    let state = localState()
    let joins = PendingJoinStore(directory: state.directory)
    let resuming = arguments.flag("resume")
    let now = Int64(Date().timeIntervalSince1970)
    let pending: PendingJoin
    if resuming {
        guard arguments.positional(0) == nil else {
            throw CLIError.usage("give either a code or --resume, not both", help: nil)
        }
        guard let last = try withSpaceErrors({ try joins.load() }).last else {
            throw CLIError(
                code: "no_pending_join", message: "There is no interrupted join to resume.", status: .failure)
        }
        pending = last
        report(json, ["event": "resuming"], "Resuming the join…")
    } else {
        let typed = try arguments.positional(0) ?? promptForCode()
        if let link = try fullLengthLink(typed) { return try runLinkJoin(arguments, link: link) }
        let relay = try relayURL(arguments)
        let parsed: ParsedCode
        do {
            parsed = try CodeParser.parse(typed)
        } catch {
            throw CLIError(code: error.code, message: error.message, status: .codeRejected)
        }
        if !json {
            for correction in parsed.corrections where correction.changesWord {
                Terminal.out(correction.message)
            }
        }
        let (identity, _) = try withSpaceErrors { try state.identity(create: true) }
        let name =
            arguments.value("name") ?? ProcessInfo.processInfo.environment["USER"].map { $0.capitalized }
            ?? ""
        let request = JoinRequest(
            displayName: String(name.prefix(64)),
            deviceLabel: String(ProcessInfo.processInfo.hostName.prefix(64)),
            publicKeys: identity.publicKeys.text)
        var random = SystemRandom()
        pending = PendingJoin(
            relay: relay, nameplate: Rendezvous.Nameplate(parsed.code.nameplate.description),
            words: parsed.code.secretWords, request: request, createdAt: now, deadline: now + Int64(wait),
            using: &random)
    }
    let (identity, _) = try withSpaceErrors { try state.identity(create: true) }
    let label = ProcessInfo.processInfo.hostName
    // The verification words are always shown; `--verify` stays accepted and changes nothing.
    _ = arguments.flag("verify")
    let accepted = Flag()
    let grantBytes: [UInt8]
    do {
        grantBytes = try JoinRunner.join(
            pending, timeout: .seconds(max(1, pending.deadline - now)),
            // An attendant leaves its first message before anyone joins: without it, nobody
            // attends the code.
            firstAnswer: resuming ? nil : .seconds(min(wait, 15)),
            progress: { progress in
                switch progress {
                case .connecting:
                    report(json, nil, "Connecting…")
                case .codeAccepted(let sas):
                    accepted.set()
                    let check = VerificationWords.words(for: sas).joined(separator: " ")
                    report(
                        json, ["event": "code_accepted", "verification": check],
                        "Code accepted. Verification words: \(check) (the inviter should see the same).")
                case .waitingForApproval(let inviter):
                    report(
                        json, ["event": "waiting"],
                        "Waiting for \(inviter.map(SafeText.line) ?? "the inviter") to let you in…")
                case .reconnecting:
                    report(json, nil, "Reconnecting…")
                }
            },
            // Saved at every step (sealed), so `eleven join --resume` carries on after a kill.
            save: { try? joins.put($0) })
    } catch JoinRunError.refused(alreadyMemberReason, let message) {
        // As with a link: a space this device is in already is left as it is.
        try? joins.remove(pending.id)
        report(json, ["event": "already_joined", "message": message], SafeText.line(message))
        return
    } catch {
        try? joins.remove(pending.id)
        throw joinCLIError(error, codeAccepted: accepted.isSet)
    }
    try? joins.remove(pending.id)
    let result: (saved: SavedSpace, verified: JoinGrant.Verified)
    let grant: JoinGrant
    do {
        grant = try JoinGrant(decoding: grantBytes)
        result = try grant.accept(
            identity: identity, state: state, deviceLabel: label, now: Int64(Date().timeIntervalSince1970),
            nameplate: pending.nameplate.value)
    } catch let error as JoinGrantError {
        throw CLIError(code: error.code, message: error.message, status: .failure)
    } catch let error as SpaceClientError {
        throw cliError(error)
    } catch let error as LocalStateError {
        throw cliError(error)
    }
    vaultChanged()
    let threads = grant.historyHint.threads
    let messages = grant.historyHint.messages
    if json {
        Terminal.json([
            "event": "joined", "space": result.saved.space.base64URL, "name": result.saved.name,
            "member": result.saved.member.base64URL, "threads": threads, "messages": messages,
        ])
    } else {
        Terminal.out(
            "Joined \(result.saved.shownName): \(threads) thread\(threads == 1 ? "" : "s"), "
                + "\(messages) message\(messages == 1 ? "" : "s"). Run `eleven read` to read them.")
    }
}

// MARK: Helpers

private func relayURL(_ arguments: ParsedArguments) throws -> String {
    let relay = arguments.value("relay") ?? joinDefaultRelay
    guard relay.hasPrefix("ws://") || relay.hasPrefix("wss://") else {
        throw CLIError.usage("'--relay' must be a ws:// or wss:// URL, not '\(relay)'", help: nil)
    }
    return relay
}

/// `<space server>/invite#<Name>/<code>` (the server as saved: scheme, host and port, like a
/// full-length link), the name percent-encoded so `/` stays ours.
func inviteLink(server: String, name space: String, code: String) -> String {
    var base = "https://elevenmessenger.com"
    if let url = URL(string: server), let scheme = url.scheme, let host = url.host {
        base = "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    let name = space.addingPercentEncoding(withAllowedCharacters: allowed) ?? "space"
    return "\(base)/invite#\(name)/\(code)"
}

private func joinErrors<T>(_ body: () throws(JoinRunError) -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw joinCLIError(error, codeAccepted: false)
    }
}

/// Distinct codes and exit statuses for everything a join can end with.
private func joinCLIError(_ error: Error, codeAccepted: Bool) -> Error {
    guard let error = error as? JoinRunError else { return error }
    switch error {
    case .failed(.codeMismatch):
        return CLIError(
            code: "code_mismatch", message: "That code didn't match. Codes work once: ask for a new one.",
            status: .codeRejected)
    case .failed(.protocolError):
        return CLIError(code: "protocol_error", message: error.description, status: .failure)
    case .failed(.inviteEnded(let end)):
        return CLIError(code: end.code, message: end.message, status: .codeRejected)
    case .refused(let reason, let message):
        return CLIError(
            code: "refused_\(reason)", message: message,
            status: reason == "declined" || reason == "unavailable" ? .refused : .codeRejected)
    case .relay(.unreachable):
        return CLIError(
            code: "relay_unreachable",
            message:
                "\(error.description). Check the relay address (--relay or ELEVEN_RELAY) and your network.",
            status: .unavailable)
    case .relay(.rendezvous(.crowded)):
        return CLIError(
            code: "crowded",
            message: "Someone else is already using that code, so it cannot be used now. Ask for a new one.",
            status: .codeRejected)
    case .relay(.timedOut):
        if codeAccepted {
            return CLIError(
                code: "timed_out", message: "The inviter did not answer in time.", status: .timedOut)
        }
        return CLIError(
            code: "unknown_code",
            message: "Nobody is attending that code: it may be mistyped, already used, burned or expired, "
                + "or the inviter's device is offline.",
            status: .codeRejected)
    case .relay:
        return CLIError(code: error.code, message: error.description, status: .unavailable)
    }
}

/// A progress line: text for people, or a JSON line (nil: nothing in JSON mode).
func report(_ json: Bool, _ object: [String: Any]?, _ text: String) {
    if json {
        if let object { Terminal.json(object) }
    } else {
        Terminal.out(text)
    }
}

/// Writes to standard error (prompts), leaving standard output for results.
func writePrompt(_ text: String) {
    var bytes = Array(text.utf8)
    _ = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
}

func askYesNo(_ question: String) -> Bool {
    writePrompt(question)
    let answer = (readLine(strippingNewline: true) ?? "").trimmingCharacters(in: .whitespaces).lowercased()
    return answer == "y" || answer == "yes"
}

/// A flag set from a callback.
private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() {
        lock.lock()
        value = true
        lock.unlock()
    }
    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
