import CLISupport
import ClientCore
import Foundation
import SpaceModel

/// `eleven whoami`, `eleven space create`, `eleven space join`, `eleven spaces`.
let spaceCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "whoami"],
            summary: "Show this device's public key (made on first use).",
            options: [CommonOptions.json],
            discussion: """
                Give the key to a space owner, who adds you with `eleven members add --key KEY`.
                The private keys stay in $ELEVEN_HOME (default ~/.eleven), readable only by you.
                """)
    ) { arguments in
        let state = localState()
        let (identity, created) = try withSpaceErrors { try state.identity(create: true) }
        if arguments.flag("json") {
            Terminal.json(["key": identity.publicKeys.text, "created": created, "home": state.directory.path])
            return
        }
        Terminal.out(identity.publicKeys.text)
        if created { Terminal.err("(a new identity for this device was saved in \(state.directory.path))") }
    },
    .init(
        CommandSpec(
            ["eleven", "space", "create"],
            summary: "Create a space on a server; you become its owner.",
            options: [
                OptionSpec(
                    "server", value: "URL", help: "the space server (http://host:port or https://host)",
                    environment: "ELEVEN_SERVER"),
                OptionSpec("as", value: "NAME", help: "your name in the space"),
                OptionSpec(
                    "sealed",
                    help: "keep the space's name from the server: its public card shows no name or "
                        + "picture, and links carry the name for the people they invite"),
                CommonOptions.json,
            ],
            positionals: [PositionalSpec("NAME", help: "the space's name, e.g. Family")])
    ) { arguments in
        guard let given = arguments.value("server") else {
            throw CLIError.usage(
                "missing --server URL (the space server, e.g. http://127.0.0.1:8711)", help: nil)
        }
        let server = try checkedServerURL(given)
        let name = try checkedName(arguments.positional(0) ?? "", field: "NAME") ?? ""
        let ownerName = try checkedName(arguments.value("as"), field: "--as") ?? ""
        let state = localState()
        let saved = try withSpaceErrors {
            let (identity, _) = try state.identity(create: true)
            let saved = try SpaceSession.createSpace(
                name: name, server: server, identity: identity, ownerName: ownerName,
                sealed: arguments.flag("sealed"))
            // Re-read under the lock now: a parallel command may have saved a space meanwhile.
            try state.updateSpaces { $0.save(saved) }
            return saved
        }
        vaultChanged()
        nudgeTowardSigningIn(json: arguments.flag("json"))
        offerWayBackIn(json: arguments.flag("json"))
        if arguments.flag("json") {
            Terminal.json([
                "space": saved.space.base64URL, "name": saved.name, "server": saved.server,
                "member": saved.member.base64URL,
            ])
            return
        }
        Terminal.out("Created space \"\(saved.shownName)\" on \(saved.server). You are its owner.")
        Terminal.out(
            "Invite people with: eleven invite --short (a code to read out) or eleven invite --name NAME (a link)"
        )
    },
    .init(
        CommandSpec(
            ["eleven", "space", "join"],
            summary: "Open a space you were added to by public key.",
            options: [
                OptionSpec("server", value: "URL", help: "the space server", environment: "ELEVEN_SERVER"),
                OptionSpec("space", value: "ID", help: "the space id"),
                OptionSpec("member", value: "ID", help: "your member id in that space"),
                CommonOptions.json,
            ],
            discussion: "`eleven members add` prints this command for the person being added.")
    ) { arguments in
        guard let server = arguments.value("server"), let spaceText = arguments.value("space"),
            let memberText = arguments.value("member")
        else {
            throw CLIError.usage("--server, --space and --member are all needed", help: nil)
        }
        _ = try checkedServerURL(server)
        guard let space = try? SpaceID(base64URL: spaceText),
            let member = try? MemberID(base64URL: memberText)
        else {
            throw CLIError.usage(
                "--space and --member take the ids that `eleven members add` printed", help: nil)
        }
        let state = localState()
        let saved = try withSpaceErrors {
            let (identity, _) = try state.identity(create: true)
            let saved = try SpaceSession.join(
                server: server, space: space, member: member, identity: identity)
            // Re-read under the lock now: a parallel command may have saved a space meanwhile.
            try state.updateSpaces { $0.save(saved) }
            return saved
        }
        vaultChanged()
        offerWayBackIn(json: arguments.flag("json"))
        if arguments.flag("json") {
            Terminal.json(["space": saved.space.base64URL, "name": saved.name, "server": saved.server])
            return
        }
        Terminal.out("You are in \"\(saved.shownName)\" on \(saved.server).")
    },
    .init(
        CommandSpec(
            ["eleven", "spaces"], summary: "List the spaces saved on this device.",
            options: [CommonOptions.json])
    ) { arguments in
        let saved = try withSpaceErrors { try localState().spaces() }
        if arguments.flag("json") {
            Terminal.json([
                "current": saved.current?.base64URL ?? NSNull(),
                "spaces": saved.spaces.map {
                    ["space": $0.space.base64URL, "name": $0.name, "server": $0.server] as [String: Any]
                },
            ])
            return
        }
        if saved.spaces.isEmpty {
            Terminal.out("No spaces yet. Create one with `eleven space create NAME --server URL`.")
            return
        }
        for space in saved.spaces {
            let marker = space.space == saved.current ? "*" : " "
            Terminal.out("\(marker) \(space.shownName)  \(space.server)  (\(space.space))")
        }
    },
]
