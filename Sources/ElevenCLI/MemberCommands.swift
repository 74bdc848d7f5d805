import CLISupport
import ClientCore
import Foundation
import SpaceModel

/// `eleven members`, `eleven members add`, `eleven members remove`.
let memberCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "members"], summary: "List a space's members (checked on this device).",
            options: [CommonOptions.space, CommonOptions.json])
    ) { arguments in
        let session = try openSpace(arguments)
        // An expired link of this device's keeps no right to add anyone.
        _ = try? session.retireStaleInviteSigners()
        let roster = try withSpaceErrors { try session.roster() }
        let current = roster.members.values.sorted {
            ($0.id != roster.owner ? 1 : 0, $0.name) < ($1.id != roster.owner ? 1 : 0, $1.name)
        }
        let former = roster.formerMembers.values.sorted { $0.name < $1.name }
        if arguments.flag("json") {
            func entry(_ record: MemberRecord) -> [String: Any] {
                [
                    "id": record.id.base64URL, "name": record.name, "key": record.keys.text,
                    "rights": rightsNames(record, roster: roster), "you": record.id == session.saved.member,
                    "newIdentity": roster.newIdentities[record.id] != nil,
                ]
            }
            Terminal.json([
                "space": session.saved.space.base64URL, "members": current.map(entry),
                "formerMembers": former.map(entry),
            ])
            return
        }
        Terminal.out("Members of \(SafeText.line(session.saved.name)):")
        let names = MemberNames(roster)
        for record in current {
            let label = names.label(record.id)
            var notes: [String] = []
            if record.id == roster.owner && !label.hasSuffix(" (owner)") { notes.append("owner") }
            if record.id == session.saved.member { notes.append("you") }
            let suffix = notes.isEmpty ? "" : " (\(notes.joined(separator: ", ")))"
            Terminal.out("  \(label)\(suffix)  \(record.id)")
        }
        for note in SpaceSession.newIdentityNotes(roster) { Terminal.out(SafeText.line(note) + ".") }
        if !former.isEmpty {
            Terminal.out("Former members:")
            for record in former { Terminal.out("  \(names.label(record.id))  \(record.id)") }
        }
    },
    .init(
        CommandSpec(
            ["eleven", "members", "add"], summary: "Add a person or bot to a space by their public key.",
            options: [
                OptionSpec("key", value: "KEY", help: "their public key, as `eleven whoami` prints it"),
                OptionSpec("name", value: "NAME", help: "their name in the space"),
                OptionSpec("invite", help: "let them add members too"),
                CommonOptions.space, CommonOptions.json,
            ],
            discussion: "They can read the space's history at once; print the command they run next.")
    ) { arguments in
        guard let keyText = arguments.value("key") else {
            throw CLIError.usage("missing --key KEY (ask them to run `eleven whoami`)", help: nil)
        }
        let keys: MemberPublicKeys
        do throws(KeyModelError) {
            keys = try MemberPublicKeys(text: keyText.trimmingCharacters(in: .whitespacesAndNewlines))
        } catch {
            throw CLIError(
                code: .invalidKey,
                message:
                    "That is not a member key (\(error.message)). Copy the whole line `eleven whoami` prints.",
                status: .usage)
        }
        let name = arguments.value("name") ?? ""
        let session = try openSpace(arguments)
        let record = try withSpaceErrors {
            try session.addMember(keys: keys, name: name, rights: arguments.flag("invite") ? .invite : [])
        }
        let join =
            "eleven space join --server \(session.saved.server) --space \(session.saved.space) "
            + "--member \(record.id)"
        if arguments.flag("json") {
            Terminal.json([
                "member": record.id.base64URL, "name": record.name, "space": session.saved.space.base64URL,
                "server": session.saved.server, "join": join,
            ])
            return
        }
        Terminal.out("Added \(displayName(record)) to \(session.saved.shownName). On their device they run:")
        Terminal.out("  \(join)")
    },
    .init(
        CommandSpec(
            ["eleven", "members", "remove"], summary: "Remove a member from a space.",
            options: [CommonOptions.space, CommonOptions.json],
            positionals: [PositionalSpec("MEMBER", help: "their name or member id")],
            discussion:
                "They lose access at once. What is written afterwards goes under new keys they never get "
                + "(each thread continues under a new key at its next message); what they could read stays theirs."
        )
    ) { arguments in
        let wanted = arguments.positional(0) ?? ""
        let session = try openSpace(arguments)
        let record = try withSpaceErrors { () throws -> MemberRecord in
            let roster = try session.roster()
            guard let record = SpaceSession.findMember(wanted, in: roster) else {
                throw CLIError(
                    code: .unknownMember,
                    message:
                        "\(session.saved.shownName) has no current member \"\(wanted)\". Run `eleven members`.",
                    status: .usage)
            }
            try session.removeMember(record.id)
            return record
        }
        if arguments.flag("json") {
            Terminal.json(["removed": record.id.base64URL, "name": record.name])
            return
        }
        Terminal.out("Removed \(displayName(record)) from \(session.saved.shownName).")
    },
    .init(
        CommandSpec(
            ["eleven", "members", "rename"],
            summary: "Change your name in a space (or, as an admin, someone's).",
            options: [
                CommonOptions.space,
                OptionSpec("member", value: "MEMBER", help: "whose name (admins only; default: yours)"),
                CommonOptions.json,
            ],
            positionals: [PositionalSpec("NAME", help: "the new name")],
            discussion: "Only the space's members can read the new name; its server keeps it encrypted."
        )
    ) { arguments in
        guard let name = try checkedName(arguments.positional(0), field: "NAME"), !name.isEmpty else {
            throw CLIError.usage("the new name is missing", help: nil)
        }
        let session = try openSpace(arguments)
        let previous = try withSpaceErrors { () throws -> MemberRecord in
            var member: MemberID?
            if let wanted = arguments.value("member") {
                guard let record = SpaceSession.findMember(wanted, in: try session.roster()) else {
                    throw CLIError(
                        code: .unknownMember,
                        message:
                            "\(session.saved.shownName) has no current member \"\(wanted)\". Run `eleven members`.",
                        status: .usage)
                }
                member = record.id
            }
            return try session.rename(member, to: name)
        }
        if arguments.flag("json") {
            Terminal.json(["member": previous.id.base64URL, "name": name, "previous": previous.name])
            return
        }
        Terminal.out("\(displayName(previous)) is now \(SafeText.line(name)) in \(session.saved.shownName).")
    },
]
