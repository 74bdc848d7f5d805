/// An `error` the relay sends to a client: a stable machine-readable ``code`` and the exact
/// wire text in ``message``. Where the deployed mailbox server has a string for the case, the
/// message is that string byte for byte (stock clients match on it).
///
/// Only the text travels. A client reads it back with ``init(received:)``, which finds the code
/// again from the text (every code's text is told apart by its fixed part), so callers match
/// errors by ``code``, never by text.
public struct RelayError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Stable names, used as metrics labels and in logs.
    public enum Code: String, Sendable, CaseIterable {
        // Strings of the deployed server (magic-wormhole-mailbox-server 0.8.0).
        case missingType = "missing_type"
        case pingRequiresPing = "ping_requires_ping"
        case alreadyBound = "already_bound"
        case bindRequiresAppID = "bind_requires_appid"
        case bindRequiresSide = "bind_requires_side"
        case mustBindFirst = "must_bind_first"
        case alreadyAllocated = "already_allocated"
        case claimRequiresNameplate = "claim_requires_nameplate"
        case onlyOneClaim = "only_one_claim"
        case crowded
        case reclaimed
        case onlyOneRelease = "only_one_release"
        case releaseNameplateMismatch = "release_nameplate_mismatch"
        case releaseWithoutClaim = "release_without_claim"
        case onlyOneOpen = "only_one_open"
        case openRequiresMailbox = "open_requires_mailbox"
        case mustOpenBeforeAdding = "must_open_before_adding"
        case missingPhase = "missing_phase"
        case missingBody = "missing_body"
        case onlyOneClose = "only_one_close"
        case closeMailboxMismatch = "close_mailbox_mismatch"
        case closeWithoutOpen = "close_without_open"
        case unknownType = "unknown_type"
        // Ours: bad input the deployed server answers by dropping the connection.
        case notJSON = "not_json"
        case notObject = "not_object"
        case wrongFieldType = "wrong_field_type"
        case fieldTooLong = "field_too_long"
        case invalidNameplate = "invalid_nameplate"
        case mailboxGone = "mailbox_gone"
        case noFreeNameplate = "no_free_nameplate"
        // Ours: abuse limits.
        case messageTooLarge = "message_too_large"
        case mailboxMessageLimit = "mailbox_message_limit"
        case mailboxByteLimit = "mailbox_byte_limit"
        case storageFull = "storage_full"
        case nameplateLimit = "nameplate_limit"
        case allocationRateLimited = "allocation_rate_limited"
        case claimRateLimited = "claim_rate_limited"
        case connectionRateLimited = "connection_rate_limited"
        case tooManyConnections = "too_many_connections"
        case tooManyErrors = "too_many_errors"
        /// The relay cannot commit (its database is unreachable); it recovers by itself.
        case storageUnavailable = "storage_unavailable"
        // Ours: optional admission control (`permission-required`).
        case permissionRequired = "permission_required"
        case permissionMethodUnsupported = "permission_method_unsupported"
        case permissionInvalid = "permission_invalid"
        case permissionReused = "permission_reused"
        case permissionAlreadyGranted = "permission_already_granted"
        /// Only on a client: a text this relay never sends (another server's). Not a reason the
        /// relay counts.
        case unrecognized
    }

    /// The codes the relay itself sends and counts (every one but ``Code/unrecognized``).
    public static let relayCodes = Code.allCases.filter { $0 != .unrecognized }

    public let code: Code
    /// The `error` string on the wire.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// The error whose wire text is `text`, its code found again: first the fixed texts, then
    /// the texts around a parameter by their fixed parts; ``Code/unrecognized`` for any other.
    public init(received text: String) {
        if let code = Self.fixedCodes[text] {
            self.init(code, text)
            return
        }
        let form = Self.parameterForms.first { form in
            text.hasPrefix(form.prefix) && text.hasSuffix(form.suffix)
                && text.utf8.count >= form.prefix.utf8.count + form.suffix.utf8.count
                && form.infix.map { text.contains($0) } ?? true
        }
        self.init(form?.code ?? .unrecognized, text)
    }

    /// Every text without a parameter, by its text.
    private static let fixedCodes: [String: Code] = {
        let fixed: [RelayError] = [
            .missingType, .pingRequiresPing, .alreadyBound, .bindRequiresAppID, .bindRequiresSide,
            .mustBindFirst, .alreadyAllocated, .claimRequiresNameplate, .onlyOneClaim, .crowded, .reclaimed,
            .onlyOneRelease, .releaseNameplateMismatch, .releaseWithoutClaim, .onlyOneOpen,
            .openRequiresMailbox, .mustOpenBeforeAdding, .missingPhase, .missingBody, .onlyOneClose,
            .closeMailboxMismatch, .closeWithoutOpen, .unknownType, .notObject, .invalidNameplate,
            .mailboxGone, .noFreeNameplate, .storageFull, .allocationRateLimited, .claimRateLimited,
            .connectionRateLimited, .tooManyConnections, .tooManyErrors, .storageUnavailable,
            .permissionRequired, .permissionMethodUnsupported, .permissionRequiresMethod, .permissionReused,
            .permissionAlreadyGranted,
        ]
        return Dictionary(fixed.map { ($0.message, $0.code) }, uniquingKeysWith: { first, _ in first })
    }()

    /// The fixed parts of each text that carries a parameter (the constructors below), most
    /// specific first: `mailbox full (limit N bytes of message bodies)` before `… messages)`.
    private static let parameterForms: [(code: Code, prefix: String, infix: String?, suffix: String)] = [
        (.notJSON, "message is not valid JSON (", nil, ")"),
        (.wrongFieldType, "'", "' must be ", ""),
        (.fieldTooLong, "'", "' is too long (limit ", " bytes)"),
        (.messageTooLarge, "message too large (limit ", nil, " bytes)"),
        (.mailboxByteLimit, "mailbox full (limit ", nil, " bytes of message bodies)"),
        (.mailboxMessageLimit, "mailbox full (limit ", nil, " messages)"),
        (.nameplateLimit, "too many open nameplates from your address (limit ", nil, ")"),
        (.permissionInvalid, "invalid hashcash stamp: ", nil, ""),
    ]
}

extension RelayError {
    public static let missingType = RelayError(.missingType, "missing 'type'")
    public static let pingRequiresPing = RelayError(.pingRequiresPing, "ping requires 'ping'")
    public static let alreadyBound = RelayError(.alreadyBound, "already bound")
    public static let bindRequiresAppID = RelayError(.bindRequiresAppID, "bind requires 'appid'")
    public static let bindRequiresSide = RelayError(.bindRequiresSide, "bind requires 'side'")
    public static let mustBindFirst = RelayError(.mustBindFirst, "must bind first")
    public static let alreadyAllocated = RelayError(
        .alreadyAllocated, "you already allocated one, don't be greedy")
    public static let claimRequiresNameplate = RelayError(
        .claimRequiresNameplate, "claim requires 'nameplate'")
    public static let onlyOneClaim = RelayError(.onlyOneClaim, "only one claim per connection")
    public static let crowded = RelayError(.crowded, "crowded")
    public static let reclaimed = RelayError(.reclaimed, "reclaimed")
    public static let onlyOneRelease = RelayError(.onlyOneRelease, "only one release per connection")
    public static let releaseNameplateMismatch = RelayError(
        .releaseNameplateMismatch, "release and claim must use same nameplate")
    public static let releaseWithoutClaim = RelayError(
        .releaseWithoutClaim, "release without nameplate must follow claim")
    public static let onlyOneOpen = RelayError(.onlyOneOpen, "only one open per connection")
    public static let openRequiresMailbox = RelayError(.openRequiresMailbox, "open requires 'mailbox'")
    public static let mustOpenBeforeAdding = RelayError(
        .mustOpenBeforeAdding, "must open mailbox before adding")
    public static let missingPhase = RelayError(.missingPhase, "missing 'phase'")
    public static let missingBody = RelayError(.missingBody, "missing 'body'")
    public static let onlyOneClose = RelayError(.onlyOneClose, "only one close per connection")
    public static let closeMailboxMismatch = RelayError(
        .closeMailboxMismatch, "open and close must use same mailbox")
    public static let closeWithoutOpen = RelayError(
        .closeWithoutOpen, "close without mailbox must follow open")
    public static let unknownType = RelayError(.unknownType, "unknown type")

    public static func notJSON(_ reason: JSONParseError) -> RelayError {
        RelayError(.notJSON, "message is not valid JSON (\(reason))")
    }
    public static let notObject = RelayError(.notObject, "message must be a JSON object")
    public static func wrongType(_ field: String, expected: String, got: JSONValue) -> RelayError {
        RelayError(.wrongFieldType, "'\(field)' must be \(expected), not \(got.kindName)")
    }
    public static func fieldTooLong(_ field: String, limit: Int) -> RelayError {
        RelayError(.fieldTooLong, "'\(field)' is too long (limit \(limit) bytes)")
    }
    public static let invalidNameplate = RelayError(
        .invalidNameplate, "nameplate must be 1 to \(Nameplate.maximumLength) digits (0-9)")
    public static let mailboxGone = RelayError(.mailboxGone, "mailbox was closed by every side")
    public static let noFreeNameplate = RelayError(.noFreeNameplate, "no free nameplate, try again later")
    public static func messageTooLarge(limit: Int) -> RelayError {
        RelayError(.messageTooLarge, "message too large (limit \(limit) bytes)")
    }
    public static func mailboxMessageLimit(_ limit: Int) -> RelayError {
        RelayError(.mailboxMessageLimit, "mailbox full (limit \(limit) messages)")
    }
    public static func mailboxByteLimit(_ limit: Int) -> RelayError {
        RelayError(.mailboxByteLimit, "mailbox full (limit \(limit) bytes of message bodies)")
    }
    public static let storageFull = RelayError(
        .storageFull, "the relay is holding too much data, try again later")
    public static func nameplateLimit(_ limit: Int) -> RelayError {
        RelayError(.nameplateLimit, "too many open nameplates from your address (limit \(limit))")
    }
    public static let allocationRateLimited = RelayError(
        .allocationRateLimited, "too many allocations from your address, try again later")
    public static let claimRateLimited = RelayError(
        .claimRateLimited, "too many claims from your address, try again later")
    public static let connectionRateLimited = RelayError(
        .connectionRateLimited, "too many connections from your address, try again later")
    public static let tooManyConnections = RelayError(
        .tooManyConnections, "the relay is full, try again later")
    public static let tooManyErrors = RelayError(
        .tooManyErrors, "too many bad messages, closing the connection")
    public static let storageUnavailable = RelayError(
        .storageUnavailable, "the relay cannot reach its database right now, try again shortly")
    public static let permissionRequired = RelayError(
        .permissionRequired, "permission required: send 'submit-permission' first (see the welcome)")
    public static let permissionMethodUnsupported = RelayError(
        .permissionMethodUnsupported, "unsupported permission method")
    public static let permissionRequiresMethod = RelayError(
        .permissionMethodUnsupported, "permission requires 'method'")
    public static func permissionInvalid(_ why: String) -> RelayError {
        RelayError(.permissionInvalid, "invalid hashcash stamp: \(why)")
    }
    public static let permissionReused = RelayError(.permissionReused, "hashcash stamp already used")
    public static let permissionAlreadyGranted = RelayError(
        .permissionAlreadyGranted, "permission already granted")
}
