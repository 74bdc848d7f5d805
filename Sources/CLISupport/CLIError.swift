import Foundation
import Mailbox

/// Exit statuses every Eleven program uses. Stable: scripts depend on them.
public enum ExitStatus: Int32, Sendable {
    case success = 0
    /// Something failed that none of the cases below describes.
    case failure = 1
    /// The command line was wrong (unknown option, missing argument, bad value).
    case usage = 2
    /// The code or invite was not accepted (did not match, expired, used up, unknown).
    case codeRejected = 3
    /// A server or relay could not be reached or answered with an error.
    case unavailable = 4
    /// Local state is missing or unreadable (not set up, corrupt file, wrong permissions).
    case localState = 5
    /// The other person refused, or the operation was cancelled.
    case refused = 6
    /// A time limit ran out.
    case timedOut = 7
}

/// An error a program reports to the person running it: a stable machine-readable `code`, a
/// message that says what to do, and the exit status.
public struct CLIError: Error, Sendable, CustomStringConvertible {
    /// The programs' own codes (every program's, so one spelling each); the raw values are what
    /// `--json` prints (`docs/errors.md`).
    public enum Code: String, CaseIterable, Sendable {
        case alreadySignedIn = "already_signed_in"
        case ambiguousCredential = "ambiguous_credential"
        case ambiguousDevice = "ambiguous_device"
        case ambiguousSpace = "ambiguous_space"
        case botUnavailable = "bot_unavailable"
        case cancelled
        case codeMismatch = "code_mismatch"
        case codeMissing = "code_missing"
        case crowded
        case databaseUnavailable = "database_unavailable"
        case declined
        case demoFailed = "demo_failed"
        case failure
        case help
        case interrupted
        case invalidKey = "invalid_key"
        case inviteBurned = "invite_burned"
        case inviteExpired = "invite_expired"
        case keyMissing = "key_missing"
        case noPendingJoin = "no_pending_join"
        case noSpaces = "no_spaces"
        case notALink = "not_a_link"
        case notSignedIn = "not_signed_in"
        case notText = "not_text"
        case ownerCannotLeave = "owner_cannot_leave"
        case programMissing = "program_missing"
        case protocolError = "protocol_error"
        case relayTimedOut = "relay_timed_out"
        case relayUnreachable = "relay_unreachable"
        case serviceFailed = "service_failed"
        case stateLocked = "state_locked"
        case stateUnreadable = "state_unreadable"
        case storage
        case textTooLong = "text_too_long"
        case timedOut = "timed_out"
        case unknownCode = "unknown_code"
        case unknownCredential = "unknown_credential"
        case unknownDevice = "unknown_device"
        case unknownMember = "unknown_member"
        case unknownSpace = "unknown_space"
        case usage
    }

    /// What `--json` prints: one of ``Code``, or the code of the error this one reports (a typed
    /// code's raw value, or a server's code as it sent it).
    public let code: String
    /// ``code`` when it is one of the programs' own: what callers match.
    public let own: Code?
    public let message: String
    public let status: ExitStatus
    /// Set for usage errors and `--help`: the help text to show.
    public let help: String?

    public init(code: Code, message: String, status: ExitStatus = .failure, help: String? = nil) {
        self.init(code.rawValue, own: code, message: message, status: status, help: help)
    }

    /// An error that passes on another's `code` (a join's, a server's, the home account's).
    public init(reporting code: String, message: String, status: ExitStatus = .failure) {
        self.init(code, own: nil, message: message, status: status, help: nil)
    }

    /// The same error, with `help` to show.
    func showing(help: String?) -> CLIError {
        CLIError(code, own: own, message: message, status: status, help: help)
    }

    private init(_ code: String, own: Code?, message: String, status: ExitStatus, help: String?) {
        self.code = code
        self.own = own
        self.message = message
        self.status = status
        self.help = help
    }

    public var description: String { message }

    public static func usage(_ message: String, help: String?) -> CLIError {
        CLIError(code: .usage, message: message, status: .usage, help: help)
    }

    static func helpRequested(_ help: String) -> CLIError {
        CLIError(code: .help, message: "", status: .success, help: help)
    }

    /// `--version`: the program's name and ``ElevenVersion/current``, shown as help is.
    static func versionRequested(_ program: String) -> CLIError {
        helpRequested("\(program) \(ElevenVersion.current)")
    }

    var isHelp: Bool { own == .help }
}

/// Writes to standard output and standard error without C stdio globals (strict concurrency).
public enum Terminal {
    /// Prints `text` and a newline. Whatever text from others it holds cannot act on the
    /// terminal: every control character but the newline is shown escaped (``SafeText``), so a
    /// caller need only keep others' newlines from starting lines of their own.
    /// Returns whether all of it was written (false: the output is closed, e.g. a pipe whose
    /// reader is gone, with SIGPIPE ignored).
    @discardableResult
    public static func out(_ text: String) -> Bool {
        write(1, SafeText.lines(text) + "\n")
    }

    /// ``out(_:)`` on standard error.
    public static func err(_ text: String) {
        write(2, SafeText.lines(text) + "\n")
    }

    @discardableResult
    private static func write(_ fd: Int32, _ text: String) -> Bool {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes {
                Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset)
            }
            if n <= 0 {
                if n < 0 && errno == EINTR { continue }
                return false
            }
            offset += n
        }
        bytes.removeAll()
        return true
    }

    /// Whether standard input and output are a terminal (prompts, colours, progress).
    public static var isInteractive: Bool { isatty(0) == 1 && isatty(1) == 1 }

    /// Prints a JSON object on one line (keys sorted, so output is stable).
    public static func json(_ object: [String: Any]) {
        if let line = flatJSONLine(object) {
            write(1, line)
            return
        }
        guard JSONSerialization.isValidJSONObject(object),
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else {
            out("{\"error\":\"internal\",\"message\":\"could not encode output\"}")
            return
        }
        // Raw: JSON escapes what needs it, and a reader wants the text as it was sent.
        write(1, String(decoding: data, as: UTF8.self) + "\n")
    }

    /// ``json(_:)``'s line for an object of strings, integers and booleans (every line of
    /// `eleven-bot run`'s log: several per join), written by ``JSONWriter`` rather than
    /// `JSONSerialization`, which was about 3% of the bot's CPU. The same JSON; nil for anything
    /// else.
    static func flatJSONLine(_ object: [String: Any]) -> String? {
        var members: [JSONObject.Member] = []
        members.reserveCapacity(object.count)
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            let json: JSONValue
            switch value {
            case let text as String: json = .string(text)
            // Exact types: a boxed number must not pass for a boolean, nor one for the other.
            case let flag as Bool where type(of: value) == Bool.self: json = .bool(flag)
            case let number as Int where type(of: value) == Int.self: json = .number(JSONNumber(number))
            case let number as Int64 where type(of: value) == Int64.self:
                json = .number(JSONNumber(Int(number)))
            default: return nil
            }
            members.append(JSONObject.Member(key: key, value: json))
        }
        return JSONWriter.string(.object(JSONObject(members))) + "\n"
    }
}

/// Runs a program's entry point: maps `CLIError` to its message, `--json` error object and exit
/// status. Any other error is a failure with its description.
public func runProgram(name: String, json: Bool, _ body: () throws -> Void) -> Never {
    do {
        try body()
        exit(ExitStatus.success.rawValue)
    } catch let error as CLIError {
        if error.isHelp {
            Terminal.out(error.help ?? "")
            exit(ExitStatus.success.rawValue)
        }
        report(error, name: name, json: json)
        exit(error.status.rawValue)
    } catch {
        report(
            CLIError(code: .failure, message: String(describing: error)), name: name, json: json)
        exit(ExitStatus.failure.rawValue)
    }
}

private func report(_ error: CLIError, name: String, json: Bool) {
    // The last guard against echoing a password someone wrote into an address.
    let message = withoutURLPasswords(error.message)
    if json {
        Terminal.json(["error": error.code, "message": message])
    } else {
        Terminal.err("\(name): \(message)")
        if error.status == .usage, let help = error.help { Terminal.err(usageHint(help)) }
    }
}

/// The one line a usage error adds under its message: the command's usage line and where the
/// rest is. The whole help would push the message itself off the screen.
public func usageHint(_ help: String) -> String {
    let first = help.prefix { $0 != "\n" }
    // The command's words come first after "usage:"; `[options]`, `<command>` and the upper-case
    // argument names do not start with a lower-case letter.
    let command = first.split(separator: " ").dropFirst().prefix { $0.first?.isLowercase == true }
    return "\(first)   (`\(command.joined(separator: " ")) --help` says more)"
}

/// `text` with the user information of every URL in it (`https://user:secret@host`) shown as `…@`.
public func withoutURLPasswords(_ text: String) -> String {
    guard text.contains("@"), text.contains("://") else { return text }
    var out = ""
    var rest = Substring(text)
    while let scheme = rest.range(of: "://") {
        out += rest[..<scheme.upperBound]
        rest = rest[scheme.upperBound...]
        let authority = rest.prefix { !"/?# '\"".contains($0) && !$0.isWhitespace }
        if let at = authority.lastIndex(of: "@") {
            out += "…"
            rest = rest[at...]
        }
    }
    return out + rest
}
