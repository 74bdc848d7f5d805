import CLISupport
import ClientCore
import Foundation
import PAKE
import SpaceModel

// `eleven recovery add|list|remove`, `eleven recover`: ways back in when every device is lost.
// A recovery file (or a security key) is one more key to your saved spaces; the home server never
// sees its secret.

private let fileOption = OptionSpec(
    "file", value: "PATH",
    help:
        "a recovery file (made by `eleven recovery add --file PATH`); with --security-key, the card of your hardware token"
)
private let securityKeyOption = OptionSpec(
    "security-key", help: "a FIDO2 hardware token (with the hmac-secret extension) plugged in now")
private let verboseOption = OptionSpec("verbose", help: "say what happens behind the scenes")

let recoveryCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "recovery", "add"],
            summary:
                "Add another way back in: a recovery file (or a hardware token) that restores your spaces.",
            options: [
                fileOption, securityKeyOption,
                OptionSpec("label", value: "NAME", help: "its name in `eleven recovery list`"),
                verboseOption, CommonOptions.json,
            ],
            discussion: """
                With --file PATH, writes a new recovery file (readable only by you). Whoever holds \
                it can open your spaces, with no password, so keep it as you would your passport: in your \
                password manager or on a removable drive, not on the device itself. If you lose every \
                device, `eleven recover --file PATH` on a new one brings your spaces back. A lost or \
                copied file is made useless with `eleven recovery remove`. With --security-key, a \
                hardware token that has a PIN is the way back in instead: a found token opens nothing \
                without its PIN (tokens without a PIN are refused).
                """)
    ) { arguments in
        let sync = homeSync()
        let json = arguments.flag("json")
        guard try homeErrors({ try sync.home() }) != nil else {
            throw CLIError(
                code: .notSignedIn,
                message: "Sign in first with `eleven signin --server URL`, then add a way back in.",
                status: .localState)
        }
        let (path, securityKey) = try recoveryChoice(arguments)
        if securityKey { return try addSecurityKey(arguments, card: path) }
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
                "Anyone holding this file can open your spaces, with no password. Keep it as you would "
                    + "your passport: in your password manager or on a removable drive, not on this device."
            )
            Terminal.out("If it is lost or copied, `eleven recovery remove \"\(label)\"` makes it useless.")
            if arguments.flag("verbose") {
                Terminal.out("(It is way back in \(id); the home server keeps only what it cannot read.)")
            }
        }
    },
    .init(
        CommandSpec(
            ["eleven", "recovery", "list"],
            summary: "List your ways back in (recovery files and hardware tokens).",
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
            summary: "Remove a lost recovery file or hardware token; it can no longer restore your spaces.",
            options: [CommonOptions.json],
            positionals: [
                PositionalSpec("ID", help: "the credential, by id or name (see `eleven recovery list`)")
            ],
            discussion:
                "Your spaces are locked again so that the removed one can no longer open them.")
    ) { arguments in
        let sync = homeSync()
        let wanted = arguments.positional(0) ?? ""
        let credentials = try homeErrors { try sync.recoveryCredentials() }
        let matches = credentials.filter {
            $0.id.base64URL == wanted || $0.label.caseInsensitiveCompare(wanted) == .orderedSame
        }
        guard matches.count == 1, let target = matches.first else {
            throw CLIError(
                code: matches.isEmpty ? .unknownCredential : .ambiguousCredential,
                message: matches.isEmpty
                    ? "You have no way back in called \"\(wanted)\". See `eleven recovery list`."
                    : "Several are called \"\(wanted)\"; name it by id (see `eleven recovery list`).",
                status: .usage)
        }
        _ = try homeErrors { try sync.removeRecovery(target.id) }
        if arguments.flag("json") {
            Terminal.json(["event": "recovery_removed", "id": target.id.base64URL])
        } else {
            Terminal.out("Removed it. Your spaces are locked again; it can no longer open them.")
        }
    },
    .init(
        CommandSpec(
            ["eleven", "recover"],
            summary: "Restore your spaces on this device with a recovery file or hardware token.",
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
        let (path, securityKey) = try recoveryChoice(arguments)
        let report = try recoveryErrors {
            if securityKey {
                let card = try SecurityKeyCard(bytes: try readCard(path))
                let device = try FIDO2Device.first()
                try SecurityKey.checkUsable(device)
                let key = SecurityKey(device: device, credentialID: card.credentialID, pin: readTokenPIN())
                if !json { Terminal.out("Touch your hardware token…") }
                return try sync.recover(
                    home: card.home, anchor: card.anchor,
                    identity: try RecoveryAnchor.identity(key, salt: card.saltBytes),
                    label: deviceLabel(arguments))
            }
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
                Terminal.out(
                    "(Opened your saved spaces, generation \(report.generation), with this way back in.)")
            }
        }
    },
]

/// The file (a recovery file, or a security key's card) and whether a security key is used.
private func recoveryChoice(_ arguments: ParsedArguments) throws -> (String, Bool) {
    guard let path = arguments.value("file") else {
        throw CLIError.usage(
            "missing --file PATH (a recovery file, or with --security-key the card of your hardware token)",
            help: nil)
    }
    return (path, arguments.flag("security-key"))
}

private func readCard(_ path: String) throws -> [UInt8] {
    let parent = (path as NSString).deletingLastPathComponent
    guard
        let bytes = try StateDirectory(path: parent.isEmpty ? "." : parent).read(
            (path as NSString).lastPathComponent)
    else { throw RecoveryError(.noRecoveryFile, "There is no file \(path).") }
    return bytes
}

/// `eleven recovery add --security-key --file CARD`: a credential made on the key (one touch),
/// its output for a fresh salt (a second touch) makes the anchor; the card keeps what a new
/// device needs besides the key.
private func addSecurityKey(_ arguments: ParsedArguments, card path: String) throws {
    let sync = homeSync()
    let json = arguments.flag("json")
    let label = arguments.value("label") ?? "hardware token"
    let id: AnchorID = try recoveryErrors {
        guard access(path, F_OK) != 0 else {
            throw RecoveryError(.fileExists, "\(path) already exists; choose a new name.")
        }
        let device = try FIDO2Device.first()
        // Refused before the PIN is asked for: a token without a PIN (a finder could use it).
        try SecurityKey.checkUsable(device)
        let pin = readTokenPIN()
        if !json { Terminal.out("Touch your hardware token (twice)…") }
        let key = try SecurityKey.makeCredential(device: device, pin: pin)
        var random = SystemRandom()
        let salt = random.bytes(count: RecoveryAnchor.byteCount)
        let identity = try RecoveryAnchor.identity(key, salt: salt)
        let anchor = identity.anchor(.recovery).id(accountKey: try sync.accountKey())
        let card = SecurityKeyCard(
            home: try sync.home()?.server ?? "", anchor: anchor, salt: salt, credentialID: key.credentialID)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        try RecoveryFile.writeNew(SecretBytes(Array(try encoder.encode(card))), to: path)
        do {
            return try sync.addRecovery(identity, label: label)
        } catch {
            unlink(path)
            throw error
        }
    }
    if json {
        Terminal.json(["event": "recovery_added", "id": id.base64URL, "kind": "security-key", "path": path])
    } else {
        Terminal.out("Added a way back in: your hardware token (its card is \(path)).")
    }
}

/// The hardware token's PIN: asked for without echo on a terminal, else one line of standard
/// input (for scripts). Empty when none is typed; the token is then refused with a clear error.
private func readTokenPIN() -> String {
    guard isatty(0) == 1 else { return readLine(strippingNewline: true) ?? "" }
    writePrompt("PIN of your hardware token: ")
    var original = termios()
    guard tcgetattr(0, &original) == 0 else { return readLine(strippingNewline: true) ?? "" }
    var quiet = original
    quiet.c_lflag &= ~tcflag_t(ECHO)
    tcsetattr(0, TCSAFLUSH, &quiet)
    defer {
        tcsetattr(0, TCSAFLUSH, &original)
        writePrompt("\n")
    }
    return readLine(strippingNewline: true) ?? ""
}

/// Maps recovery errors (and home errors) to CLIErrors.
private func recoveryErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try homeErrors(body)
    } catch let error as RecoveryError {
        let status: ExitStatus =
            switch error.code {
            case .fileExists, .noRecoveryFile, .invalidSecurityKeyCard: .usage
            case .noSecurityKey, .securityKeyUnreachable: .unavailable
            case .securityKeyPinWrong, .securityKeyPinRequired: .codeRejected
            case .securityKeyNoPin, .securityKeyPinBlocked, .securityKeyPinPaused, .securityKeyNotVerified:
                .refused
            case .invalidRecoveryFile, .unsupportedRecoveryFile: .usage
            case .invalidCredential, .invalidOutput, .invalidSalt, .securityKeyDenied, .securityKeyError,
                .securityKeyTimeout, .securityKeyUnsupported, .wrongSecurityKey:
                .failure
            }
        throw CLIError(reporting: error.code.rawValue, message: error.message, status: status)
    }
}
