import CLISupport
import ClientCore
import Foundation
import JoinProtocol
import PAKE
import SpaceModel
import WordCodes

// `eleven signin`, `eleven sync`, `eleven star`, `eleven reorder`, `eleven leave`,
// `eleven device add|link|remove`, `eleven devices`: saving your spaces on a home server and
// linking your other devices. The vault is encrypted on this device; the home server keeps
// ciphertext and wrapped keys only.

private let homeServerOption = OptionSpec(
    "server", value: "URL", help: "your home server (an eleven-server started with --home)",
    environment: "ELEVEN_HOME_SERVER")
private let linkRelayOption = OptionSpec(
    "relay", value: "URL", help: "the relay (default \(joinDefaultRelay), a local eleven-relay)",
    environment: "ELEVEN_RELAY")
private let labelOption = OptionSpec(
    "label", value: "NAME", help: "this device's name in `eleven devices` (default: the host name)")

let deviceCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "signin"], summary: "Save your spaces on your home server (sign in on first use).",
            options: [
                homeServerOption,
                OptionSpec(
                    "email", value: "ADDRESS",
                    help: "sign in with your email address (asked on a terminal); signed in: add it"),
                OptionSpec("remove-email", value: "ADDRESS", help: "stop signing in with this address"),
                OptionSpec(
                    "timeout", value: "DURATION", help: "how long to wait for your other device to approve",
                    default: "10m"),
                labelOption, CommonOptions.json,
            ],
            discussion: """
                The first time, makes your home account with this device as its first device and uploads \
                your spaces, encrypted on this device. With an email address, the server mails you a \
                6-digit code to type here; the same address on another device then finds this account \
                instead of making a second one. The server keeps no address, only a scrambled form it \
                cannot read back. From then on every change (join, create, leave, reorder, star) is saved \
                there too; a change made while the server is unreachable is saved later. When the address \
                already has an account, this device waits until one of your signed-in devices approves it \
                (`eleven devices approve` there; both show the same verification words) and then has \
                every space. Exit status 3: the code was wrong or expired; 6: your other device said no; \
                7: nobody approved in time.
                """)
    ) { arguments in
        try runSignIn(arguments)
    },
    .init(
        CommandSpec(
            ["eleven", "sync"],
            summary: "Save changes to your home server and bring in your other devices' changes.",
            options: [
                OptionSpec(
                    "watch",
                    help:
                        "keep running: sync now and then, and ask about new devices that sign in (Ctrl-C ends)"
                ),
                CommonOptions.json,
            ],
            discussion: """
                With --watch, a new device that signs in with your email address is noticed here: on a \
                terminal this asks "Approve <device>? [y/N]" after showing the verification words the new \
                device shows too; otherwise it says to run `eleven devices approve`.
                """)
    ) { arguments in
        if arguments.flag("watch") { return try watchSync(json: arguments.flag("json")) }
        let report = try homeErrors { try homeSync().sync() }
        if arguments.flag("json") {
            Terminal.json([
                "event": "synced", "spaces": report.spaces, "pushed": report.pushed,
                "keyGeneration": report.generation,
            ])
        } else {
            Terminal.out("Up to date: \(spacesPhrase(report.spaces)).")
        }
    },
    .init(
        CommandSpec(
            ["eleven", "star"], summary: "Star a space (or unstar it with --off).",
            options: [OptionSpec("off", help: "remove the star"), CommonOptions.json],
            positionals: [PositionalSpec("SPACE", help: "the space, by name or id")])
    ) { arguments in
        let space = try chooseSpace(
            arguments.positional(0), in: try withSpaceErrors { try localState().spaces() })
        let on = !arguments.flag("off")
        try homeErrors { try homeSync().star(space.space, on) }
        vaultChanged()
        if arguments.flag("json") {
            Terminal.json(["space": space.space.base64URL, "starred": on])
        } else {
            Terminal.out(on ? "Starred \(space.name)." : "Unstarred \(space.name).")
        }
    },
    .init(
        CommandSpec(
            ["eleven", "reorder"], summary: "Move a space to another place in your list.",
            options: [
                OptionSpec("to", value: "N", help: "its new place, 1 for the top"), CommonOptions.json,
            ],
            positionals: [PositionalSpec("SPACE", help: "the space, by name or id")])
    ) { arguments in
        let space = try chooseSpace(
            arguments.positional(0), in: try withSpaceErrors { try localState().spaces() })
        guard let place = try arguments.int("to", in: 1...100_000) else {
            throw CLIError.usage("missing --to N (1 for the top)", help: nil)
        }
        try homeErrors { try homeSync().move(space.space, to: place - 1) }
        vaultChanged()
        let order = try withSpaceErrors { try localState().spaces() }.spaces.map(\.name)
        if arguments.flag("json") {
            Terminal.json(["space": space.space.base64URL, "order": order])
        } else {
            Terminal.out("Your spaces: \(order.joined(separator: ", ")).")
        }
    },
    .init(
        CommandSpec(
            ["eleven", "leave"], summary: "Leave a space: you are removed from it and it is forgotten here.",
            options: [CommonOptions.json],
            positionals: [PositionalSpec("SPACE", help: "the space, by name or id")])
    ) { arguments in
        let state = localState()
        let space = try chooseSpace(arguments.positional(0), in: try withSpaceErrors { try state.spaces() })
        try withSpaceErrors {
            let session = try spaceSession(space, state: state)
            let roster = try session.roster()
            guard roster.owner != space.member else {
                throw CLIError(
                    code: .ownerCannotLeave, message: "You own \(space.name), so you cannot leave it.",
                    status: .refused)
            }
            if roster.members[space.member] != nil { try session.removeMember(space.member) }
            try state.updateSpaces { saved in
                saved.spaces.removeAll { $0.space == space.space }
                if saved.current == space.space { saved.current = saved.spaces.last?.space }
            }
        }
        vaultChanged()
        if arguments.flag("json") {
            Terminal.json(["space": space.space.base64URL, "left": true])
        } else {
            Terminal.out("You left \(space.name).")
        }
    },
    .init(
        CommandSpec(
            ["eleven", "devices"], summary: "List the devices signed in to your home account.",
            options: [CommonOptions.json])
    ) { arguments in
        let devices = try homeErrors { try homeSync().devices() }
        let waiting = try homeErrors { try homeSync().pendingApprovals() }
        if arguments.flag("json") {
            Terminal.json([
                "waiting": waiting.map {
                    ["id": $0.id, "createdAt": $0.createdAt, "answering": $0.answering]
                },
                "devices": devices.map {
                    [
                        "id": $0.id.base64URL, "label": $0.label, "kind": $0.kind.rawValue,
                        "createdAt": $0.createdAt,
                        "thisDevice": $0.isThisDevice, "genuine": $0.isGenuine,
                    ] as [String: Any]
                },
            ])
            return
        }
        for device in devices {
            let name = device.label.isEmpty ? "a device" : device.label
            let added = Date(timeIntervalSince1970: TimeInterval(device.createdAt)).formatted(
                date: .abbreviated, time: .shortened)
            var line = "\(device.isThisDevice ? "*" : " ") \(name)  added \(added)  (\(device.id))"
            if device.isThisDevice { line += "  this device" }
            if !device.isGenuine { line += "  NOT ADDED BY YOUR DEVICES" }
            Terminal.out(line)
        }
        for request in waiting {
            let since = Date(timeIntervalSince1970: TimeInterval(request.createdAt)).formatted(
                date: .omitted, time: .shortened)
            Terminal.out(
                "  a new device is waiting since \(since)  (\(request.id))  run `eleven devices approve`"
                    + (request.answering ? "  (another device is answering)" : ""))
        }
    },
    .init(
        CommandSpec(
            ["eleven", "devices", "approve"],
            summary: "Let in a new device that signed in with your email address.",
            options: [
                OptionSpec("yes", help: "approve without asking, once the words are shown (scripts)"),
                OptionSpec(
                    "timeout", value: "DURATION", help: "how long to wait for the new device", default: "5m"),
                CommonOptions.json,
            ],
            positionals: [
                PositionalSpec(
                    "ID", help: "the request (see `eleven devices`); default: the only one", optional: true)
            ],
            discussion: """
                Both devices show the same verification words; compare them, then answer \
                "Approve <device>? [y/N]". On yes the new device gets your spaces and is signed in. \
                Exit status 6: you said no.
                """)
    ) { arguments in
        try runApprove(arguments)
    },
    .init(
        CommandSpec(
            ["eleven", "device", "add"], summary: "Link another of your devices: shows a code to type there.",
            options: [
                OptionSpec("words", value: "N", help: "words in the code (2 to 8)", default: "2"),
                OptionSpec(
                    "timeout", value: "DURATION", help: "how long to wait for the other device",
                    default: "10m"),
                OptionSpec("yes", help: "link whichever device proves the code, without asking (scripts)"),
                linkRelayOption, CommonOptions.json,
            ],
            discussion: """
                Run `eleven device link CODE` on the new device. The code works once, only for linking a \
                device (a join code cannot link a device, nor this code join a space), and a wrong try \
                burns it. Both devices show the same verification words; this one asks \
                "Link <device>? [y/N]" before the new device gets your spaces and is signed in. \
                Exit status 6: you said no.
                """)
    ) { arguments in
        try runDeviceAdd(arguments)
    },
    .init(
        CommandSpec(
            ["eleven", "device", "link"],
            summary: "Sign this device in with a code from `eleven device add`.",
            options: [
                labelOption,
                OptionSpec(
                    "timeout", value: "DURATION", help: "how long to wait for the other device", default: "5m"
                ),
                linkRelayOption, CommonOptions.json,
            ],
            positionals: [
                PositionalSpec(
                    "CODE",
                    help: "the code the other device shows, e.g. coral-piano-42; asked for when omitted",
                    optional: true)
            ],
            discussion: "Exit status 3: the code did not match (it is burned now) or nobody is attending it.")
    ) { arguments in
        try runDeviceLink(arguments)
    },
    .init(
        CommandSpec(
            ["eleven", "device", "remove"],
            summary: "Remove a device from your home account; it can no longer get your spaces.",
            options: [CommonOptions.json],
            positionals: [PositionalSpec("ID", help: "the device, by id or name (see `eleven devices`)")],
            discussion: """
                Your spaces are locked again so that only your remaining devices can open them, and \
                you get a new identity in each space, so the removed device can neither write nor read \
                what is written afterwards. Run it on another device than the one being removed.
                """)
    ) { arguments in
        let sync = homeSync()
        let wanted = arguments.positional(0) ?? ""
        let devices = try homeErrors { try sync.devices() }
        let matches = devices.filter {
            $0.id.base64URL == wanted || $0.label.caseInsensitiveCompare(wanted) == .orderedSame
        }
        guard matches.count == 1, let target = matches.first else {
            throw CLIError(
                code: matches.isEmpty ? .unknownDevice : .ambiguousDevice,
                message: matches.isEmpty
                    ? "You have no device \"\(wanted)\". Run `eleven devices` to see yours."
                    : "Several devices are called \"\(wanted)\"; name it by id (see `eleven devices`).",
                status: .usage)
        }
        _ = try homeErrors { try sync.removeDevice(target.id) }
        let name = target.label.isEmpty ? "the device" : target.label
        let unmoved = moveSpacesAwayFromRemovedDevice(label: deviceLabel(arguments))
        if arguments.flag("json") {
            Terminal.json(["event": "removed", "device": target.id.base64URL, "unmoved": unmoved])
        } else {
            Terminal.out("Removed \(name). Your spaces are locked again; it can no longer open them.")
            if !unmoved.isEmpty {
                Terminal.err(
                    "Could not give you a new identity in \(unmoved.joined(separator: ", ")): "
                        + "the removed device can still act there.")
            }
        }
    },
]

// MARK: Signing in

private func runSignIn(_ arguments: ParsedArguments) throws {
    let sync = homeSync()
    let json = arguments.flag("json")
    let already = try homeErrors { try sync.home() } != nil
    if let address = arguments.value("remove-email") {
        guard already else { throw homeErrorsRethrow(HomeError.notSignedIn) }
        let removed = try homeErrors { try sync.removeEmail(address) }
        if json {
            Terminal.json(["event": "email_removed", "removed": removed])
        } else {
            Terminal.out(
                removed
                    ? "You no longer sign in with \(address)."
                    : "You did not sign in with \(address); nothing changed.")
        }
        return
    }
    let server = arguments.value("server")
    if !already && server == nil {
        throw CLIError.usage("missing --server URL (your home server, e.g. http://127.0.0.1:8712)", help: nil)
    }
    var address = arguments.value("email")
    if address == nil && !already && Terminal.isInteractive {
        writePrompt("Your email address, to find your account on your other devices (Enter to skip): ")
        address = (readLine(strippingNewline: true) ?? "").trimmingCharacters(in: .whitespaces)
        if address?.isEmpty == true { address = nil }
    }
    let proved = try address.map { try proveEmailAddress($0, server: server, sync: sync, json: json) }
    if already {
        if let proved, let address {
            try homeErrors { try sync.addEmail(ticket: proved.ticket) }
            if json {
                Terminal.json(["event": "email_added"])
            } else {
                Terminal.out("You can now sign in with \(address) on your other devices.")
            }
            return
        }
        let report = try homeErrors { try sync.sync() }
        if json {
            Terminal.json(["event": "signed_in", "spaces": report.spaces, "new": false])
        } else {
            Terminal.out("Already signed in; your \(spacesAreSaved(report.spaces)).")
        }
        return
    }
    if let proved, proved.hasAccount {
        // The address has an account: this device must not make a second one. It waits for one
        // of the account's devices to approve it.
        try waitForApproval(arguments, server: server ?? "", ticket: proved.ticket, sync: sync)
        return
    }
    let report = try homeErrors {
        try sync.signIn(server: server ?? "", label: deviceLabel(arguments), emailTicket: proved?.ticket)
    }
    if json {
        Terminal.json(["event": "signed_in", "spaces": report.spaces, "new": true])
    } else {
        Terminal.out("Signed in. Your \(spacesAreSaved(report.spaces)) on your home server.")
    }
}

/// The new device's wait: shows the words once a signed-in device answers, then has every space.
private func waitForApproval(_ arguments: ParsedArguments, server: String, ticket: String, sync: HomeSync)
    throws
{
    let json = arguments.flag("json")
    let wait = try arguments.duration("timeout", max: 86_400) ?? 600
    let report = try signInErrors {
        try sync.requestApproval(
            server: server, ticket: ticket, label: String(deviceLabel(arguments).prefix(64)),
            timeout: Double(wait),
            waiting: { _ in
                if json {
                    Terminal.json(["event": "approval_waiting"])
                } else {
                    Terminal.out(
                        "This address already has an account. On one of your signed-in devices run "
                            + "`eleven devices approve`.")
                }
            },
            words: { words in
                let check = words.joined(separator: " ")
                if json {
                    Terminal.json(["event": "approval_offered", "verification": check])
                } else {
                    Terminal.out("Verification words: \(check) (your other device shows the same).")
                }
            })
    }
    let names = try withSpaceErrors { try localState().spaces() }.spaces.map(\.name)
    if json {
        Terminal.json(["event": "signed_in", "spaces": names, "new": false])
    } else {
        Terminal.out(
            "This device is signed in. Your \(spacesPhrase(report.spaces)): \(names.joined(separator: ", "))."
        )
    }
}

/// Asks for a code for `address` and reads it from standard input until the server accepts one
/// (a wrong code may be typed again while it has tries left).
private func proveEmailAddress(_ address: String, server: String?, sync: HomeSync, json: Bool) throws
    -> HomeWire.EmailProved
{
    let sent = try signInErrors { try sync.requestEmailCode(server: server, address: address) }
    if json {
        Terminal.json(["event": "email_code_sent", "expiresAt": sent.expiresAt])
    } else {
        Terminal.out("We sent a 6-digit code to \(address).")
    }
    while true {
        writePrompt("Type the code from the email: ")
        guard let line = readLine(strippingNewline: true) else {
            throw CLIError(
                code: .codeMissing, message: "No code was typed. Run the command again to get a new one.",
                status: .codeRejected)
        }
        // A wrong code the server still counts tries for is asked again; the server says how many
        // are left in a field of its own, never only in the message.
        let proved: HomeWire.EmailProved? = try signInErrors {
            do {
                return try sync.proveEmail(server: server, challenge: sent.challenge, code: line)
            } catch let error as SpaceClientError
                where error.typedCode == .codeInvalid && (error.triesLeft ?? 0) > 0
            {
                if json {
                    Terminal.json(
                        [
                            "event": "code_invalid", "message": error.message,
                            "triesLeft": error.triesLeft ?? 0,
                        ])
                } else {
                    Terminal.err(error.message)
                }
                return nil
            }
        }
        if let proved { return proved }
    }
}

/// Home errors, with signing in's own statuses: a wrong or expired code is 3, too many tries or
/// a no from the other device is 6, no email on the server is 4, no answer in time is 7.
private func signInErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch {
        let reported = homeErrorsRethrow(error)
        guard let status = signInStatus(error), let reported = reported as? CLIError else { throw reported }
        throw CLIError(reporting: reported.code, message: reported.message, status: status)
    }
}

/// Signing in's own exit status for what failed, by its typed code (nil: the usual one).
private func signInStatus(_ error: Error) -> ExitStatus? {
    switch error {
    case let error as HomeError:
        switch error.code {
        case .declined: .refused
        case .noRequest, .ambiguousRequest: .usage
        case .timedOut: .timedOut
        default: nil
        }
    case let error as SpaceClientError:
        switch error.typedCode {
        case .codeInvalid, .codeExpired, .emailNotProved: .codeRejected
        case .tooManyAttempts: .refused
        case .emailUnavailable: .unavailable
        case .invalidAddress: .usage
        case .timedOut: .timedOut
        default: nil
        }
    default: nil
    }
}

private func runApprove(_ arguments: ParsedArguments) throws {
    let json = arguments.flag("json")
    let wait = try arguments.duration("timeout", max: 86_400) ?? 300
    let approved = try approveDevice(
        id: arguments.positional(0), timeout: Double(wait), yes: arguments.flag("yes"), json: json)
    guard approved else {
        throw CLIError(
            code: .declined, message: "Not approved: you said no. Nothing was shared.", status: .refused)
    }
}

/// Answers a waiting device (the words, then "Approve <label>? [y/N]"); true when approved.
private func approveDevice(id: String?, timeout: Double, yes: Bool, json: Bool) throws -> Bool {
    let answer = try signInErrors {
        try homeSync().approve(id: id, timeout: timeout) { label, words in
            let check = words.joined(separator: " ")
            let name = label.isEmpty ? "the new device" : label
            if json {
                Terminal.json(["event": "approval_words", "label": label, "verification": check])
            } else {
                Terminal.out("Verification words: \(check) (the new device should show the same).")
            }
            return yes || askYesNo("Approve \(name)? [y/N] ")
        }
    }
    let name = answer.label.isEmpty ? "the new device" : answer.label
    guard answer.approved else { return false }
    vaultChanged()
    if json {
        Terminal.json(["event": "approved", "label": answer.label])
    } else {
        Terminal.out("Approved \(name). It has your spaces now.")
    }
    return true
}

/// `eleven sync --watch`: syncs every half minute and looks for new devices every two seconds. A
/// device waiting for approval is asked about on a terminal (the person is there to compare the
/// words); elsewhere (a script, a service) the watch only says how to approve, once per request,
/// since nobody could answer.
private func watchSync(json: Bool) throws {
    let sync = homeSync()
    guard try homeErrors({ try sync.home() }) != nil else { throw homeErrorsRethrow(HomeError.notSignedIn) }
    let report = try homeErrors { try sync.sync() }
    if json {
        Terminal.json(["event": "synced", "spaces": report.spaces, "watching": true])
    } else {
        Terminal.out(
            "Up to date: \(spacesPhrase(report.spaces)). Watching for changes and new devices (Ctrl-C ends).")
    }
    let interactive = Terminal.isInteractive && !json
    // Ctrl-C or SIGTERM ends the watch between looks (exit status 0); during an approval the
    // process ends within 5 seconds.
    let interruption = Interruption.onSignals(grace: 5)
    var told: Set<String> = []
    var lastSync = Date()
    var lastLook = Date()
    while !interruption.isInterrupted {
        Thread.sleep(forTimeInterval: 0.25)
        if Date().timeIntervalSince(lastLook) < 2 { continue }
        lastLook = Date()
        do {
            if Date().timeIntervalSince(lastSync) >= 30 {
                lastSync = Date()
                _ = try sync.sync()
            }
            for request in try sync.pendingApprovals() where !request.answering && !told.contains(request.id)
            {
                guard interactive else {
                    told.insert(request.id)
                    if json {
                        Terminal.json(["event": "approval_waiting", "id": request.id])
                    } else {
                        Terminal.out(
                            "A new device is waiting to be let in. To approve it, run `eleven devices approve \(request.id)`."
                        )
                    }
                    continue
                }
                Terminal.out("A new device signed in with your email address.")
                do {
                    if try !approveDevice(id: request.id, timeout: 300, yes: false, json: false) {
                        Terminal.out("Not approved. Nothing was shared.")
                    }
                } catch let error as CLIError {
                    Terminal.err(error.message)
                }
                told.insert(request.id)
            }
        } catch let error as SpaceClientError where error.kind == .unreachable {
            // A server that is down for a while is waited for, not fatal to the watch.
            continue
        } catch {
            throw homeErrorsRethrow(error)
        }
    }
}

// MARK: Hook

/// Called after every command that changes the saved spaces: records the change in the vault and
/// pushes it when signed in. Never fails the command: when the home server is unreachable the
/// change stays queued and the next sync pushes it.
func vaultChanged() {
    let sync = homeSync()
    do {
        try sync.recordLocalChanges()
        guard try sync.home() != nil else { return }
        _ = try sync.sync()
    } catch let error as SpaceClientError where error.kind == .unreachable {
        Terminal.err(
            "Saved on this device. Your home server is unreachable; this change will be saved there later.")
    } catch {
        Terminal.err("Saved on this device, but not on your home server yet: \(error)")
    }
}

// MARK: Linking

private func runDeviceAdd(_ arguments: ParsedArguments) throws {
    let json = arguments.flag("json")
    let sync = homeSync()
    guard try homeErrors({ try sync.home() }) != nil else {
        throw CLIError(
            code: .notSignedIn,
            message: "Sign in first with `eleven signin --server URL`, then add your other devices.",
            status: .localState)
    }
    try homeErrors { _ = try sync.sync() }
    let relay = try linkRelay(arguments)
    let wordCount = try arguments.int("words", in: Code.wordCountRange) ?? 2
    let wait = try arguments.duration("timeout", max: 86_400) ?? 600
    let words = Code.generate(nameplate: Nameplate(1)!, wordCount: wordCount).secretWords
    let yes = arguments.flag("yes")
    var failure: Error?
    var declined = false
    var linked: JoinRequest?
    do {
        linked = try JoinRunner.attend(
            relayURL: relay, words: words, intent: .linkDevice, inviterName: nil, announceWaiting: false,
            timeout: .seconds(wait),
            onNameplate: { nameplate in
                let code = "\(words)-\(nameplate.value)"
                if json {
                    Terminal.json(["event": "code", "code": code])
                } else {
                    Terminal.out("Device code: \(code)")
                    Terminal.out("On your other device run: eleven device link \(code)")
                }
            },
            decide: { request, sas in
                let check = VerificationWords.words(for: sas).joined(separator: " ")
                if json {
                    Terminal.json(["event": "code_proven", "verification": check])
                } else {
                    Terminal.out(
                        "Code proven. Verification words: \(check) (the new device should show the same).")
                }
                // The account's keys go only to a device the person says yes to, after comparing
                // the words.
                let label = request.deviceLabel.isEmpty ? "the new device" : request.deviceLabel
                guard yes || askYesNo("Link \(label)? [y/N] ") else {
                    declined = true
                    return .refuse(reason: .declined, message: "The other device declined.")
                }
                do {
                    return .approve(grant: try sync.approveLink(request))
                } catch {
                    failure = error
                    return .refuse(
                        reason: .unavailable, message: "The other device could not add this one: \(error)")
                }
            })
    } catch {
        throw linkCLIError(error, attendant: true)
    }
    if let failure { throw homeErrorsRethrow(failure) }
    if declined {
        throw CLIError(
            code: .declined, message: "Not linked: you said no. Nothing was shared.", status: .refused)
    }
    vaultChanged()
    let label =
        linked.map { $0.deviceLabel.isEmpty ? "your new device" : $0.deviceLabel } ?? "your new device"
    if json {
        Terminal.json(["event": "linked", "label": label])
    } else {
        Terminal.out("Linked \(label). It has your spaces now.")
    }
}

private func runDeviceLink(_ arguments: ParsedArguments) throws {
    let json = arguments.flag("json")
    let relay = try linkRelay(arguments)
    let wait = try arguments.duration("timeout", max: 86_400) ?? 300
    let sync = homeSync()
    if try homeErrors({ try sync.home() }) != nil {
        // A device removed from its account may be linked again; a signed-in one may not.
        do {
            _ = try sync.sync()
            throw CLIError(
                code: .alreadySignedIn,
                message: "This device is already signed in; `eleven sync` brings in your spaces.",
                status: .localState)
        } catch let error as SpaceClientError where error.typedCode == .deviceRevoked {
            try homeErrors { try sync.signOut() }
        }
    }
    // Asked for when not given (Tab completes its words), as `eleven join` does.
    let typed = try arguments.positional(0).map { try requireCode($0) } ?? promptForCode()
    let parsed: ParsedCode
    do {
        parsed = try CodeParser.parse(typed)
    } catch {
        throw CLIError(reporting: error.code, message: error.message, status: .codeRejected)
    }
    if !json {
        for correction in parsed.corrections where correction.changesWord { Terminal.out(correction.message) }
    }
    let key = try homeErrors { try sync.deviceKey() }
    let request = JoinRequest(
        displayName: "", deviceLabel: String(deviceLabel(arguments).prefix(64)),
        publicKeys: JoinerKeys(key.publicKeys))
    let grant: [UInt8]
    do {
        grant = try JoinRunner.join(
            relayURL: relay, nameplate: parsed.code.nameplate,
            words: parsed.code.secretWords, intent: .linkDevice, request: request, timeout: .seconds(wait),
            firstAnswer: .seconds(min(wait, 15))
        ) { progress in
            guard case .codeAccepted(let sas) = progress else { return }
            let check = VerificationWords.words(for: sas).joined(separator: " ")
            if json {
                Terminal.json(["event": "code_accepted", "verification": check])
            } else {
                Terminal.out(
                    "Code accepted. Verification words: \(check) (your other device should show the same). "
                        + "Getting your spaces…")
            }
        }
    } catch {
        throw linkCLIError(error, attendant: false)
    }
    let report = try homeErrors { try sync.completeLink(grant: grant) }
    let names = try withSpaceErrors { try localState().spaces() }.spaces.map(\.name)
    if json {
        Terminal.json(["event": "linked", "spaces": names])
    } else {
        Terminal.out(
            "This device is signed in. Your \(spacesPhrase(report.spaces)): \(names.joined(separator: ", "))."
        )
    }
}

private func linkRelay(_ arguments: ParsedArguments) throws -> String {
    let relay = arguments.value("relay") ?? joinDefaultRelay
    guard relay.hasPrefix("ws://") || relay.hasPrefix("wss://") else {
        throw CLIError.usage("'--relay' must be a ws:// or wss:// URL, not '\(relay)'", help: nil)
    }
    return relay
}

/// Codes and exit statuses for a device link that did not happen.
private func linkCLIError(_ error: Error, attendant: Bool) -> Error {
    guard let error = error as? JoinRunError else { return error }
    switch error {
    case .failed(.codeMismatch):
        return CLIError(
            code: .codeMismatch,
            message: attendant
                ? "Someone tried a wrong code, so this code is burned. Run `eleven device add` again."
                : "That code didn't match. Codes work once: run `eleven device add` again on your other device.",
            status: .codeRejected)
    case .refused(let reason, let message):
        return CLIError(reporting: "refused_\(reason)", message: message, status: .refused)
    case .relay(.timedOut):
        return CLIError(
            code: attendant ? .timedOut : .unknownCode,
            message: attendant
                ? "No device used the code in time; run `eleven device add` again."
                : "Nobody is attending that code: it may be mistyped, used, burned or expired. "
                    + "Run `eleven device add` on your other device.",
            status: attendant ? .timedOut : .codeRejected)
    case .relay(.unreachable):
        return CLIError(
            code: .relayUnreachable, message: "\(error.description). Check --relay or ELEVEN_RELAY.",
            status: .unavailable)
    case .failed, .relay, .interrupted:
        return CLIError(reporting: error.code, message: error.description, status: .failure)
    case .unrecorded:
        return CLIError(reporting: error.code, message: error.description, status: .localState)
    }
}

// MARK: Helpers

func homeSync() -> HomeSync { HomeSync(state: localState()) }

func deviceLabel(_ arguments: ParsedArguments) -> String {
    arguments.value("label") ?? ProcessInfo.processInfo.hostName
}

func spacesPhrase(_ count: Int) -> String { count == 1 ? "1 space" : "\(count) spaces" }

/// "1 space is saved", "2 spaces are saved".
func spacesAreSaved(_ count: Int) -> String { "\(spacesPhrase(count)) \(count == 1 ? "is" : "are") saved" }

/// Maps home, client and local-state errors to CLIErrors.
func homeErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try withSpaceErrors(body)
    } catch {
        throw homeErrorsRethrow(error)
    }
}

func homeErrorsRethrow(_ error: Error) -> Error {
    switch error {
    case let error as HomeError:
        let status: ExitStatus =
            switch error.code {
            case .notSignedIn: .localState
            case .cannotRemoveSelf, .unknownDevice: .usage
            // The home server answered with something a device of the account did not make.
            case .vaultKeyUnauthenticated, .vaultRolledBack, .keyMismatch: .unavailable
            default: .failure
            }
        return CLIError(reporting: error.code.rawValue, message: error.message, status: status)
    case let error as KeyModelError:
        return CLIError(
            reporting: error.code.rawValue,
            message: "Your saved spaces could not be opened: \(error.message)",
            status: .failure)
    case let error as SpaceClientError:
        return cliError(error)
    case let error as LocalStateError:
        return cliError(error)
    default:
        return error
    }
}
