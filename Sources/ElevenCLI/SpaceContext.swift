import CLISupport
import ClientCore
import Foundation
import SpaceModel

// Shared plumbing of the space commands: local state, choosing the space, turning client errors
// into CLIErrors with stable codes and exit statuses.

/// Options most space commands take.
enum CommonOptions {
    static let json = OptionSpec("json", help: "print JSON for scripts")
    static let space = OptionSpec(
        "space", value: "SPACE", help: "the space, by name or id (default: the last one used)",
        environment: "ELEVEN_SPACE")
    static let thread = OptionSpec(
        "thread", value: "THREAD", help: "the thread, by name or id",
        default: SpaceSession.defaultThreadName)
}

/// Runs `body`, mapping client and local-state errors to CLIErrors.
func withSpaceErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as SpaceClientError {
        throw cliError(error)
    } catch let error as LocalStateError {
        throw cliError(error)
    }
}

func cliError(_ error: SpaceClientError) -> CLIError {
    switch error.typedCode {
    // What the command line named or gave was wrong, not the server: a usage error, as the
    // README's table has it, whichever side noticed.
    case .invalidURL, .unknownThread, .messageTooLarge, .bodyTooLarge, .invalidField:
        return CLIError(reporting: error.code, message: error.message, status: .usage)
    default: break
    }
    let status: ExitStatus =
        switch error.kind {
        case .unreachable, .rejected, .invalidResponse: .unavailable
        case .refused: .refused
        case .verification: .failure
        }
    return CLIError(reporting: error.code, message: error.message, status: status)
}

func cliError(_ error: LocalStateError) -> CLIError {
    CLIError(reporting: error.code.rawValue, message: error.message, status: .localState)
}

/// A name from the command line (`field`: `--name`, `NAME`), checked before any traffic as the
/// space server and the link parser check names, so the error names what to change.
func checkedName(_ text: String?, field: String) throws -> String? {
    guard let text else { return nil }
    let limit = MemberRecord.maximumNameByteCount
    guard !text.trimmingCharacters(in: .whitespaces).isEmpty, text.utf8.count <= limit,
        !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
    else {
        throw CLIError.usage(
            "\(field) takes 1 to \(limit) bytes of text without control characters", help: nil)
    }
    return text
}

/// The local state of this run (`$ELEVEN_HOME` or `~/.eleven`).
func localState() -> LocalState { LocalState.standard() }

/// The saved space named by `--space` (or the current one), with a session on it.
func openSpace(_ arguments: ParsedArguments) throws -> SpaceSession {
    try withSpaceErrors {
        let state = localState()
        let saved = try state.spaces()
        let space = try chooseSpace(arguments.value("space"), in: saved)
        return try spaceSession(space, state: state)
    }
}

/// A session on `space` as this device acts in it, remembering the membership chains it verifies
/// in `state` (each command then checks only what is new, and refuses a rewritten history).
func spaceSession(_ space: SavedSpace, state: LocalState) throws -> SpaceSession {
    var session = try SpaceSession(saved: space, identity: try state.identity(for: space))
    session.chains = VerifiedChainStore(directory: state.directory)
    return session
}

func chooseSpace(_ wanted: String?, in saved: SavedSpaces) throws -> SavedSpace {
    guard !saved.spaces.isEmpty else {
        throw CLIError(
            code: .noSpaces,
            message:
                "This device has no spaces yet. Create one with `eleven space create NAME --server URL`.",
            status: .localState)
    }
    guard let wanted else {
        if let current = saved.current, let space = saved.spaces.first(where: { $0.space == current }) {
            return space
        }
        return saved.spaces[saved.spaces.count - 1]
    }
    if let space = saved.spaces.first(where: { $0.space.base64URL == wanted }) { return space }
    let named = saved.spaces.filter { $0.name.caseInsensitiveCompare(wanted) == .orderedSame }
    if named.count == 1 { return named[0] }
    if named.count > 1 {
        throw CLIError(
            code: .ambiguousSpace,
            message: "Several saved spaces are called \"\(wanted)\"; name it by id (see `eleven spaces`).",
            status: .usage)
    }
    throw CLIError(
        code: .unknownSpace,
        message: "This device has no space called \"\(wanted)\". Run `eleven spaces` to see yours.",
        status: .usage)
}

/// A member's name for people.
func displayName(_ record: MemberRecord) -> String {
    record.name.isEmpty ? "member \(record.id)" : SafeText.line(record.name)
}

/// JSON-friendly rights names.
func rightsNames(_ record: MemberRecord, roster: Roster) -> [String] {
    record.id == roster.owner ? ["owner"] + record.rights.names : record.rights.names
}

extension SavedSpace {
    /// The space's name as the terminal shows it: chosen by its owner, so one line, made safe.
    var shownName: String { SafeText.line(name) }
}
