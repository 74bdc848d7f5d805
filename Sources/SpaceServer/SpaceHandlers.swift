import CSodium
import Foundation
import SpaceModel

/// Which membership event an endpoint accepts.
enum ExpectedEvent {
    case adding
    case removing(Substring)
    case any
}

// Spaces, branding, members, events, tokens.
extension SpaceService {
    func createSpace(_ request: APIRequest) throws -> APIResponse {
        try checkCreationToken(request)
        let body = try decode(CreateSpaceBody.self, from: request)
        return .json(
            try bootstrapSpace(name: body.name, genesis: body.genesis, deviceLabel: body.deviceLabel),
            status: 201)
    }

    /// When the server is configured with a creation token, the request must carry it.
    func checkCreationToken(_ request: APIRequest) throws {
        if let required = configuration.spaceCreationToken {
            let given = request.header("Authorization").map { String($0.dropFirst("Bearer ".count)) } ?? ""
            let a = Array(given.utf8)
            let b = Array(required.utf8)
            guard a.count == b.count, sodium_memcmp(a, b, a.count) == 0 else {
                throw APIError.unauthorised(
                    .tokenInvalid, "Creating a space on this server needs its creation token.")
            }
        }
    }

    /// Creates a space from its owner's self-signed first event (a `POST /api/spaces`, or the
    /// claim of a setup invite): the space, its owner, the event, an admin token and the owner's
    /// first device token.
    /// An empty `name` makes a sealed space: the server keeps no branding, so its public
    /// endpoints answer no name and no picture (`docs/key-model.md`, "Names").
    func bootstrapSpace(name: String, genesis: MembershipEvent, deviceLabel: String?) throws -> CreatedSpace {
        if !name.isEmpty { try checkName(name, field: "name", allowEmpty: false) }
        let roster = try check { () throws(KeyModelError) in try Roster(genesis: genesis) }
        guard try store.space(roster.space) == nil else {
            throw APIError.conflict(.spaceExists, "A space with that id already exists.")
        }
        guard case .spaceCreated(let owner) = genesis.change else {
            throw APIError.badRequest(.invalidEvent, "The first event must create the space.")
        }
        var adminRaw = Self.randomBytes(32)
        defer { sodium_memzero(&adminRaw, adminRaw.count) }
        try store.insertSpace(
            roster.space, name: name, owner: owner, adminTokenHash: Self.hashToken(adminRaw), now: now)
        try store.insertMember(roster.members[owner.id] ?? owner, space: roster.space, sequence: 0)
        try store.insertEvent(
            space: roster.space, sequence: 0, hash: roster.head, json: try encodeEvent(genesis))
        let token = try issueToken(space: roster.space, member: owner.id, label: deviceLabel, expiresIn: nil)
        addRoster(roster)
        pendingChanges.append(.membership(space: roster.space, sequence: 0))
        return CreatedSpace(
            space: roster.space, adminToken: Base64URL.encode(adminRaw), owner: owner.id, deviceToken: token,
            head: EventHead(sequence: 0, hash: roster.head.description))
    }

    func encodeEvent(_ event: MembershipEvent) throws -> String {
        try EventList.storedText(event)
    }

    /// `/api/group` and `/api/server-avatar` name the space with `?space=`; a server hosting a
    /// single space may omit it.
    private func publicSpace(_ request: APIRequest) throws -> SpaceRow {
        if let text = request.query["space"] {
            return try existingSpace(Substring(text))
        }
        let ids = try store.spaceIDs(limit: 2)
        guard ids.count == 1, let space = try store.space(ids[0]) else {
            throw APIError.badRequest(.spaceRequired, "Name the space with ?space=<id>.")
        }
        return space
    }

    func group(_ request: APIRequest) throws -> APIResponse {
        try groupInfo(try publicSpace(request))
    }

    /// The join relay the operator configured, for clients that make or follow short codes.
    func advertisedRelay() throws -> APIResponse {
        guard let relay = configuration.relayURL else {
            throw APIError.notFound(.noRelay, "This server advertises no relay.")
        }
        return .json(RelayInfo(relay: relay))
    }

    func serverAvatar(_ request: APIRequest) throws -> APIResponse {
        try avatarResponse(try publicSpace(request))
    }

    private func avatarPath(_ space: SpaceRow) -> String? {
        space.avatarType == nil ? nil : "/api/server-avatar?space=\(space.id)"
    }

    func groupInfo(_ space: SpaceRow) throws -> APIResponse {
        .json(GroupInfo(space: space.id, name: space.name, avatar: avatarPath(space)))
    }

    func avatarResponse(_ space: SpaceRow) throws -> APIResponse {
        guard let avatar = try store.avatar(space: space.id) else {
            throw APIError.notFound(.noAvatar, "This space has no avatar.")
        }
        return APIResponse(
            status: 200, contentType: avatar.type,
            headers: ["X-Content-Type-Options": "nosniff", "Cache-Control": "public, max-age=300"],
            body: avatar.bytes)
    }

    func spaceInfo(_ space: SpaceRow, principal: Principal) throws -> APIResponse {
        let roster = try roster(space.id)
        let owner = roster.members[roster.owner]
        return .json(
            SpaceInfo(
                space: space.id, name: space.name, owner: roster.owner,
                ownerSigningKey: owner?.keys.signing.description ?? "", avatar: avatarPath(space),
                head: EventHead(sequence: roster.nextSequence - 1, hash: roster.head.description),
                you: principal.member?.id))
    }

    /// Image types accepted as avatars, with their leading magic bytes.
    private static let avatarTypes: [String: [[UInt8?]]] = [
        "image/png": [[0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]],
        "image/jpeg": [[0xFF, 0xD8, 0xFF]],
        "image/gif": [Array("GIF87a".utf8), Array("GIF89a".utf8)],
        "image/webp": [[0x52, 0x49, 0x46, 0x46, nil, nil, nil, nil, 0x57, 0x45, 0x42, 0x50]],
    ]

    func updateBranding(_ request: APIRequest, space: SpaceRow, principal: Principal) throws -> APIResponse {
        if let member = principal.member {
            guard try roster(space.id).rights(of: member.id).contains(.admin) else {
                throw APIError.forbidden(
                    .notAuthorised, "Only the owner and admins may change the space's branding.")
            }
        }
        let body = try decode(BrandingBody.self, from: request)
        if let name = body.name {
            try checkName(name, field: "name", allowEmpty: false)
            try store.setName(name, space: space.id)
        }
        if let avatar = body.avatar {
            guard body.removeAvatar != true else {
                throw APIError.badRequest(.invalidField, "Send either avatar or removeAvatar, not both.")
            }
            let data = try bytes(avatar.data, field: "avatar.data")
            guard data.count <= configuration.maximumAvatarBytes else {
                throw APIError(
                    413, .avatarTooLarge,
                    "The avatar is larger than \(configuration.maximumAvatarBytes) bytes.")
            }
            guard let magics = Self.avatarTypes[avatar.contentType] else {
                throw APIError.badRequest(
                    .invalidField, "Field avatar.contentType must be a PNG, JPEG, GIF or WebP type.")
            }
            let matches = magics.contains { magic in
                data.count >= magic.count
                    && zip(magic, data).allSatisfy { expected, byte in expected == nil || expected == byte }
            }
            guard matches else {
                throw APIError.badRequest(
                    .invalidField, "Field avatar.data is not a \(avatar.contentType) image.")
            }
            try store.setAvatar((avatar.contentType, data), space: space.id)
        } else if body.removeAvatar == true {
            try store.setAvatar(nil, space: space.id)
        }
        guard let updated = try store.space(space.id) else { throw Self.unknownRoute }
        return try groupInfo(updated)
    }

    private func memberInfo(_ row: MemberRow) -> MemberInfo {
        MemberInfo(
            id: row.record.id, keys: row.record.keys, rights: row.record.rights, name: row.record.name,
            addedSequence: row.addedSequence, removedSequence: row.removedSequence)
    }

    func listMembers(_ space: SpaceRow) throws -> APIResponse {
        let rows = try store.members(space: space.id, includeRemoved: true)
        return .json(
            MemberList(
                members: rows.filter { $0.removedSequence == nil }.map(memberInfo),
                formerMembers: rows.filter { $0.removedSequence != nil }.map(memberInfo)))
    }

    func listEvents(_ request: APIRequest, space: SpaceRow) throws -> APIResponse {
        let from = try integerQuery(request, "from", default: 0)
        let limit = try pageSize(request)
        // The stored texts are this server's own encoding of events it verified.
        let texts = try store.events(space: space.id, from: UInt64(from), limit: limit)
        return APIResponse(status: 200, body: EventList.body(storedEvents: texts))
    }

    /// Verifies a signed membership event against the space's roster, stores it and applies it.
    /// A member may only submit events they signed; the admin token may submit any valid event.
    func appendEvent(
        _ request: APIRequest, space: SpaceRow, principal: Principal, expect: ExpectedEvent
    ) throws -> APIResponse {
        let body = try decode(EventBody.self, from: request)
        let appended = try append(
            body.event, space: space, principal: principal, expect: expect,
            token: true, label: body.deviceLabel)
        return .json(appended, status: 201)
    }

    /// `POST …/members`: one event (`{"event"}`), or several `member_added` events in chain order
    /// (`{"events"}`), applied all or none; members added together get no device token (they sign
    /// in themselves). With `events`, `bundles` are the new members' thread keys, checked and
    /// stored after the events exactly as `POST …/wraps` does (an attendant's admission and its
    /// wraps in one request); a refused bundle refuses the whole request.
    func addMembers(_ request: APIRequest, space: SpaceRow, principal: Principal) throws -> APIResponse {
        let body = try decode(MembersBody.self, from: request)
        guard let events = body.events else {
            guard let event = body.event else {
                throw APIError.badRequest(.missingField, "Field event is missing.")
            }
            // The answer to one event has no room to say the bundles were stored.
            guard body.bundles == nil || !configuration.storesBundlesWithMembers else {
                throw APIError.badRequest(.invalidRequest, "Send bundles with events, not with event.")
            }
            let appended = try append(
                event, space: space, principal: principal, expect: .adding,
                token: true, label: body.deviceLabel)
            return .json(appended, status: 201)
        }
        try checkSeveral(
            events, alsoOne: body.event != nil, field: "event",
            limit: configuration.maximumEventsPerRequest, tooMany: .tooManyEvents)
        // The sender chose the joiners' keys from a thread list that many threads long: a
        // thread created since (threads are never removed nor changed, so a count equal is the
        // same list) refuses the request before anything is stored, and the sender reads the
        // list again. Checked under the request lock, so no thread is created until it commits.
        let threadCount = configuration.checksThreadCount ? body.threadCount : nil
        if let threadCount {
            let current = try store.threadCount(space: space.id)
            guard current == threadCount else {
                throw APIError.conflict(
                    .threadsChanged,
                    "The space has \(current) threads, not \(threadCount): read the thread list again.")
            }
        }
        var appended: [AppendedEvent] = []
        for (index, event) in events.enumerated() {
            guard case .memberAdded = event.change else {
                throw APIError.badRequest(
                    .invalidEvent, "Event \(index) is not a member_added event; only those come in a batch."
                )
            }
            do {
                appended.append(
                    try append(event, space: space, principal: principal, expect: .adding, token: false))
            } catch let error as APIError where events.count > 1 {
                throw APIError(error.status, reporting: error.code, "Event \(index): \(error.message)")
            }
        }
        guard let bundles = body.bundles, configuration.storesBundlesWithMembers else {
            return .json(AppendedEvents(appended: appended, threadCount: threadCount), status: 201)
        }
        // Checked against the roster after the events (their members are the recipients), made
        // by the caller, who signed the events.
        let stored =
            bundles.isEmpty
            ? 0
            : try storeKeys(wraps: [], bundles: bundles, space: space, member: try requireMember(principal))
        if threadCount != nil {
            appended = try counted(appended, of: events, bundles: bundles, space: space.id)
        }
        return .json(
            AppendedEvents(appended: appended, wrapsStored: stored, threadCount: threadCount), status: 201)
    }

    /// `appended` with the messages each new member's bundles open: what the thread list's
    /// counts told a sender that read it (its joiner's history hint), now that it need not.
    private func counted(
        _ appended: [AppendedEvent], of events: [MembershipEvent], bundles: [KeyWrapBundle], space: SpaceID
    ) throws -> [AppendedEvent] {
        var perThread: [ThreadID: Int] = [:]
        return try zip(appended, events).map { answer, event in
            guard case .memberAdded(let record) = event.change else { return answer }
            var messages = 0
            for bundle in bundles where bundle.recipient == record.id {
                for entry in bundle.entries {
                    if perThread[entry.thread] == nil {
                        perThread[entry.thread] = try store.messageCount(space: space, thread: entry.thread)
                    }
                    messages += perThread[entry.thread] ?? 0
                }
            }
            return answer.with(messages: messages)
        }
    }

    /// Checks `event` against the roster as the request has left it so far, stores and applies
    /// it. With `token`, an added member gets a first device token (labelled `label`).
    private func append(
        _ event: MembershipEvent, space: SpaceRow, principal: Principal, expect: ExpectedEvent,
        token issuing: Bool,
        label: String? = nil
    ) throws -> AppendedEvent {
        switch (expect, event.change) {
        case (.adding, .memberAdded), (.any, .memberAdded), (.any, .memberRemoved), (.any, .rightsChanged):
            break
        case (.adding, .memberRekeyed), (.any, .memberRekeyed), (.any, .memberRenamed): break
        case (.removing(let text), .memberRemoved(let id)):
            guard text == Substring(id.base64URL) else {
                throw APIError.badRequest(
                    .wrongContext, "The event removes a different member than the path names.")
            }
        case (.any, .spaceCreated):
            throw APIError.conflict(.spaceExists, "This space already exists.")
        default:
            throw APIError.badRequest(.invalidEvent, "This endpoint does not accept that kind of event.")
        }
        guard event.space == space.id else {
            throw APIError.badRequest(.wrongContext, "The event belongs to another space.")
        }
        if let member = principal.member, member.id != event.signer {
            throw APIError.forbidden(
                .signerMismatch, "A member may only submit events they signed themselves.")
        }
        let applied = try applyEvent(event, space: space.id)
        try store.insertEvent(
            space: space.id, sequence: event.sequence, hash: applied.head, json: try encodeEvent(event))
        var token: IssuedToken?
        var challenge: String?
        switch event.change {
        case .memberAdded(let record):
            try store.insertMember(record, space: space.id, sequence: event.sequence)
            try recordRetiredLinkSigner(event, retired: applied.retiredSigner)
            if issuing {
                token = try issueToken(space: space.id, member: record.id, label: label, expiresIn: nil)
            }
            // The new member's first sign-in challenge, which the attendant passes on in the
            // grant: the joiner then signs in without asking for one. An HMAC, nothing stored.
            challenge = freshChallenge(space: space.id, member: record.id).challenge
        case .memberRemoved(let id):
            try store.markRemoved(id, space: space.id, sequence: event.sequence)
            try store.revokeTokens(space: space.id, member: id, now: now)
        case .rightsChanged(let id, let rights):
            try store.setRights(rights, of: id, space: space.id)
        case .memberRekeyed(let old, let record):
            try applyRekey(old: old, record: record, space: space.id, sequence: event.sequence)
        case .spaceCreated, .memberRenamed:
            // A new name is sealed: the members table keeps none.
            break
        }
        pendingChanges.append(.membership(space: space.id, sequence: event.sequence))
        return AppendedEvent(
            sequence: event.sequence, hash: applied.head.description, deviceToken: token,
            signInChallenge: challenge)
    }

    /// Marks a link's signer removed when `event` spent its last use: the roster retired it
    /// without a removal event of its own.
    func recordRetiredLinkSigner(_ event: MembershipEvent, retired: Bool) throws {
        guard retired else { return }
        try store.markRemoved(event.signer, space: event.space, sequence: event.sequence)
    }

    // MARK: Tokens

    func listTokens(_ space: SpaceRow, principal: Principal) throws -> APIResponse {
        let rows = try store.tokens(space: space.id, member: principal.member?.id)
        return .json(
            TokenList(
                tokens: rows.map {
                    TokenInfo(
                        id: Base64URL.encode($0.id), member: $0.member, label: $0.label,
                        createdAt: $0.createdAt,
                        expiresAt: $0.expiresAt, revokedAt: $0.revokedAt)
                }))
    }

    func newToken(_ request: APIRequest, space: SpaceRow, principal: Principal) throws -> APIResponse {
        let member = try requireMember(principal)
        let body = try decode(TokenRequestBody.self, from: request)
        return .json(
            try issueToken(space: space.id, member: member.id, label: body.label, expiresIn: body.expiresIn),
            status: 201)
    }

    func revokeToken(_ text: Substring, space: SpaceRow, principal: Principal) throws -> APIResponse {
        let notFound = APIError.notFound(.unknownToken, "There is no such token.")
        // A member finds only their own tokens.
        guard let id = Base64URL.decode(String(text)),
            let token = try store.token(id: id, space: space.id, member: principal.member?.id)
        else {
            throw notFound
        }
        try store.revokeToken(token, now: now)
        return .json(Done(ok: true))
    }

    /// Writes nothing: the challenge carries its own proof of origin (``SignInChallenge``).
    /// Whether the member exists is left to the sign-in, which says so only to their key.
    func signInChallenge(_ request: APIRequest, space: SpaceRow) throws -> APIResponse {
        let body = try decode(ChallengeBody.self, from: request)
        return .json(freshChallenge(space: space.id, member: body.member), status: 201)
    }

    /// A new challenge for `member` (``SignInChallenge``). Not a secret: it is good only for a
    /// proof signed with that member's own key, sent to this server for this space, once; anyone
    /// may ask for one. So the answer to an admission may carry it through the attendant.
    func freshChallenge(space: SpaceID, member: MemberID) -> Challenge {
        let challenge = SignInChallenge(
            nonce: Self.randomBytes(SignInChallenge.nonceByteCount),
            expiresAt: now + configuration.challengeLifetime)
        let bytes = challenge.bytes(space: space, member: member, key: challengeKey)
        return Challenge(challenge: Base64URL.encode(bytes), expiresAt: challenge.expiresAt)
    }

    func signIn(_ request: APIRequest, space: SpaceRow) throws -> APIResponse {
        let body = try decode(SignInBody.self, from: request)
        let proof = body.proof
        guard proof.space == space.id else {
            throw APIError.badRequest(.wrongContext, "The proof is for another space.")
        }
        let invalid = APIError.unauthorised(
            .challengeInvalid, "That sign-in challenge is unknown, used or expired.")
        guard
            let challenge = SignInChallenge(
                checking: proof.challenge, space: space.id, member: proof.member, key: challengeKey),
            challenge.expiresAt >= max(now, usedChallengesClearedBefore)
        else {
            throw invalid
        }
        guard let member = try store.member(space: space.id, id: proof.member), member.removedSequence == nil
        else {
            throw APIError.forbidden(.notMember, "That member is not a member of this space.")
        }
        // An invite's signer exists only to admit the people who claim the invite.
        guard try !store.isInviteMember(space: space.id, member: proof.member) else {
            throw APIError.forbidden(.notMember, "That member is an invite, which cannot sign in.")
        }
        try check { () throws(KeyModelError) in try proof.verify(signingKey: member.record.keys.signing) }
        // Marked used in the transaction that stores the token: a replay finds it, a refused
        // or unsynced sign-in leaves it unused.
        guard try store.useChallenge(challenge) else { throw invalid }
        if now >= nextUsedChallengeCleanup {
            try store.deleteUsedChallenges(expiredBefore: now)
            usedChallengesClearedBefore = max(usedChallengesClearedBefore, now)
            nextUsedChallengeCleanup = now + configuration.challengeLifetime
        }
        let token = try issueToken(
            space: space.id, member: member.record.id, label: body.label, expiresIn: body.expiresIn)
        guard let sequence = body.eventAt else { return .json(token, status: 201) }
        // The event a joiner checks its grant against, with the token: what `GET …/events?from=
        // N&limit=1` would give it now, and the member is entitled to that (signed in, current).
        // A request fewer per join. None held there: the answer has no event.
        let stored = try store.events(space: space.id, from: sequence, limit: 1).first
        return APIResponse(status: 201, body: try SignedIn.body(token: token, storedEvent: stored))
    }
}

extension SpaceService {
    /// The checks a body's several-item form (`events`, `notes`) shares: not beside the one-item
    /// form, not empty, at most `limit` items (else 413 `tooMany`).
    func checkSeveral<Item>(
        _ items: [Item], alsoOne: Bool, field: String, limit: Int, tooMany: APIError.Code
    ) throws {
        guard !alsoOne else {
            throw APIError.badRequest(.invalidRequest, "Send either \(field) or \(field)s, not both.")
        }
        guard !items.isEmpty else {
            throw APIError.badRequest(.invalidField, "Field \(field)s must not be empty.")
        }
        guard items.count <= limit else {
            throw APIError(413, tooMany, "Send at most \(limit) \(field)s at once.")
        }
    }
}
