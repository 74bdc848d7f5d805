import CLISupport
import ClientCore
import Foundation
import SpaceModel

// Full-length invite links (`https://host/invite#Sam/T`, see DESIGN.md flow D): `eleven invite`
// without --short mints one, `eleven invite show LINK` reads its welcome card without using it,
// and `eleven join LINK` shows the card and claims the invite only once the person says yes.
// The link's secret stays on this device: the server only sees what it derives.

/// The options `eleven invite` takes for links (its spec lives with the short-code invite).
let linkInviteOptions: [OptionSpec] = [
    OptionSpec(
        "name", value: "NAME", help: "link: the invited person's name (in the link, suggested to them)"),
    OptionSpec("dm", help: "link: a direct conversation between you and the person you invite"),
    OptionSpec("device", help: "link: add another device of yours; it acts as you in the space"),
    OptionSpec(
        "setup", value: "SPACE",
        help: "link: whoever opens it first creates the space SPACE and owns it (with --server)"),
    OptionSpec("server", value: "URL", help: "with --setup: the space server", environment: "ELEVEN_SERVER"),
    OptionSpec(
        "creation-token", value: "TOKEN",
        help: "with --setup: the server's space creation token, if it has one",
        environment: "ELEVEN_CREATION_TOKEN"),
    OptionSpec("sealed", help: "link: only people with the link see the space's name"),
]

/// The options `eleven join` takes for links.
let linkJoinOptions: [OptionSpec] = [
    OptionSpec("yes", help: "with a link: join without asking first (scripts)")
]

/// How long a link works unless `--expires` says otherwise, and at most (the server's limit).
private let defaultLinkLifetime = 7 * 86_400
private let maximumLinkLifetime = 90 * 86_400

let linkCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "invite", "show"], summary: "Show what an invite link offers, without using it.",
            options: [CommonOptions.json],
            positionals: [PositionalSpec("LINK", help: "https://host/invite#Sam/…")],
            discussion: """
                Reads the invite's welcome card from its server: the space, who invited you, the \
                suggested name, what the link does and until when. Nothing is used up; join with \
                `eleven join LINK`. Exit status 2: the link is malformed; 3: it is unknown, expired or \
                used up; 4: its server cannot be reached.
                """)
    ) { arguments in
        let json = arguments.flag("json")
        let text = arguments.positional(0) ?? ""
        guard let link = try fullLengthLink(text) else {
            throw CLIError(
                code: .notALink,
                message: "That is not a full-length invite link (a short code is joined with `eleven join`).",
                status: .usage)
        }
        let card = try linkErrors { try link.inspect() }
        // Showing uses nothing, here either: a device without state gets none made.
        let state = localState()
        let saved =
            FileManager.default.fileExists(atPath: state.directory.path)
            ? try withSpaceErrors { try state.spaces() } : SavedSpaces()
        let already = card.alreadySaved(in: saved)
        if json {
            Terminal.json(cardObject(card, saved: already != nil))
            return
        }
        for line in cardLines(card) { Terminal.out(line) }
        if let already {
            Terminal.out("You are already in \(already.name) on this device.")
        } else {
            Terminal.out("Nothing was used. To accept, run: eleven join \(shellQuoted(text))")
        }
    },
    .init(
        CommandSpec(
            ["eleven", "members", "devices"], summary: "List the devices that act as you in a space.",
            options: [CommonOptions.space, CommonOptions.json],
            discussion: "A device added with `eleven invite --device` appears here once it has joined.")
    ) { arguments in
        let session = try openSpace(arguments)
        let tokens = try withSpaceErrors { try session.client.deviceTokens(session.saved.space) }
            .filter { $0.member == session.saved.member }
        if arguments.flag("json") {
            Terminal.json([
                "space": session.saved.space.base64URL, "member": session.saved.member.base64URL,
                "devices": tokens.map {
                    [
                        "id": $0.id, "label": $0.label, "createdAt": $0.createdAt, "expiresAt": $0.expiresAt,
                        "revoked": $0.revokedAt != nil,
                    ] as [String: Any]
                },
            ])
            return
        }
        Terminal.out("Devices acting as you in \(session.saved.shownName):")
        for token in tokens {
            let label = token.label.isEmpty ? "(unnamed device)" : token.label
            Terminal.out(
                "  \(label)  added \(dateText(token.createdAt))\(token.revokedAt == nil ? "" : "  (signed out)")"
            )
        }
    },
]

// MARK: eleven invite (a link)

/// `eleven invite` without --short: mints a full-length link and prints it with a QR code.
func runLinkInvite(_ arguments: ParsedArguments) throws {
    let json = arguments.flag("json")
    for shortOnly in ["words", "detach"] where arguments.given.contains(shortOnly) {
        throw CLIError.usage("--\(shortOnly) is for short codes: add --short", help: nil)
    }
    let setupName = try checkedName(arguments.value("setup"), field: "--setup")
    let chosen = [arguments.flag("dm"), arguments.flag("device"), setupName != nil].filter { $0 }.count
    guard chosen <= 1 else { throw CLIError.usage("choose one of --dm, --device and --setup", help: nil) }
    let shape: InviteShape =
        setupName != nil ? .setup : arguments.flag("dm") ? .dm : arguments.flag("device") ? .device : .member
    let lifetime =
        arguments.given.contains("expires")
        ? Int(try arguments.duration("expires", max: Double(maximumLinkLifetime)) ?? 0) : defaultLinkLifetime
    guard lifetime >= 60 else {
        throw CLIError.usage("a link works for at least a minute (--expires)", help: nil)
    }
    let uses = arguments.given.contains("uses") ? try arguments.int("uses", in: 1...1000) ?? 1 : 1
    guard shape == .member || uses == 1 else {
        throw CLIError.usage("--uses is for member links; \(shape.rawValue) links work once", help: nil)
    }
    if shape == .setup, arguments.flag("sealed") {
        throw CLIError.usage(
            "a space that does not exist yet has no name to seal: leave out --sealed", help: nil)
    }
    let personName = try checkedName(arguments.value("name"), field: "--name")
    if shape == .device, personName != nil {
        throw CLIError.usage("a device link carries your own name: leave out --name", help: nil)
    }
    let options = InviteOptions(
        personName: personName, uses: uses, expiresIn: Int64(lifetime),
        sealedBranding: arguments.flag("sealed"))
    let link: InviteLink
    let spaceName: String
    if let setupName {
        guard let server = arguments.value("server") else {
            throw CLIError.usage(
                "--setup needs --server URL (the server the new space will live on)", help: nil)
        }
        _ = try checkedServerURL(server)
        link = try linkErrors {
            try InviteLink.mintSetup(
                server: server, spaceName: setupName, creationToken: arguments.value("creation-token"),
                options: options)
        }
        spaceName = setupName
    } else {
        let session = try openSpace(arguments)
        link = try linkErrors { try InviteLink.mint(shape, from: session, options: options) }
        // Tidy up after invites that expired unused (an admin's device retires their signers).
        _ = try? session.retireStaleInviteSigners()
        spaceName = session.saved.name
    }
    let text = link.text()
    let expiresAt = Int64(Date().timeIntervalSince1970) + Int64(lifetime)
    if json {
        Terminal.json([
            "event": "link", "link": text, "shape": shape.rawValue, "space": spaceName, "uses": uses,
            "expiresAt": expiresAt,
        ])
        return
    }
    let what =
        switch shape {
        case .setup: "sets up the new space \(spaceName); whoever opens it first owns it"
        case .member: "lets \(personName ?? (uses == 1 ? "one person" : "\(uses) people")) join \(spaceName)"
        case .dm: "starts a direct conversation with \(personName ?? "the person") in \(spaceName)"
        case .device: "adds one more of your devices to \(spaceName)"
        }
    Terminal.out("Invite link (it \(what); works until \(dateText(expiresAt))):")
    Terminal.out(text)
    printQR(text)
    Terminal.out("Anyone with this link can use it: share it privately.")
}

/// `eleven invite --short` with an option only links have is a usage error, not silently ignored.
func refuseLinkOnlyOptions(_ arguments: ParsedArguments) throws {
    for option in linkInviteOptions where arguments.given.contains(option.name) {
        throw CLIError.usage("--\(option.name) is for links: leave out --short", help: nil)
    }
}

// MARK: eleven join LINK

/// The full-length link in `text`; nil when `text` is a short code, or a link carrying one, which
/// the short-code join reads (with its typo correction). A malformed link is an error naming the
/// part that is wrong.
func fullLengthLink(_ text: String) throws -> InviteLink? {
    do {
        if case .link(let link) = try InviteReference(parsing: text) { return link }
        return nil
    } catch {
        let lowered = text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        let looksLikeLink =
            lowered.hasPrefix("http://") || lowered.hasPrefix("https://") || lowered.contains("#")
            || lowered.hasPrefix(InviteReference.appScheme)
        guard looksLikeLink, error.code != .invalidShortCode else { return nil }
        throw CLIError(reporting: error.code.rawValue, message: error.message, status: .usage)
    }
}

/// `eleven join LINK`: the card, the question, then the claim (deferred: nothing is used before
/// the person says yes). A space already saved here is left as it is.
func runLinkJoin(_ arguments: ParsedArguments, link: InviteLink) throws {
    let json = arguments.flag("json")
    let givenName = try checkedName(arguments.value("name"), field: "--name")
    let state = localState()
    let saved = try withSpaceErrors { try state.spaces() }
    let card: InviteCard
    do {
        card = try link.inspect()
    } catch  where [.inviteUsed, .inviteExpired].contains(error.typedCode) {
        // This device used the link itself: say so rather than that it is used up.
        let id = link.secret.derive().id
        guard let joined = saved.spaces.first(where: { $0.joinedWith == id }) else {
            throw linkFailure(error)
        }
        report(
            json, ["event": "already_joined", "space": joined.space.base64URL, "name": joined.name],
            "You joined \(joined.name) with this link already; nothing changed.")
        return
    } catch {
        throw linkFailure(error)
    }
    let already = card.alreadySaved(in: saved)
    if json {
        Terminal.json(cardObject(card, saved: already != nil))
    } else {
        for line in cardLines(card) { Terminal.out(line) }
    }
    if let already {
        report(
            json, ["event": "already_joined", "space": already.space.base64URL, "name": already.name],
            "You are already in \(already.name) on this device; nothing changed.")
        return
    }
    let login = ProcessInfo.processInfo.environment["USER"].map { $0.capitalized }
    let name = givenName ?? card.suggestedName ?? login ?? ""
    if !arguments.flag("yes") {
        let question =
            switch card.shape {
            case .setup: "Set up \(card.spaceName) and become its owner? [y/N] "
            case .member, .dm:
                "Join \(card.spaceName) as \(name.isEmpty ? "a nameless member" : name)? [y/N] "
            case .device:
                "Add this device to \(card.inviterName ?? "the inviter")'s account in \(card.spaceName)? [y/N] "
            }
        guard askYesNo(question) else {
            throw CLIError(
                code: .cancelled, message: "You did not join; nothing was used and the link still works.",
                status: .refused)
        }
    }
    let label = String(ProcessInfo.processInfo.hostName.prefix(64))
    // A device link adopts the member's identity; every other shape makes a new key pair for this
    // space, so a person's spaces cannot be linked by key.
    let claimed = try linkErrors { try link.claim(name: name, deviceLabel: label) }
    var joined = claimed.saved
    joined.joinedWith = link.secret.derive().id
    try withSpaceErrors {
        try state.updateSpaces { (spaces) throws(LocalStateError) in
            joined.identityKey = try state.identityKey(for: claimed.identity)
            spaces.save(joined)
        }
    }
    // Earlier short codes that did not check out: the space's bot hears of them now (sealed to
    // it, signed by this new member), as a short-code join would have told its attendant.
    if let session = try? SpaceSession(saved: joined, identity: claimed.identity) {
        ShortJoinFlow.reportFailedAttempts(session, state: state)
    }
    // Like every other way a space arrives: saved on the home server at once when signed in.
    vaultChanged()
    offerWayBackIn(json: json)
    let spaceName = claimed.saved.name
    if json {
        Terminal.json([
            "event": "joined", "shape": claimed.shape.rawValue, "space": claimed.saved.space.base64URL,
            "name": spaceName, "member": claimed.saved.member.base64URL, "server": claimed.saved.server,
            "thread": claimed.thread?.base64URL ?? NSNull(),
        ])
        return
    }
    // Names from the inviter and the joiner: one line each.
    let shownSpace = SafeText.line(spaceName)
    let shownName = SafeText.line(name)
    let inviterName = card.inviterName.map(SafeText.line)
    switch claimed.shape {
    case .setup:
        Terminal.out("You set up \(shownSpace) and own it. Invite people with `eleven invite`.")
    case .member:
        Terminal.out("Joined \(shownSpace) as \(shownName). Run `eleven read` to read it.")
    case .dm:
        Terminal.out(
            "Joined \(shownSpace): your conversation with \(inviterName ?? "the inviter") is ready. "
                + "Run `eleven read --thread \(claimed.thread?.base64URL ?? "")`.")
    case .device:
        Terminal.out(
            "This device now acts as \(inviterName ?? "you") in \(shownSpace). Run `eleven read` to read it."
        )
    }
}

// MARK: The welcome card

private func cardLines(_ card: InviteCard) -> [String] {
    let inviter = card.inviterName.flatMap { $0.isEmpty ? nil : $0 }
    let what =
        switch card.shape {
        case .setup: "set up this new space; whoever joins first owns it"
        case .member: "join as a member"
        case .dm: "a direct conversation with \(inviter ?? "the inviter")"
        case .device: "add this device to \(inviter ?? "the inviter")'s account (it will act as them)"
        }
    var lines = ["Invite to \(card.spaceName)\(card.isSealed ? " (name revealed by the link)" : "")"]
    if let inviter { lines.append("  Invited by: \(inviter)") }
    lines.append("  What: \(what)")
    if let suggested = card.suggestedName, card.shape != .device {
        lines.append("  Suggested name: \(suggested)")
    }
    lines.append("  Space picture: \(card.avatar.map { card.server + $0 } ?? "none")")
    lines.append("  Expires: \(dateText(card.expiresAt))")
    if card.usesLeft > 1 { lines.append("  Uses left: \(card.usesLeft)") }
    // Every field came from the inviter or the server: one line each, whatever they hold.
    return lines.map(SafeText.line)
}

private func cardObject(_ card: InviteCard, saved: Bool) -> [String: Any] {
    [
        "event": "card", "server": card.server, "space": card.space.base64URL, "spaceName": card.spaceName,
        "avatar": card.avatar.map { card.server + $0 } ?? NSNull(),
        "suggestedName": card.suggestedName ?? NSNull(), "inviter": card.inviter?.base64URL ?? NSNull(),
        "inviterName": card.inviterName ?? NSNull(), "shape": card.shape.rawValue,
        "expiresAt": card.expiresAt, "usesLeft": card.usesLeft, "sealed": card.isSealed,
        "alreadySaved": saved,
    ]
}

private func dateText(_ seconds: Int64) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
    return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
}

// MARK: Errors

/// Runs `body`, giving refused invites (unknown, expired, used up, void, not opening) their own
/// codes with exit status 3; other failures map as for every space command.
private func linkErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw linkFailure(error)
    }
}

/// ``linkErrors(_:)``'s mapping of one error.
private func linkFailure(_ error: Error) -> Error {
    switch error {
    case let error as SpaceClientError:
        switch error.typedCode {
        case .unknownInvite, .inviteExpired, .inviteUsed, .inviterRemoved, .claimInvalid, .inviteUnreadable:
            return CLIError(reporting: error.code, message: error.message, status: .codeRejected)
        default:
            return cliError(error)
        }
    case let error as LocalStateError:
        return cliError(error)
    default:
        return error
    }
}
