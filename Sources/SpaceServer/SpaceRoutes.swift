import SpaceModel

extension SpaceService {
    /// Finds the handler for a request. Paths are `/api/...`; ids are base64url.
    func route(_ request: APIRequest) throws -> APIResponse {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[0].isEmpty, parts[1] == "api" else { throw Self.unknownRoute }
        let rest = Array(parts.dropFirst(2))
        let method = request.method.uppercased()

        switch rest.count {
        case 1 where rest[0] == "group":
            try allow(method, ["GET"])
            return try group(request)
        case 1 where rest[0] == "server-avatar":
            try allow(method, ["GET"])
            return try serverAvatar(request)
        case 1 where rest[0] == "relay":
            try allow(method, ["GET"])
            return try advertisedRelay()
        case 1 where rest[0] == "spaces":
            try allow(method, ["POST"])
            return try createSpace(request)
        default:
            break
        }
        if rest[0] == "home" { return try routeHome(request, Array(rest.dropFirst()), method: method) }
        if rest[0] == "key-invite" { return try routeKeyInvite(request, rest, method: method) }
        guard rest.count >= 2, rest[0] == "spaces" else { throw Self.unknownRoute }
        let tail = Array(rest.dropFirst(2))
        // Check the shape of the route before touching the store, so unknown routes are 404s
        // whatever the space id.
        let routeKey = tail.enumerated().map { index, part in
            (index == 1 && ["members", "tokens", "threads", "inbox"].contains(tail[0])) ? "*" : String(part)
        }.joined(separator: "/")
        let methods: [String]
        switch routeKey {
        case "": methods = ["GET"]
        case "branding": methods = ["PUT"]
        case "members", "events", "tokens", "threads", "inbox": methods = ["GET", "POST"]
        case "members/*", "tokens/*", "inbox/*": methods = ["DELETE"]
        case "sign-in", "sign-in/challenge": methods = ["POST"]
        case "avatar", "group": methods = ["GET"]
        case "wraps": methods = ["GET", "POST"]
        case "threads/*/wraps", "threads/*/messages": methods = ["GET", "POST"]
        default: throw Self.unknownRoute
        }
        try allow(method, methods)
        let space = try existingSpace(rest[1])

        // Public or self-authenticating endpoints.
        switch routeKey {
        case "group": return try groupInfo(space)
        case "avatar": return try avatarResponse(space)
        case "sign-in/challenge": return try signInChallenge(request, space: space)
        case "sign-in": return try signIn(request, space: space)
        default: break
        }

        let principal = try authenticate(request, space: space.id)
        switch (routeKey, method) {
        case ("", _): return try spaceInfo(space, principal: principal)
        case ("branding", _): return try updateBranding(request, space: space, principal: principal)
        case ("members", "GET"): return try listMembers(space)
        case ("members", _): return try addMembers(request, space: space, principal: principal)
        case ("members/*", _):
            return try appendEvent(request, space: space, principal: principal, expect: .removing(tail[1]))
        case ("events", "GET"): return try listEvents(request, space: space)
        case ("events", _): return try appendEvent(request, space: space, principal: principal, expect: .any)
        case ("tokens", "GET"): return try listTokens(space, principal: principal)
        case ("tokens", _): return try newToken(request, space: space, principal: principal)
        case ("tokens/*", _): return try revokeToken(tail[1], space: space, principal: principal)
        case ("threads", "GET"): return try listThreads(space)
        case ("threads", _): return try createThread(request, space: space, principal: principal)
        case ("threads/*/wraps", "GET"):
            return try ownWraps(space, thread: thread(tail[1], in: space), principal: principal)
        case ("threads/*/wraps", _):
            return try postWraps(
                request, space: space, thread: thread(tail[1], in: space), principal: principal)
        case ("wraps", "GET"): return try ownWraps(space, thread: nil, principal: principal)
        case ("wraps", _): return try postWrapsForThreads(request, space: space, principal: principal)
        case ("threads/*/messages", "GET"):
            return try listMessages(
                request, space: space, thread: thread(tail[1], in: space), principal: principal)
        case ("threads/*/messages", _):
            return try postMessage(
                request, space: space, thread: thread(tail[1], in: space), principal: principal)
        case ("inbox", "GET"): return try listInbox(request, space: space, principal: principal)
        case ("inbox", _): return try postNote(request, space: space, principal: principal)
        case ("inbox/*", _): return try deleteNote(tail[1], space: space, principal: principal)
        default: throw Self.unknownRoute
        }
    }

    static let unknownRoute = APIError.notFound(.unknownRoute, "There is no such API endpoint.")

    private func allow(_ method: String, _ allowed: [String]) throws(APIError) {
        guard allowed.contains(method) else {
            throw APIError(
                405, .methodNotAllowed, "Use \(allowed.joined(separator: " or ")) for this endpoint.")
        }
    }

    /// The thread named in the path, or 404.
    private func thread(_ text: Substring, in space: SpaceRow) throws -> ThreadRow {
        guard let id = try? ThreadID(base64URL: String(text)),
            let thread = try store.thread(id, space: space.id)
        else {
            throw APIError.notFound(.unknownThread, "There is no thread with that id in this space.")
        }
        return thread
    }
}
