import Foundation
import SpaceModel

/// One HTTP request as the space API sees it; the HTTP layer fills it in.
public struct APIRequest: Sendable {
    /// `GET`, `POST`, `PUT`, `DELETE`.
    public var method: String
    /// The request target: path and optional `?query`.
    public var target: String
    /// Header fields; names are matched case-insensitively.
    public var headers: [String: String]
    public var body: [UInt8]
    /// The peer's address, for logs and rate limits.
    public var remoteAddress: String

    public init(
        method: String, target: String, headers: [String: String] = [:], body: [UInt8] = [],
        remoteAddress: String = ""
    ) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// The value of a header field, matching the name case-insensitively.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.key.lowercased() == lowered }?.value
    }

    /// The path without the query.
    var path: Substring {
        target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }

    /// Query parameters (the last value wins for repeated names). Values are percent-decoded.
    var query: [String: String] {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return [:] }
        var result: [String: String] = [:]
        for pair in parts[1].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            // Foundation's decoding is slow; most keys and values have nothing to decode.
            func decoded(_ text: Substring) -> String {
                text.contains("%") ? String(text).removingPercentEncoding ?? String(text) : String(text)
            }
            let key = decoded(kv[0])
            let value = kv.count == 2 ? decoded(kv[1]) : ""
            result[key] = value
        }
        return result
    }
}

/// One HTTP response: a status, a content type and the body (JSON unless stated otherwise).
public struct APIResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var headers: [String: String]
    public var body: [UInt8]

    public init(
        status: Int, contentType: String = "application/json", headers: [String: String] = [:], body: [UInt8]
    ) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }

    /// Every answer is written as its events are (keys sorted, slashes as they are).
    static var encoder: JSONEncoder { SpaceWire.EventList.encoder }

    /// A JSON response.
    static func json(_ value: some Encodable, status: Int = 200) -> APIResponse {
        do {
            return APIResponse(status: status, body: try WireJSON.encode(value))
        } catch {
            return APIError(500, .internal, "The server could not encode its answer.").response
        }
    }
}

/// A refused request: an HTTP status, a stable code and a message a person can act on. Sent as
/// `{ "error": code, "message": text }`, plus `"triesLeft": n` where a wrong answer may be tried
/// again, so a client decides by fields, never by the message's words.
public struct APIError: Error, Sendable, Equatable {
    /// The server's own codes; the raw values are what it sends (`docs/errors.md`, API.md).
    public enum Code: String, CaseIterable, Sendable {
        case alreadyAnswered = "already_answered"
        case alreadyOffered = "already_offered"
        case authorMismatch = "author_mismatch"
        case avatarTooLarge = "avatar_too_large"
        case bodyTooLarge = "body_too_large"
        case busy
        case cannotRemoveSelf = "cannot_remove_self"
        case challengeInvalid = "challenge_invalid"
        case claimInvalid = "claim_invalid"
        case codeExpired = "code_expired"
        case codeInvalid = "code_invalid"
        case deviceExists = "device_exists"
        case deviceRevoked = "device_revoked"
        case devicesChanged = "devices_changed"
        case emailInUse = "email_in_use"
        case emailNotProved = "email_not_proved"
        case emailUnavailable = "email_unavailable"
        case `internal`
        case invalidAddress = "invalid_address"
        case invalidEvent = "invalid_event"
        case invalidField = "invalid_field"
        case invalidJson = "invalid_json"
        case invalidQuery = "invalid_query"
        case invalidRequest = "invalid_request"
        case inviteExists = "invite_exists"
        case inviteExpired = "invite_expired"
        case inviteKeysChanged = "invite_keys_changed"
        case inviteUsed = "invite_used"
        case inviterRemoved = "inviter_removed"
        case keyRotated = "key_rotated"
        case memberRequired = "member_required"
        case messageExists = "message_exists"
        case messageTooLarge = "message_too_large"
        case metadataTooLarge = "metadata_too_large"
        case methodNotAllowed = "method_not_allowed"
        case missingField = "missing_field"
        case noAccount = "no_account"
        case noAvatar = "no_avatar"
        case noRelay = "no_relay"
        case notAuthorised = "not_authorised"
        case notMember = "not_member"
        case notOffered = "not_offered"
        case replayedSignature = "replayed_signature"
        case senderMismatch = "sender_mismatch"
        case sessionExpired = "session_expired"
        case sessionInvalid = "session_invalid"
        case sessionMissing = "session_missing"
        case signatureExpired = "signature_expired"
        case signatureInvalid = "signature_invalid"
        case signerMismatch = "signer_mismatch"
        case spaceExists = "space_exists"
        case spaceRequired = "space_required"
        case storageFull = "storage_full"
        case storageUnavailable = "storage_unavailable"
        case threadExists = "thread_exists"
        case threadsChanged = "threads_changed"
        case tokenExpired = "token_expired"
        case tokenInvalid = "token_invalid"
        case tokenMissing = "token_missing"
        case tokenRevoked = "token_revoked"
        case tooManyAddresses = "too_many_addresses"
        case tooManyAttempts = "too_many_attempts"
        case tooManyDevices = "too_many_devices"
        case tooManyEvents = "too_many_events"
        case tooManyNotes = "too_many_notes"
        case tooManyRequests = "too_many_requests"
        case tooManyWraps = "too_many_wraps"
        case unknownApproval = "unknown_approval"
        case unknownDevice = "unknown_device"
        case unknownInvite = "unknown_invite"
        case unknownMember = "unknown_member"
        case unknownNote = "unknown_note"
        case unknownRoute = "unknown_route"
        case unknownSpace = "unknown_space"
        case unknownThread = "unknown_thread"
        case unknownToken = "unknown_token"
        case vaultTooLarge = "vault_too_large"
        case versionConflict = "version_conflict"
        case wrapExists = "wrap_exists"
        case wrongContext = "wrong_context"
    }

    public let status: Int
    /// What the server sends: one of ``Code``, or the code of the error this one reports (the key
    /// model's, for an event or wrap that does not check out).
    public let code: String
    public let message: String
    /// How many more tries the same challenge allows (`code_invalid`); nil where none is counted.
    public let triesLeft: Int?

    public init(_ status: Int, _ code: Code, _ message: String, triesLeft: Int? = nil) {
        self.init(status, reporting: code.rawValue, message, triesLeft: triesLeft)
    }

    /// An error that passes on another's `code`.
    public init(_ status: Int, reporting code: String, _ message: String, triesLeft: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.triesLeft = triesLeft
    }

    private struct Body: Encodable {
        let error: String
        let message: String
        let triesLeft: Int?
    }

    var response: APIResponse {
        let body =
            (try? APIResponse.encoder.encode(Body(error: code, message: message, triesLeft: triesLeft)))
            .map { Array($0) } ?? []
        return APIResponse(status: status, body: body)
    }

    static func badRequest(_ code: Code, _ message: String) -> APIError { APIError(400, code, message) }
    static func forbidden(_ code: Code, _ message: String) -> APIError { APIError(403, code, message) }
    static func notFound(_ code: Code, _ message: String) -> APIError { APIError(404, code, message) }
    static func conflict(_ code: Code, _ message: String) -> APIError { APIError(409, code, message) }
    static func unauthorised(_ code: Code, _ message: String) -> APIError { APIError(401, code, message) }
}
