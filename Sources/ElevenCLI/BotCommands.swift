import CLISupport
import ClientCore
import Foundation
import PAKE
import SpaceModel
import WordCodes

// `eleven bot enable|disable|notes`, and the path `eleven invite --short` takes when the space
// has a bot: the invite goes to the bot (sealed to it, signed by this device) and the bot hands
// the code's nameplate back; nobody needs to stay online (docs/bot.md).

let botCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "bot", "enable"], summary: "Let a member (the space's bot) attend short-code invites.",
            options: [
                OptionSpec("member", value: "MEMBER", help: "the bot, by name or member id"),
                CommonOptions.space, CommonOptions.json,
            ],
            discussion: """
                Signs a membership event giving the member the invite and attendant rights; every client \
                learns from the space that invites go to it. Only the owner and admins may do this.
                """)
    ) { arguments in
        try setAttendant(arguments, enable: true)
    },
    .init(
        CommandSpec(
            ["eleven", "bot", "disable"], summary: "Stop sending invites to the space's bot.",
            options: [
                OptionSpec("member", value: "MEMBER", help: "the bot (default: the space's attendant)"),
                CommonOptions.space, CommonOptions.json,
            ])
    ) { arguments in
        try setAttendant(arguments, enable: false)
    },
    .init(
        CommandSpec(
            ["eleven", "bot", "notes"],
            summary:
                "Show what the space's bot did with your invites: who joined, which invites were burned.",
            options: [
                OptionSpec("keep", help: "show the same news again next time"),
                OptionSpec(
                    "wait", value: "DURATION", help: "when there is no news yet, wait this long for some"),
                CommonOptions.space, CommonOptions.json,
            ],
            discussion: """
                Who joined comes from the space's member list: the bot adds each joiner with your signed \
                invite record, so the list says who let whom in. The rest (burned, ended and refused \
                invites, failed attempts) are notes the bot sealed to you.
                """)
    ) { arguments in
        let session = try openSpace(arguments)
        let json = arguments.flag("json")
        let keep = arguments.flag("keep")
        let wait = try arguments.duration("wait", max: 3600) ?? 0
        let until = Date().addingTimeInterval(wait)
        var news = try botNews(session)
        while news.isEmpty && Date() < until {
            usleep(200_000)
            news = try botNews(session)
        }
        for join in news.joins {
            let message = joinedMessage(join, space: session.saved.shownName)
            if json {
                Terminal.json([
                    "event": "joined", "name": join.name, "member": join.member.base64URL,
                    "nameplate": join.invite.nameplate, "message": message,
                ])
            } else {
                Terminal.out(message)
            }
        }
        for (inboxID, note) in news.notes {
            if json {
                var object: [String: Any] = ["event": note.type.rawValue, "invite": note.id]
                if let name = note.name { object["name"] = name }
                if let message = note.message { object["message"] = message }
                Terminal.json(object)
            } else {
                Terminal.out(SafeText.line(note.message ?? note.type.rawValue))
            }
            if !keep { try? session.client.deleteNote(session.saved.space, id: inboxID) }
        }
        if !keep, !news.joins.isEmpty {
            try withSpaceErrors {
                try localState().updateSpaces { spaces in
                    guard let index = spaces.spaces.firstIndex(where: { $0.space == session.saved.space })
                    else {
                        return
                    }
                    spaces.spaces[index].joinsShownThrough = news.head
                }
            }
        }
        if news.isEmpty && !json { Terminal.out("No news from the bot.") }
    },
]

/// What `eleven bot notes` has to show: joins with this member's invites since the last time it
/// showed them (from the member list), and the bot's notes in the inbox.
private struct BotNews {
    var joins: [InviteJoin]
    /// The member list's last sequence: the joins shown go up to it.
    var head: UInt64
    var notes: [(inboxID: Int64, note: AttendantNote)]
    var isEmpty: Bool { joins.isEmpty && notes.isEmpty }
}

private func botNews(_ session: SpaceSession) throws -> BotNews {
    try withSpaceErrors {
        let (joins, head) = try session.invitedJoins(after: session.saved.joinsShownThrough)
        let page = try session.receiveNotes(since: 0)
        // A `joined` note comes only from a bot of an earlier version (joins are read from the
        // member list now): shown once, like the other notes.
        let kinds: Set<AttendantNote.Kind> = [
            .joined, .inviteBurned, .inviteEnded, .inviteRefused, .attemptReported,
        ]
        let notes = page.notes.compactMap { received -> (Int64, AttendantNote)? in
            guard case .success(let note) = received.content, kinds.contains(note.type) else { return nil }
            return (received.inboxID, note)
        }
        return BotNews(joins: joins, head: head, notes: notes)
    }
}

/// "Sam joined Family with your invite ending in 42.": the nameplate is the code's last part,
/// which the inviter handed out; the words are a secret this device does not keep.
func joinedMessage(_ join: InviteJoin, space: String) -> String {
    let name = join.name.isEmpty ? "Someone" : SafeText.line(join.name)
    return "\(name) joined \(space) with your invite ending in \(SafeText.line(join.invite.nameplate))."
}

private func setAttendant(_ arguments: ParsedArguments, enable: Bool) throws {
    let session = try openSpace(arguments)
    let roster = try withSpaceErrors { try session.roster() }
    let target: MemberRecord
    if let text = arguments.value("member") {
        guard let found = SpaceSession.findMember(text, in: roster) else {
            throw CLIError(
                code: .unknownMember,
                message: "\(session.saved.shownName) has no member \"\(text)\" (see `eleven members`).",
                status: .usage)
        }
        target = found
    } else if !enable, let attendant = roster.attendant {
        target = attendant
    } else {
        throw CLIError.usage("missing --member MEMBER (the bot's name in the space)", help: nil)
    }
    let rights =
        enable
        ? target.rights.union([.invite, .attendant]) : target.rights.subtracting([.invite, .attendant])
    let event: MembershipEvent
    do throws(KeyModelError) {
        event = try roster.nextEvent(.rightsChanged(target.id, rights), signedBy: session.identity)
        _ = try roster.applying(event)
    } catch {
        throw CLIError(reporting: error.code.rawValue, message: error.message, status: .refused)
    }
    _ = try withSpaceErrors { try session.client.appendEvent(event) }
    if arguments.flag("json") {
        Terminal.json([
            "event": enable ? "enabled" : "disabled", "member": target.id.base64URL, "rights": rights.names,
        ])
    } else if enable {
        Terminal.out(
            "\(displayName(target)) now attends short-code invites for \(session.saved.shownName): "
                + "`eleven invite --short` sends them to it, and nobody has to stay online.")
    } else {
        Terminal.out("\(displayName(target)) no longer attends invites for \(session.saved.shownName).")
    }
}

/// `eleven invite --short` when the space has a bot: sends it the invite and prints the code it
/// attends. Returns false when the caller attends the invite itself: the space has no bot, or the
/// bot did not answer within `--bot-timeout` (unless `--no-fallback`, which fails instead).
func inviteThroughBot(
    _ session: SpaceSession, _ arguments: ParsedArguments, relay: String, uses: Int, wordCount: Int,
    lifetime: TimeInterval
) throws -> Bool {
    let ask = arguments.flag("ask")
    let yes = arguments.flag("yes")
    let json = arguments.flag("json")
    let botTimeout = try arguments.duration("bot-timeout", max: 600) ?? 5
    let roster = try withSpaceErrors { try session.roster() }
    guard let bot = roster.attendant, bot.id != session.saved.member else { return false }
    // The relay first: without it neither the bot nor this device can attend, and a silent bot
    // must not be blamed for it.
    do throws(RelayConnectionError) {
        try RendezvousConnection.probe(url: relay)
    } catch {
        throw CLIError(
            reporting: error.code,
            message: "\(error.description.prefix(1).uppercased())\(error.description.dropFirst()). "
                + "Nobody can join with a short code until it is back (check --relay or ELEVEN_RELAY).",
            status: .unavailable)
    }
    var random = SystemRandom()
    let id = Base64URL.encode(random.bytes(count: 9))
    let words = Code.generate(nameplate: Nameplate(1)!, wordCount: wordCount).secretWords
    let now = Int64(Date().timeIntervalSince1970)
    let expiresAt = now + Int64(lifetime)
    let me = roster.members[session.saved.member]
    var request = AttendantNote.inviteRequest(
        id: id, words: words, uses: uses, expiresAt: expiresAt, maxFailures: 1, ask: ask,
        inviterName: me.flatMap { $0.name.isEmpty ? nil : $0.name })
    // The bot drops a request it finds too late: by then this device may attend instead.
    request.createdAt = now
    try withSpaceErrors { try session.send(request, to: bot) }
    // The bot has --bot-timeout to answer: say what this waits for.
    if !json { Terminal.err("Waiting for \(displayName(bot)), the space's bot, to take the invite…") }
    var since: Int64 = 0
    guard
        let ready = try awaitNote(
            session, id: id, types: [.inviteReady, .inviteRefused], since: &since,
            timeout: .milliseconds(Int64(botTimeout * 1000)))
    else {
        if arguments.flag("no-fallback") {
            throw CLIError(
                code: .botUnavailable,
                message:
                    "\(displayName(bot)), the bot of \(session.saved.shownName), did not answer: is eleven-bot running? "
                    + "(`eleven bot disable` lets members attend their own invites again.)",
                status: .timedOut)
        }
        if json {
            Terminal.json(["event": "fallback", "reason": "bot_unavailable", "attendant": bot.name])
        } else {
            Terminal.out(
                yes
                    ? "The bot is not answering; this device lets people in while this command runs."
                    : "The bot is not answering; you will be asked to let people in.")
        }
        return false
    }
    guard ready.type == .inviteReady, let nameplate = ready.nameplate else {
        throw CLIError(
            reporting: "refused_\(ready.reason ?? "invite")",
            message: "The bot refused the invite: \(ready.message ?? "no reason given").", status: .refused)
    }
    var record = AttendantNote(.inviteRecord, id: id)
    record.invite = session.identity.signInvite(
        space: session.saved.space, inviter: session.saved.member, nameplate: nameplate, createdAt: now,
        expiresAt: expiresAt, uses: uses)
    try withSpaceErrors { try session.send(record, to: bot) }
    let code = "\(words)-\(nameplate)"
    let link = inviteLink(server: session.saved.server, name: me?.name ?? session.saved.name, code: code)
    if json {
        Terminal.json([
            "event": "code", "code": code, "link": link, "expiresAt": expiresAt, "attendant": bot.name,
        ])
    } else {
        Terminal.out("Invite code: \(code)")
        Terminal.out("Link: \(link)")
        if Terminal.isInteractive, let lines = TerminalQR.render(link) {
            for line in lines { Terminal.out(line) }
        }
        Terminal.out(
            "\(displayName(bot)) attends it for \(session.saved.shownName): nobody needs to stay online. "
                + "`eleven bot notes` shows who joined.")
    }
    guard ask else { return true }
    // Asked to be asked: answer the bot for each joiner until the uses are taken or it ends. The
    // bot adds an approved joiner with this invite's signed record, so the member list says when
    // they are in (it sends no note per join).
    var joined = 0
    var awaitingJoins = 0
    var listedThrough: UInt64? = nil
    let end = ContinuousClock.now + .seconds(lifetime)
    while joined < uses, ContinuousClock.now < end {
        if awaitingJoins > 0 {
            let (joins, head) = try withSpaceErrors { try session.invitedJoins(after: listedThrough) }
            listedThrough = head
            for join in joins where join.invite == record.invite {
                joined += 1
                awaitingJoins = max(0, awaitingJoins - 1)
                Terminal.out(joinedMessage(join, space: session.saved.shownName))
            }
            guard joined < uses else { break }
        }
        // While an approved joiner is not in the list yet, look at it again every quarter second.
        let wait = awaitingJoins > 0 ? min(.milliseconds(250), end - .now) : end - .now
        guard
            let note = try awaitNote(
                session, id: id, types: [.approvalNeeded, .inviteBurned, .inviteEnded], since: &since,
                timeout: wait)
        else {
            if awaitingJoins > 0 { continue }
            break
        }
        switch note.type {
        case .approvalNeeded:
            let name = (note.name ?? "").isEmpty ? "Someone" : SafeText.line(note.name ?? "")
            if let words = note.verification {
                Terminal.out("\(name) proved the code (verification words: \(words)).")
            }
            var answer = AttendantNote(.approval, id: id)
            answer.use = note.use
            answer.approve = yes || askYesOrNo("Let \(name) join \(session.saved.shownName)? [y/N] ")
            try withSpaceErrors { try session.send(answer, to: bot) }
            if answer.approve == true { awaitingJoins += 1 }
        default:
            throw CLIError(
                code: .inviteBurned, message: note.message ?? "The invite ended.", status: .codeRejected)
        }
    }
    return true
}

/// Waits for a note about invite `id` of one of `types` from the inbox; notes about other
/// things are left there for `eleven bot notes`.
private func awaitNote(
    _ session: SpaceSession, id: String, types: Set<AttendantNote.Kind>, since: inout Int64,
    timeout: Swift.Duration
) throws -> AttendantNote? {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        let page = try withSpaceErrors { try session.receiveNotes(since: since) }
        for received in page.notes {
            guard case .success(let note) = received.content, note.id == id, types.contains(note.type) else {
                continue
            }
            if note.type != .inviteBurned {
                try? session.client.deleteNote(session.saved.space, id: received.inboxID)
            }
            // The next read starts after this note, not after the page: a note behind it in the
            // same page (the bot's "ended" right after a repeated question) is still to come.
            since = received.inboxID
            return note
        }
        since = page.next
        if page.notes.isEmpty { Thread.sleep(forTimeInterval: 0.05) }
    }
    return nil
}

private func askYesOrNo(_ question: String) -> Bool {
    FileHandle.standardError.write(Data(question.utf8))
    let answer = (readLine(strippingNewline: true) ?? "").trimmingCharacters(in: .whitespaces).lowercased()
    return answer == "y" || answer == "yes"
}
