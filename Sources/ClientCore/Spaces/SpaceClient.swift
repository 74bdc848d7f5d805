import Foundation
import Net
import SpaceModel

/// A typed client of a space server's HTTP API (see `Sources/SpaceServer/API.md`). Blocking:
/// call it from a command or a worker thread, never from an event loop thread.
///
/// Every failure is a ``SpaceClientError`` a person can act on, such as
/// "can't reach http://127.0.0.1:8711: connection refused".
public struct SpaceClient: Sendable {
    /// The server's base URL without a trailing slash (`https://space.example`).
    public let server: String
    /// The bearer token sent with every call, if any.
    public var token: String?
    /// How long one call may take.
    public var timeout: Duration = .seconds(30)
    /// TLS settings (a pinned CA for tests and private deployments).
    public var tls = TLSClientConfiguration()

    /// A client for `server` (`http://` or `https://`).
    public init(server: String, token: String? = nil) throws(SpaceClientError) {
        let trimmed = server.hasSuffix("/") ? String(server.dropLast()) : server
        let url: NetURL
        do throws(NetError) {
            url = try NetURL(trimmed)
        } catch {
            throw SpaceClientError(
                .rejected, code: "invalid_url",
                message:
                    "\(server) is not a server address: \(error.message). Use http://host:port or https://host."
            )
        }
        guard url.scheme == "http" || url.scheme == "https", url.target == "/" || url.target.isEmpty else {
            throw SpaceClientError(
                .rejected, code: "invalid_url",
                message: "\(server) is not a server address. Use http://host:port or https://host.")
        }
        self.server = trimmed
        self.token = token
    }

    // MARK: Spaces and members

    /// Creates a space whose owner signed `genesis`.
    public func createSpace(name: String, genesis: MembershipEvent, deviceLabel: String? = nil)
        throws(SpaceClientError) -> SpaceWire.CreatedSpace
    {
        try call(
            .post, "/api/spaces",
            body: SpaceWire.CreateSpaceRequest(name: name, genesis: genesis, deviceLabel: deviceLabel))
    }

    /// The space's name, owner and chain head.
    public func spaceInfo(_ space: SpaceID) throws(SpaceClientError) -> SpaceWire.SpaceInfo {
        try call(.get, path(space))
    }

    /// Current and former members as the server lists them (verify with ``roster(_:ownerKey:)``).
    public func members(_ space: SpaceID) throws(SpaceClientError) -> SpaceWire.MemberList {
        try call(.get, path(space, "members"))
    }

    /// Every membership event, in order.
    public func events(_ space: SpaceID) throws(SpaceClientError) -> [MembershipEvent] {
        try events(space, userInfo: [:])
    }

    func events(_ space: SpaceID, userInfo: [CodingUserInfoKey: any Sendable]) throws(SpaceClientError)
        -> [MembershipEvent]
    {
        var events: [MembershipEvent] = []
        while true {
            let page = try eventPage(
                path(space, "events") + "?from=\(events.count)&limit=500",
                keysVouched: userInfo[.memberKeysVouched] as? Bool == true)
            events += page
            if page.count < 500 { return events }
        }
    }

    /// The membership chain, verified on this device from the owner's key forward.
    public func roster(_ space: SpaceID, ownerKey: SigningPublicKey) throws(SpaceClientError) -> Roster {
        let events = try events(space)
        do throws(KeyModelError) {
            return try Roster.verify(events: events, ownerKey: ownerKey)
        } catch {
            throw SpaceClientError(
                .verification, code: error.code.rawValue,
                message: "The member list from \(server) does not check out: \(error.message)")
        }
    }

    /// Submits a `member_added` event; the answer carries the new member's first device token.
    public func addMember(_ space: SpaceID, event: MembershipEvent) throws(SpaceClientError)
        -> SpaceWire.AppendedEvent
    {
        try call(.post, path(space, "members"), body: SpaceWire.EventRequest(event: event))
    }

    /// Submits several `member_added` events, in chain order, in one request: the server applies
    /// them all or none. Members added this way get no device token (they sign in).
    public func addMembers(_ space: SpaceID, events: [MembershipEvent]) throws(SpaceClientError)
        -> [SpaceWire.AppendedEvent]
    {
        try addMembers(space, events: events, bundles: nil).appended
    }

    /// ``addMembers(_:events:)`` with wrap bundles for the new members, stored in the same
    /// transaction after the events (all or none, with them). The answer's `wrapsStored` is nil
    /// when the server did not store them (one from before ignores them): post them then.
    /// `threadCount`: the length of the thread list the bundles' keys were chosen from; a
    /// server that checks it refuses the request (409 `threads_changed`) when the space holds
    /// another number of threads, and answers with it otherwise (nil: it did not check).
    public func addMembers(
        _ space: SpaceID, events: [MembershipEvent], bundles: [KeyWrapBundle]?, threadCount: Int? = nil
    ) throws(SpaceClientError) -> SpaceWire.AppendedEvents {
        let answer: SpaceWire.AppendedEvents = try call(
            .post, path(space, "members"),
            body: SpaceWire.EventsRequest(events: events, bundles: bundles, threadCount: threadCount))
        guard answer.appended.count == events.count else {
            throw invalidResponse(
                "the server answered for \(answer.appended.count) of \(events.count) events")
        }
        return answer
    }

    /// Submits a `member_removed` event for `member`.
    public func removeMember(_ space: SpaceID, _ member: MemberID, event: MembershipEvent)
        throws(SpaceClientError) -> SpaceWire.AppendedEvent
    {
        try call(
            .delete, path(space, "members", member.base64URL), body: SpaceWire.EventRequest(event: event))
    }

    /// Signs in as `member` with the device's signing key: fetches a challenge, signs it, and
    /// returns a new device token.
    public func signIn(_ space: SpaceID, as member: MemberID, identity: DeviceIdentity, label: String? = nil)
        throws(SpaceClientError) -> SpaceWire.IssuedToken
    {
        try call(
            .post, path(space, "sign-in"),
            body: SpaceWire.SignInRequest(
                proof: proof(space, as: member, identity: identity, challenge: challenge(space, for: member)),
                label: label))
    }

    /// Signs in as `member` with `challenge` when one came with the grant (the attendant passed
    /// on the server's answer to the admission), asking for a fresh one only when the server
    /// refuses it (`challenge_invalid`: expired while a person approved, or the server restarted
    /// with another key) or there is none. With `eventAt` the answer also carries the event at
    /// that sequence (nil: not held there, or an older server that ignores the question).
    public func signIn(
        _ space: SpaceID, as member: MemberID, identity: DeviceIdentity, label: String?,
        challenge given: String?,
        eventAt sequence: UInt64?
    ) throws(SpaceClientError) -> SpaceWire.SignedIn {
        func attempt(_ challenge: [UInt8]) throws(SpaceClientError) -> SpaceWire.SignedIn {
            try call(
                .post, path(space, "sign-in"),
                body: SpaceWire.SignInRequest(
                    proof: proof(space, as: member, identity: identity, challenge: challenge), label: label,
                    eventAt: sequence))
        }
        if let given, let bytes = Base64URL.decode(given), bytes.count == SignInProof.challengeByteCount {
            do {
                return try attempt(bytes)
            } catch  where error.status == 401 && error.typedCode == .challengeInvalid {
                // Fall through to a fresh one, once.
            }
        }
        return try attempt(challenge(space, for: member))
    }

    /// A fresh sign-in challenge for `member`.
    private func challenge(_ space: SpaceID, for member: MemberID) throws(SpaceClientError) -> [UInt8] {
        let challenge: SpaceWire.Challenge = try call(
            .post, path(space, "sign-in", "challenge"), body: SpaceWire.ChallengeRequest(member: member))
        guard let bytes = Base64URL.decode(challenge.challenge) else {
            throw invalidResponse("the sign-in challenge is not base64url")
        }
        return bytes
    }

    /// `challenge` signed with the device's key, bound to `space` and `member`.
    private func proof(_ space: SpaceID, as member: MemberID, identity: DeviceIdentity, challenge: [UInt8])
        throws(SpaceClientError) -> SignInProof
    {
        do throws(KeyModelError) {
            return try identity.signIn(to: space, as: member, challenge: challenge)
        } catch {
            throw invalidResponse("the sign-in challenge has the wrong length")
        }
    }

    // MARK: Threads, wraps, messages

    /// Every thread of the space.
    public func threads(_ space: SpaceID) throws(SpaceClientError) -> [SpaceWire.ThreadInfo] {
        let list: SpaceWire.ThreadList = try call(.get, path(space, "threads"))
        return list.threads
    }

    /// Creates a thread with its first key wraps and opaque metadata.
    public func createThread(_ space: SpaceID, thread: ThreadID, wraps: [KeyWrap], metadata: [UInt8]?)
        throws(SpaceClientError)
    {
        let _: SpaceWire.StoredCount = try call(
            .post, path(space, "threads"),
            body: SpaceWire.CreateThreadRequest(
                thread: thread, wraps: wraps, metadata: metadata.map(Base64URL.encode)))
    }

    /// The key wraps and wrap bundles addressed to the caller (all threads, or one).
    public func wraps(_ space: SpaceID, thread: ThreadID? = nil) throws(SpaceClientError)
        -> SpaceWire.WrapList
    {
        let list: SpaceWire.WrapList =
            if let thread {
                try call(.get, path(space, "threads", thread.base64URL, "wraps"))
            } else {
                try call(.get, path(space, "wraps"))
            }
        return list
    }

    /// Stores key wraps for other members.
    public func postWraps(_ space: SpaceID, thread: ThreadID, wraps: [KeyWrap]) throws(SpaceClientError) {
        let _: SpaceWire.StoredCount = try call(
            .post, path(space, "threads", thread.base64URL, "wraps"),
            body: SpaceWire.WrapsRequest(wraps: wraps))
    }

    /// Appends a message; returns its cursor.
    @discardableResult
    public func post(_ message: EncryptedMessage) throws(SpaceClientError) -> Int64 {
        let answer: SpaceWire.AppendedMessage = try call(
            .post, path(message.space, "threads", message.thread.base64URL, "messages"),
            body: SpaceWire.MessageRequest(message: message))
        return answer.cursor
    }

    /// Messages after cursor `since`. With `wait` > 0 the server holds the request open up to that
    /// many seconds until a message arrives (long-poll).
    public func messages(
        _ space: SpaceID, thread: ThreadID, since: Int64 = 0, limit: Int = 500, wait: Int = 0
    ) throws(SpaceClientError) -> SpaceWire.MessageList {
        var target = path(space, "threads", thread.base64URL, "messages") + "?since=\(since)&limit=\(limit)"
        if wait > 0 { target += "&wait=\(wait)" }
        var client = self
        client.timeout = max(timeout, .seconds(wait + 15))
        return try client.call(.get, target)
    }

    // MARK: Transport

    private func path(_ space: SpaceID, _ parts: String...) -> String {
        (["/api/spaces", space.base64URL] + parts).joined(separator: "/")
    }

    private struct NoBody: Encodable {}

    func call<Answer: Decodable>(_ method: HTTPMethod, _ target: String) throws(SpaceClientError)
        -> Answer
    {
        try call(method, target, body: NoBody?.none)
    }

    func call<Answer: Decodable, Body: Encodable>(
        _ method: HTTPMethod, _ target: String, body: Body?, userInfo: [CodingUserInfoKey: any Sendable] = [:]
    ) throws(SpaceClientError) -> Answer {
        try call(method, target, body: body) { bytes in
            try WireJSON.decode(Answer.self, from: bytes, userInfo: userInfo)
        }
    }

    /// One page of `GET …/events` (see ``SpaceWire/EventList/decode(_:keysVouched:)``).
    func eventPage(_ target: String, keysVouched: Bool) throws(SpaceClientError) -> [MembershipEvent] {
        try call(.get, target, body: NoBody?.none) { bytes in
            try SpaceWire.EventList.decode(bytes, keysVouched: keysVouched)
        }
    }

    /// Sends a request and reads a successful answer with `decode`.
    func call<Answer, Body: Encodable>(
        _ method: HTTPMethod, _ target: String, body: Body?, decode: ([UInt8]) throws -> Answer
    ) throws(SpaceClientError) -> Answer {
        var headers = HTTPHeaders()
        if let token { headers.set("Authorization", "Bearer \(token)") }
        var bytes: [UInt8] = []
        if let body {
            headers.set("Content-Type", "application/json")
            do {
                bytes = try WireJSON.encode(body)
            } catch {
                throw SpaceClientError(
                    .invalidResponse, code: "encode_failed", message: "could not encode the request")
            }
        }
        let response: HTTPResponse
        do throws(NetError) {
            response = try HTTPClient.send(
                method, url: server + target, headers: headers, body: bytes, tls: tls, timeout: timeout)
        } catch {
            throw Self.unreachable(server, error)
        }
        guard (200..<300).contains(response.status.code) else {
            throw refusal(response)
        }
        do {
            return try decode(response.body)
        } catch {
            throw invalidResponse(
                "the answer to \(method) \(target.split(separator: "?")[0]) is not what the API sends")
        }
    }

    private struct ErrorBody: Decodable {
        let error: String
        let message: String
        let triesLeft: Int?
    }

    private func refusal(_ response: HTTPResponse) -> SpaceClientError {
        let status = response.status.code
        guard let body = try? JSONDecoder().decode(ErrorBody.self, from: Data(response.body)) else {
            return SpaceClientError(
                .invalidResponse, code: "http_\(status)",
                message:
                    "\(server) answered \(response.status) and is not an Eleven space server (check the URL).",
                status: status)
        }
        let kind: SpaceClientError.Kind = (status == 401 || status == 403) ? .refused : .rejected
        return SpaceClientError(
            kind, code: body.error, message: "\(server) refused: \(body.message)", status: status,
            triesLeft: body.triesLeft)
    }

    private func invalidResponse(_ detail: String) -> SpaceClientError {
        SpaceClientError(
            .invalidResponse, code: "invalid_response",
            message: "\(server) sent an unexpected answer (\(detail)); is this an Eleven space server?")
    }

    /// "can't reach URL: connection refused" from a networking error.
    static func unreachable(_ server: String, _ error: NetError) -> SpaceClientError {
        var detail = error.message
        if let range = detail.range(of: "failed: ") { detail = String(detail[range.upperBound...]) }
        let code: String
        switch error.code {
        case .timedOut: code = "timed_out"
        case .resolveFailed: code = "unknown_host"
        case .tlsError, .handshakeFailed: code = "tls_failed"
        case .connectFailed where error.isConnectionRefused: code = "connection_refused"
        default: code = "unreachable"
        }
        return SpaceClientError(
            .unreachable, code: code, message: "can't reach \(server): \(detail.lowercased())")
    }
}
