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

/// The join relay used when nothing names one (``RelayChoice``).
let joinDefaultRelay = RelayChoice.publicDefault

private let relayOption = OptionSpec(
    "relay", value: "URL",
    help:
        "the join relay (else \"relay\" in $ELEVEN_HOME/config.json, the space server's, or \(joinDefaultRelay))",
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
                Exit status 3: the code did not match (codes work once; if you typed it right, someone \
                may have tried to intercept it, and your next join tells the inviter), or nobody is attending it \
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
    let session = try openSpace(arguments)
    let relay = try relayURL(arguments, server: session.saved.server)
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
    let options = ShortInviteOptions(
        relay: relay, uses: uses, maxFailures: maxFailures, lifetime: Int64(lifetime), wordCount: wordCount,
        detach: arguments.flag("detach"), readmit: readmit)
    let interruption = Interruption.onSignals()
    let (ending, attendant) = try attending {
        try ShortInviteFlow.attend(
            session: session, options: options, store: PendingInviteStore(directory: localState().directory),
            ask: arguments.flag("yes") ? nil : askAtTerminal(interruption), interruption: interruption,
            events: { printInviter($0, json: json) })
    }
    switch ending {
    case .burned?: throw burnedError()
    case .expired?: throw expiredError(attendant)
    case .cancelled? where interruption.isInterrupted: throw interruptedError()
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
    let mine = try pending.filter { wanted == nil || $0.space == wanted }.compactMap {
        invite -> (invite: PendingInvite, session: SpaceSession)? in
        guard let space = saved.spaces.first(where: { $0.space == invite.space }) else { return nil }
        return (
            invite,
            try withSpaceErrors { try spaceSession(space, state: state) }
        )
    }
    let interruption = Interruption.onSignals()
    let burned = try attending {
        try ShortInviteFlow.approve(
            mine, store: store, until: ContinuousClock.now + .seconds(wait),
            ask: arguments.flag("yes") ? nil : askAtTerminal(interruption), interruption: interruption,
            events: { printInviter($0, json: json) })
    }
    if burned { throw burnedError() }
    if interruption.isInterrupted { throw interruptedError() }
}

/// Prints what the inviter's device says.
private func printInviter(_ event: InviterEvent, json: Bool) {
    func nameOf(_ name: String) -> String { name.isEmpty ? "Someone" : SafeText.line(name) }
    switch event {
    case .code(let code, let link, let expiresAt, let pending, let space):
        if json {
            var object: [String: Any] = ["event": "code", "code": code, "link": link, "expiresAt": expiresAt]
            if pending { object["pending"] = true }
            Terminal.json(object)
        } else {
            Terminal.out("Invite code: \(code)")
            Terminal.out("Link: \(link)")
            printQR(link)
            Terminal.out(
                pending
                    ? "The invite is pending; run `eleven approve` to let people in."
                    : "Waiting for someone to join \(SafeText.line(space)) with it…")
        }
    case .codeProven(let name, let check):
        report(
            json, ["event": "code_proven", "name": name, "verification": check],
            "\(nameOf(name)) proved the code (verification words: \(check)).")
    case .joined(let name, let space):
        report(json, ["event": "joined", "name": name], "\(nameOf(name)) joined \(SafeText.line(space)).")
    case .declined(let name):
        report(json, ["event": "declined", "name": name], "\(nameOf(name)) was not let in.")
    case .alreadyMember(let name, let space):
        report(
            json, ["event": "already_member", "name": name],
            "\(nameOf(name)) is already in \(SafeText.line(space)); nothing changed.")
    case .joinerLeft(let name):
        report(json, ["event": "joiner_left", "name": name], "\(nameOf(name)) stopped waiting.")
    case .failedAttempt(let left):
        report(
            json, ["event": "failed_attempt", "code": "code_mismatch", "failures_left": left],
            "Someone tried a wrong code for your invite; after \(left) more it stops working.")
    case .attemptReported(let name, let nameplate, let at, let outcome, let thisInvite):
        let when = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(at)))
        let which = thisInvite ? "this invite (number \(nameplate))" : "a code with the number \(nameplate)"
        report(
            json,
            [
                "event": "attempt_reported", "code": "attempt_reported", "name": name, "nameplate": nameplate,
                "at": at, "outcome": outcome, "this_invite": thisInvite,
            ],
            "\(nameOf(name))'s device says \(which) did not check out for them at \(when), and this device "
                + "never heard from them: someone may have tried to intercept the code."
                + (thisInvite ? " It counts as a wrong code." : ""))
    case .burned:
        // For people the command's error says it (one message for one burn).
        if json { Terminal.json(["event": "burned", "code": "invite_burned"]) }
    case .expired(let spaceName):
        report(
            json, ["event": "expired", "code": "invite_expired"],
            "An invite for \(SafeText.line(spaceName)) expired.")
    case .attending(let codes):
        report(
            json, nil,
            "Waiting for someone to use \(codes.joined(separator: ", ")) (Ctrl-C stops; the invites stay pending)."
        )
    case .unused(let code):
        report(
            json, ["event": "waiting", "code": code ?? ""], "Nobody has used \(code ?? "the invite") yet.")
    case .nonePending:
        report(json, ["event": "none"], "No pending invites.")
    }
}

/// "Let Sam join Family? [y/N]" on standard error, answered on standard input. The wait looks at
/// `interruption` and at whether the joiner still waits, so neither side is left waiting.
private func askAtTerminal(_ interruption: Interruption) -> InviterAsk {
    { name, space, joinerWaiting in
        let shown = name.isEmpty ? "Someone" : SafeText.line(name)
        writePrompt("Let \(shown) join \(SafeText.line(space))? [y/N] ")
        var polls = 0
        while true {
            if interruption.isInterrupted {
                writePrompt("\n")
                return .stopped
            }
            var reader = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            let ready = poll(&reader, 1, 250)
            if ready > 0 { break }
            polls += 1
            // About once a second: the relay is asked whether the joiner left.
            if polls % 4 == 0, !joinerWaiting() {
                writePrompt("\n")
                return .no
            }
        }
        let answer = (readLine(strippingNewline: true) ?? "").trimmingCharacters(in: .whitespaces)
            .lowercased()
        return answer == "y" || answer == "yes" ? .yes : .no
    }
}

/// Runs an attending flow, mapping its errors to CLIErrors (the code had been proven by then).
private func attending<T>(_ body: () throws -> T) throws -> T {
    do {
        return try withSpaceErrors(body)
    } catch ShortInviteError.attending(let error) {
        throw joinCLIError(error, codeAccepted: true, attending: true)
    }
}

private func expiredError(_ attendant: InviteAttendant) -> CLIError {
    let uses = attendant.policy.uses
    return CLIError(
        code: .inviteExpired,
        message:
            "The invite expired after \(attendant.taken) of \(uses) use\(uses == 1 ? "" : "s"); make a new one.",
        status: .timedOut)
}

/// Ctrl-C or SIGTERM stopped a wait (exit status 1, code `interrupted`); the other side was told.
func interruptedError() -> CLIError {
    CLIError(code: .interrupted, message: "Interrupted.", status: .failure)
}

/// The invite link as a QR code, when a person is looking at a terminal.
func printQR(_ link: String) {
    guard Terminal.isInteractive, let lines = TerminalQR.render(link) else { return }
    for line in lines { Terminal.out(line) }
}

private func burnedError() -> CLIError {
    CLIError(
        code: .inviteBurned,
        message: "Someone tried a wrong code for your invite; it no longer works. Make a new one.",
        status: .codeRejected)
}

// MARK: eleven join

private func runJoin(_ arguments: ParsedArguments) throws {
    let json = arguments.flag("json")
    let wait = try arguments.duration("timeout", max: 7 * 86_400) ?? 300
    let state = localState()
    let resuming = arguments.flag("resume")
    let pending: PendingJoin
    if resuming {
        guard arguments.positional(0) == nil else {
            throw CLIError.usage("give either a code or --resume, not both", help: nil)
        }
        guard let last = try withSpaceErrors({ try ShortJoinFlow.interrupted(state: state) }) else {
            throw CLIError(
                code: .noPendingJoin, message: "There is no interrupted join to resume.", status: .failure)
        }
        pending = last
    } else {
        let typed = try arguments.positional(0) ?? promptForCode()
        if let link = try fullLengthLink(typed) { return try runLinkJoin(arguments, link: link) }
        let relay = try relayURL(arguments, server: linkServer(typed))
        let parsed: ParsedCode
        do {
            parsed = try CodeParser.parse(typed)
        } catch {
            throw CLIError(reporting: error.code, message: error.message, status: .codeRejected)
        }
        if !json {
            for correction in parsed.corrections where correction.changesWord {
                Terminal.out(correction.message)
            }
        }
        let name =
            arguments.value("name") ?? ProcessInfo.processInfo.environment["USER"].map { $0.capitalized }
            ?? ""
        pending = try withSpaceErrors {
            try ShortJoinFlow.begin(
                code: parsed.code, relay: relay, name: name, deviceLabel: ProcessInfo.processInfo.hostName,
                wait: Int64(wait), state: state)
        }
    }
    // The verification words are always shown; `--verify` stays accepted and changes nothing.
    _ = arguments.flag("verify")
    let interruption = Interruption.onSignals()
    let result: ShortJoinResult
    do {
        result = try withSpaceErrors {
            try ShortJoinFlow.run(pending, resuming: resuming, state: state, interruption: interruption) {
                printJoiner($0, json: json)
            }
        }
    } catch let error as ShortJoinError {
        throw joinCLIError(error.run, codeAccepted: error.codeAccepted)
    } catch let error as JoinGrantError {
        throw CLIError(reporting: error.code.rawValue, message: error.message, status: .failure)
    }
    switch result {
    case .alreadyJoined(let message):
        report(json, ["event": "already_joined", "message": message], SafeText.line(message))
    case .joined(let saved, let threads, let messages):
        vaultChanged()
        offerWayBackIn(json: json)
        if json {
            Terminal.json([
                "event": "joined", "space": saved.space.base64URL, "name": saved.name,
                "member": saved.member.base64URL, "threads": threads, "messages": messages,
            ])
        } else {
            Terminal.out(
                "Joined \(saved.shownName): \(threads) thread\(threads == 1 ? "" : "s"), "
                    + "\(messages) message\(messages == 1 ? "" : "s"). Run `eleven read` to read them.")
        }
    }
}

private func printJoiner(_ event: ShortJoinEvent, json: Bool) {
    switch event {
    case .resuming:
        report(json, ["event": "resuming"], "Resuming the join…")
    case .connecting:
        report(json, nil, "Connecting…")
    case .reconnecting:
        report(json, nil, "Reconnecting…")
    case .codeAccepted(let check):
        report(
            json, ["event": "code_accepted", "verification": check],
            "Code accepted. Verification words: \(check) (the inviter should see the same).")
    case .waitingForApproval(let inviter):
        report(
            json, ["event": "waiting"],
            "Waiting for \(inviter.map(SafeText.line) ?? "the inviter") to let you in…")
    }
}

// MARK: Helpers

/// The relay a short code uses (``RelayChoice``); `server`: the space server that applies (the
/// inviter's, or the one a word link names), asked only when nothing closer chose.
private func relayURL(_ arguments: ParsedArguments, server: String?) throws -> String {
    do {
        return try RelayChoice.resolve(
            option: arguments.wasGiven("relay") ? arguments.value("relay") : nil,
            environment: ProcessInfo.processInfo.environment, state: localState().directory,
            advertised: { server.map { ($0, SpaceClient.advertisedRelay(of: $0)) } }
        ).url
    } catch {
        throw CLIError.usage(error.description, help: nil)
    }
}

/// The space server a word link (`https://host/invite#Paul/coral-piano-42`) names; nil for a
/// bare code.
private func linkServer(_ text: String) -> String? {
    guard let url = URL(string: text.trimmingCharacters(in: .whitespaces)),
        let scheme = url.scheme?.lowercased(),
        scheme == "http" || scheme == "https", let host = url.host
    else { return nil }
    return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
}

private func joinErrors<T>(_ body: () throws(JoinRunError) -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw joinCLIError(error, codeAccepted: false)
    }
}

/// Said whenever a join finds nobody, or an ended invite, at a code's number: a code from
/// `eleven device add` has the same form but lives under another relay app, where a join never
/// looks, so the number may belong to an old invite or to nobody (the relay does not list device
/// codes, and claiming the number to check would take the new device's place).
private let deviceCodeHint = " (A code from `eleven device add` goes with `eleven device link`.)"

/// Distinct codes and exit statuses for everything a join can end with. `attending`: the error is
/// the inviter's (their relay stopped answering), not a joiner's wait for the inviter.
private func joinCLIError(_ error: Error, codeAccepted: Bool, attending: Bool = false) -> Error {
    guard let error = error as? JoinRunError else { return error }
    switch error {
    case .relay(.timedOut) where attending:
        return CLIError(
            code: .relayTimedOut,
            message:
                "The relay did not answer in time. Check the relay (--relay or ELEVEN_RELAY) and your network.",
            status: .unavailable)
    case .failed(.codeMismatch):
        return CLIError(
            code: .codeMismatch,
            message:
                "That code didn't match. Codes work once: ask for a new one. If you typed it right, someone "
                + "may have tried to intercept it: tell the person who gave it to you. This device will "
                + "also tell them when you next join.",
            status: .codeRejected)
    case .failed(.protocolError):
        return CLIError(code: .protocolError, message: error.description, status: .failure)
    case .failed(.inviteEnded(let end)):
        return CLIError(reporting: end.code, message: end.message + deviceCodeHint, status: .codeRejected)
    case .refused(let reason, let message):
        // `unavailable`: the attendant could not reach its space server, a server down (4), not
        // a person's no (6).
        let status: ExitStatus =
            switch RefusalReason(rawValue: reason) {
            case .declined: .refused
            case .unavailable: .unavailable
            default: .codeRejected
            }
        return CLIError(reporting: "refused_\(reason)", message: message, status: status)
    case .relay(.unreachable):
        return CLIError(
            code: .relayUnreachable,
            message:
                "\(error.description). Check the relay address (--relay or ELEVEN_RELAY) and your network.",
            status: .unavailable)
    case .relay(.rendezvous(.crowded)):
        return CLIError(
            code: .crowded,
            message: "Someone else is already using that code, so it cannot be used now. Ask for a new one.",
            status: .codeRejected)
    case .relay(.timedOut):
        if codeAccepted {
            return CLIError(
                code: .timedOut, message: "The inviter did not answer in time.", status: .timedOut)
        }
        return CLIError(
            code: .unknownCode,
            message: "Nobody is attending that code: it may be mistyped, already used, burned or expired, "
                + "or the inviter's device is offline." + deviceCodeHint,
            status: .codeRejected)
    case .relay:
        return CLIError(reporting: error.code, message: error.description, status: .unavailable)
    case .interrupted:
        return interruptedError()
    case .unrecorded:
        return CLIError(reporting: error.code, message: error.description, status: .localState)
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
