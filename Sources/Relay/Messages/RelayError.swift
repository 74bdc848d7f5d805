import Mailbox

/// An `error` the relay sends to a client: a stable machine-readable ``code`` and the exact
/// wire text in ``message``. Where the deployed mailbox server has a string for the case, the
/// message is that string byte for byte (clients and tests match on it).
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
    }

    public let code: Code
    /// The `error` string on the wire.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

extension RelayError {
    static let missingType = RelayError(.missingType, "missing 'type'")
    static let pingRequiresPing = RelayError(.pingRequiresPing, "ping requires 'ping'")
    static let alreadyBound = RelayError(.alreadyBound, "already bound")
    static let bindRequiresAppID = RelayError(.bindRequiresAppID, "bind requires 'appid'")
    static let bindRequiresSide = RelayError(.bindRequiresSide, "bind requires 'side'")
    static let mustBindFirst = RelayError(.mustBindFirst, "must bind first")
    static let alreadyAllocated = RelayError(.alreadyAllocated, "you already allocated one, don't be greedy")
    static let claimRequiresNameplate = RelayError(.claimRequiresNameplate, "claim requires 'nameplate'")
    static let onlyOneClaim = RelayError(.onlyOneClaim, "only one claim per connection")
    static let crowded = RelayError(.crowded, "crowded")
    static let reclaimed = RelayError(.reclaimed, "reclaimed")
    static let onlyOneRelease = RelayError(.onlyOneRelease, "only one release per connection")
    static let releaseNameplateMismatch = RelayError(
        .releaseNameplateMismatch, "release and claim must use same nameplate")
    static let releaseWithoutClaim = RelayError(
        .releaseWithoutClaim, "release without nameplate must follow claim")
    static let onlyOneOpen = RelayError(.onlyOneOpen, "only one open per connection")
    static let openRequiresMailbox = RelayError(.openRequiresMailbox, "open requires 'mailbox'")
    static let mustOpenBeforeAdding = RelayError(.mustOpenBeforeAdding, "must open mailbox before adding")
    static let missingPhase = RelayError(.missingPhase, "missing 'phase'")
    static let missingBody = RelayError(.missingBody, "missing 'body'")
    static let onlyOneClose = RelayError(.onlyOneClose, "only one close per connection")
    static let closeMailboxMismatch = RelayError(
        .closeMailboxMismatch, "open and close must use same mailbox")
    static let closeWithoutOpen = RelayError(.closeWithoutOpen, "close without mailbox must follow open")
    static let unknownType = RelayError(.unknownType, "unknown type")

    static func notJSON(_ reason: JSONParseError) -> RelayError {
        RelayError(.notJSON, "message is not valid JSON (\(reason))")
    }
    static let notObject = RelayError(.notObject, "message must be a JSON object")
    static func wrongType(_ field: String, expected: String, got: JSONValue) -> RelayError {
        RelayError(.wrongFieldType, "'\(field)' must be \(expected), not \(got.kindName)")
    }
    static func fieldTooLong(_ field: String, limit: Int) -> RelayError {
        RelayError(.fieldTooLong, "'\(field)' is too long (limit \(limit) bytes)")
    }
    static let invalidNameplate = RelayError(
        .invalidNameplate, "nameplate must be 1 to \(Nameplate.maximumLength) digits (0-9)")
    static let mailboxGone = RelayError(.mailboxGone, "mailbox was closed by every side")
    static let noFreeNameplate = RelayError(.noFreeNameplate, "no free nameplate, try again later")
    static func messageTooLarge(limit: Int) -> RelayError {
        RelayError(.messageTooLarge, "message too large (limit \(limit) bytes)")
    }
    static func mailboxMessageLimit(_ limit: Int) -> RelayError {
        RelayError(.mailboxMessageLimit, "mailbox full (limit \(limit) messages)")
    }
    static func mailboxByteLimit(_ limit: Int) -> RelayError {
        RelayError(.mailboxByteLimit, "mailbox full (limit \(limit) bytes of message bodies)")
    }
    static let storageFull = RelayError(.storageFull, "the relay is holding too much data, try again later")
    static func nameplateLimit(_ limit: Int) -> RelayError {
        RelayError(.nameplateLimit, "too many open nameplates from your address (limit \(limit))")
    }
    static let allocationRateLimited = RelayError(
        .allocationRateLimited, "too many allocations from your address, try again later")
    static let claimRateLimited = RelayError(
        .claimRateLimited, "too many claims from your address, try again later")
    static let connectionRateLimited = RelayError(
        .connectionRateLimited, "too many connections from your address, try again later")
    static let tooManyConnections = RelayError(
        .tooManyConnections, "the relay is full, try again later")
    static let tooManyErrors = RelayError(.tooManyErrors, "too many bad messages, closing the connection")
    static let storageUnavailable = RelayError(
        .storageUnavailable, "the relay cannot reach its database right now, try again shortly")
    static let permissionRequired = RelayError(
        .permissionRequired, "permission required: send 'submit-permission' first (see the welcome)")
    static let permissionMethodUnsupported = RelayError(
        .permissionMethodUnsupported, "unsupported permission method")
    static func permissionInvalid(_ why: String) -> RelayError {
        RelayError(.permissionInvalid, "invalid hashcash stamp: \(why)")
    }
    static let permissionReused = RelayError(.permissionReused, "hashcash stamp already used")
    static let permissionAlreadyGranted = RelayError(.permissionAlreadyGranted, "permission already granted")
}
