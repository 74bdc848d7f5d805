import CLISupport
import ClientCore
import Foundation

// `eleven recovery add|list|remove`, `eleven recover`: ways back in when every device is lost.
// A recovery file (or a security key) is one more key to your saved spaces; the home server never
// sees its secret.

private let fileOption = OptionSpec(
    "file", value: "PATH", help: "a recovery file (made by `eleven recovery add --file PATH`)")
private let securityKeyOption = OptionSpec(
    "security-key", help: "a FIDO2 security key (with the hmac-secret extension) plugged in now")
private let verboseOption = OptionSpec("verbose", help: "say what happens with the keys")

let recoveryCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "recovery", "add"],
            summary:
                "Add another way back in: a recovery file (or a security key) that restores your spaces.",
            options: [
                fileOption, securityKeyOption,
                OptionSpec("label", value: "NAME", help: "its name in `eleven recovery list`"),
                verboseOption, CommonOptions.json,
            ],
            discussion: """
                With --file PATH, writes a new recovery file (readable only by you). Keep it in your \
                password manager or on a removable drive: if you lose every device, \
                `eleven recover --file PATH` on a new one brings your spaces back. Anyone who has the \
                file can do that too; remove a lost one with `eleven recovery remove`.
                """)
    ) { arguments in
        let sync = homeSync()
        let json = arguments.flag("json")
        guard try homeErrors({ try sync.home() }) != nil else {
            throw CLIError(
                code: "not_signed_in",
                message: "Sign in first with `eleven signin --server URL`, then add a way back in.",
                status: .localState)
        }
        let path = try recoveryChoice(arguments)
        guard let path else { throw securityKeyUnavailable() }
        let label = arguments.value("label") ?? "recovery file \((path as NSString).lastPathComponent)"
        let id: AnchorID = try recoveryErrors {
            let home = try sync.home()
            let file = try RecoveryFile.make(home: home?.server ?? "", accountKey: try sync.accountKey())
            try file.write(to: path)
            do {
                return try sync.addRecovery(try RecoveryAnchor.identity(file, salt: file.salt), label: label)
            } catch {
                unlink(path)
                throw error
            }
        }
        if json {
            Terminal.json(["event": "recovery_added", "id": id.base64URL, "kind": "file", "path": path])
        } else {
            Terminal.out("Added a way back in: \(path).")
            Terminal.out(
                "Keep it in your password manager or on a removable drive. Anyone with it can restore your spaces."
            )
            if arguments.flag("verbose") {
                Terminal.out("(A new key anchor \(id) holds its own wrap of your vault key.)")
            }
        }
    },
    .init(
        CommandSpec(
            ["eleven", "recovery", "list"], summary: "List your ways back in (recovery files and keys).",
            options: [CommonOptions.json])
    ) { arguments in
        let credentials = try homeErrors { try homeSync().recoveryCredentials() }
        if arguments.flag("json") {
            Terminal.json([
                "credentials": credentials.map {
                    ["id": $0.id.base64URL, "label": $0.label, "createdAt": $0.createdAt] as [String: Any]
                }
            ])
            return
        }
        if credentials.isEmpty {
            Terminal.out("No ways back in yet. Add one with `eleven recovery add --file PATH`.")
        }
        for credential in credentials {
            let added = Date(timeIntervalSince1970: TimeInterval(credential.createdAt)).formatted(
                date: .abbreviated, time: .shortened)
            let name = credential.label.isEmpty ? "a way back in" : credential.label
            Terminal.out("  \(name)  added \(added)  (\(credential.id))")
        }
    },
    .init(
        CommandSpec(
            ["eleven", "recovery", "remove"],
            summary: "Remove a lost recovery file or key; it can no longer restore your spaces.",
            options: [CommonOptions.json],
            positionals: [
                PositionalSpec("ID", help: "the credential, by id or name (see `eleven recovery list`)")
            ],
            discussion:
                "Your spaces are locked again with a new key that the removed credential does not have.")
    ) { arguments in
        let sync = homeSync()
        let wanted = arguments.positional(0) ?? ""
        let credentials = try homeErrors { try sync.recoveryCredentials() }
        let matches = credentials.filter {
            $0.id.base64URL == wanted || $0.label.caseInsensitiveCompare(wanted) == .orderedSame
        }
        guard matches.count == 1, let target = matches.first else {
            throw CLIError(
                code: matches.isEmpty ? "unknown_credential" : "ambiguous_credential",
                message: matches.isEmpty
                    ? "You have no way back in called \"\(wanted)\". See `eleven recovery list`."
                    : "Several are called \"\(wanted)\"; name it by id (see `eleven recovery list`).",
                status: .usage)
        }
        _ = try homeErrors { try sync.removeRecovery(target.id) }
        if arguments.flag("json") {
            Terminal.json(["event": "recovery_removed", "id": target.id.base64URL])
        } else {
            Terminal.out("Removed it. Your spaces are locked with a new key it does not have.")
        }
    },
    .init(
        CommandSpec(
            ["eleven", "recover"],
            summary: "Restore your spaces on this device with a recovery file or security key.",
            options: [
                fileOption, securityKeyOption,
                OptionSpec("label", value: "NAME", help: "this device's name in `eleven devices`"),
                verboseOption, CommonOptions.json,
            ],
            discussion: """
                For when every device of yours is lost. This device is signed in to your home account \
                and gets all your spaces back, ready to read. Your recovery file keeps working.
                """)
    ) { arguments in
        let sync = homeSync()
        let json = arguments.flag("json")
        guard let path = try recoveryChoice(arguments) else { throw securityKeyUnavailable() }
        let report = try recoveryErrors {
            let file = try RecoveryFile(path: path)
            return try sync.recover(
                home: file.home, anchor: file.anchor,
                identity: try RecoveryAnchor.identity(file, salt: file.salt),
                label: deviceLabel(arguments))
        }
        let names = try withSpaceErrors { try localState().spaces() }.spaces.map(\.name)
        if json {
            Terminal.json(["event": "recovered", "spaces": names])
        } else {
            Terminal.out("Your spaces are back: \(names.joined(separator: ", ")).")
            if arguments.flag("verbose") {
                Terminal.out("(Opened vault key generation \(report.generation) with the recovery anchor.)")
            }
        }
    },
]

/// The recovery file path, or nil for a security key; exactly one of the two.
private func recoveryChoice(_ arguments: ParsedArguments) throws -> String? {
    let path = arguments.value("file")
    let key = arguments.flag("security-key")
    guard (path != nil) != key else {
        throw CLIError.usage("choose one: --file PATH or --security-key", help: nil)
    }
    return path
}

private func securityKeyUnavailable() -> CLIError {
    CLIError(
        code: "security_key_unavailable", message: "Security keys are not supported by this eleven yet.",
        status: .unavailable)
}

/// Maps recovery errors (and home errors) to CLIErrors.
private func recoveryErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try homeErrors(body)
    } catch let error as RecoveryError {
        let status: ExitStatus =
            switch error.code {
            case "file_exists", "no_recovery_file": .usage
            case "invalid_recovery_file", "unsupported_recovery_file": .usage
            default: .failure
            }
        throw CLIError(code: error.code, message: error.message, status: status)
    }
}
