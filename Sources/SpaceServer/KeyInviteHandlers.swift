import CSodium
import Foundation
import SpaceModel

// Full-length invite links (`/api/key-invite…`, see API.md). The server files each invite under an
// id derived from the link's secret, holds its payload sealed under a key it never sees, and checks
// claims against a hash of the claim secret. The link's secret itself never reaches the server.
extension SpaceService {
    /// Largest sealed payload accepted, in bytes.
    static let maximumSealedInviteBytes = 16 * 1024
    /// Longest and default invite lifetime, in seconds.
    static let maximumInviteLifetime: Int64 = 90 * 24 * 3600
    /// Most uses of one invite.
    static let maximumInviteUses = 1000

    /// `/api/key-invite`, `/api/key-invite/{id}`, `/api/key-invite/{id}/claim`.
    func routeKeyInvite(_ request: APIRequest, _ rest: [Substring], method: String) throws -> APIResponse {
        switch rest.count {
        case 1:
            try allowKeyInvite(method, "POST")
            return try mintKeyInvite(request)
        case 2:
            try allowKeyInvite(method, "GET")
            return try showKeyInvite(try keyInviteRow(rest[1]))
        case 3 where rest[2] == "claim":
            try allowKeyInvite(method, "POST")
            return try claimKeyInvite(request, try keyInviteRow(rest[1]))
        case 3 where rest[1] == "stale":
            try allowKeyInvite(method, "GET")
            return try staleInviteSigners(request, rest[2])
        default:
            throw Self.unknownRoute
        }
    }

    private func allowKeyInvite(_ method: String, _ allowed: String) throws(APIError) {
        guard method == allowed else {
            throw APIError(405, .methodNotAllowed, "Use \(allowed) for this endpoint.")
        }
    }

    private func keyInviteRow(_ text: Substring) throws -> KeyInviteRow {
        guard let id = try? KeyInviteID(base64URL: String(text)), let row = try store.keyInvite(id) else {
            throw APIError.notFound(
                .unknownInvite,
                "There is no such invite on this server. Check the link, or ask for a new one.")
        }
        return row
    }

    /// An invite whose inviter has left or was removed is void: what they sealed is no longer
    /// theirs to give.
    private func checkInviter(_ row: KeyInviteRow) throws {
        guard row.shape != .setup, let inviter = row.inviter else { return }
        guard try roster(row.space).members[inviter] != nil else {
            throw APIError(
                410, .inviterRemoved, "The person who made this invite is no longer in the space.")
        }
    }

    /// Expired and used-up invites are refused with distinct codes (410).
    private func checkUsable(_ row: KeyInviteRow) throws(APIError) {
        guard now < row.expiresAt else {
            throw APIError(410, .inviteExpired, "This invite has expired. Ask for a new one.")
        }
        guard row.usesLeft > 0 else {
            throw APIError(
                410, .inviteUsed, "This invite has already been used. Invites work once: ask for a new one."
            )
        }
    }

    /// `GET /api/key-invite/stale/{space}` (members only): the signers of this space's member and
    /// DM invites that are still in the roster although their invite can no longer be claimed
    /// (expired, used up, or its inviter gone). Such a signer cannot act (it cannot sign in and its
    /// invite refuses claims), but only a signed removal takes it out of the roster: an admin's
    /// client retires them (`SpaceSession.retireStaleInviteSigners`).
    func staleInviteSigners(_ request: APIRequest, _ spaceText: Substring) throws -> APIResponse {
        let space = try existingSpace(spaceText)
        _ = try requireMember(try authenticate(request, space: space.id))
        let roster = try roster(space.id)
        let stale = try store.inviteSigners(space: space.id).filter { invite in
            guard roster.members[invite.signer] != nil else { return false }
            let inviterGone = invite.inviter.map { roster.members[$0] == nil } ?? false
            return now >= invite.expiresAt || invite.usesLeft <= 0 || inviterGone
        }
        return .json(KeyInviteWire.StaleSigners(members: stale.map(\.signer)))
    }

    // MARK: Mint

    func mintKeyInvite(_ request: APIRequest) throws -> APIResponse {
        let body = try decode(KeyInviteWire.MintRequest.self, from: request)
        let sealed = try bytes(body.sealed, field: "sealed")
        guard sealed.count >= 40, sealed.count <= Self.maximumSealedInviteBytes else {
            throw APIError.badRequest(
                .invalidField, "Field sealed must be 40 to \(Self.maximumSealedInviteBytes) bytes.")
        }
        let verifier = try bytes(body.verifier, field: "verifier")
        guard verifier.count == 32 else {
            throw APIError.badRequest(.invalidField, "Field verifier must be 32 bytes.")
        }
        guard body.expiresIn >= 60, body.expiresIn <= Self.maximumInviteLifetime else {
            throw APIError.badRequest(
                .invalidField,
                "Field expiresIn must be between 60 and \(Self.maximumInviteLifetime) seconds.")
        }
        let singleUse = body.shape == .setup || body.shape == .device || body.shape == .dm
        guard body.uses >= 1, body.uses <= (singleUse ? 1 : Self.maximumInviteUses) else {
            throw APIError.badRequest(
                .invalidField,
                singleUse
                    ? "Field uses must be 1 for a \(body.shape.rawValue) invite."
                    : "Field uses must be between 1 and \(Self.maximumInviteUses).")
        }
        if let name = body.personName { try checkName(name, field: "personName", allowEmpty: false) }
        let branding = try body.sealedBranding.map { text throws(APIError) in
            let data = try bytes(text, field: "sealedBranding")
            guard data.count <= 4096 else {
                throw APIError.badRequest(.invalidField, "Field sealedBranding is larger than 4096 bytes.")
            }
            return data
        }
        let names = try body.sealedNames.map { text throws(APIError) in
            let data = try bytes(text, field: "sealedNames")
            guard data.count <= 1024 else {
                throw APIError.badRequest(.invalidField, "Field sealedNames is larger than 1024 bytes.")
            }
            return data
        }
        guard try store.keyInvite(body.id) == nil else {
            throw APIError.conflict(.inviteExists, "An invite with that id already exists.")
        }
        var inviter: MemberID?
        var inviteMember: MemberID?
        var spaceName: String?
        let rights = body.rights ?? []
        switch body.shape {
        case .setup:
            try checkCreationToken(request)
            guard let name = body.spaceName else {
                throw APIError.badRequest(.missingField, "Field spaceName is missing.")
            }
            try checkName(name, field: "spaceName", allowEmpty: false)
            guard try store.space(body.space) == nil else {
                throw APIError.conflict(.spaceExists, "A space with that id already exists.")
            }
            spaceName = name
        case .member, .dm:
            let space = try existingSpace(Substring(body.space.base64URL))
            let member = try requireMember(try authenticate(request, space: space.id))
            let roster = try roster(space.id)
            let held = roster.rights(of: member.id)
            guard held.contains(.invite) || held.contains(.admin) else {
                throw APIError.forbidden(
                    .notAuthorised, "Only members with the invite right may invite people.")
            }
            guard held.contains(.admin) || held.isSuperset(of: rights) else {
                throw APIError.forbidden(
                    .notAuthorised, "An invite may not grant rights its inviter lacks.")
            }
            // The invite's signer: added now by the inviter, with the invite right and the rights
            // it will grant, so that whoever claims it can add themselves without the inviter online.
            // It carries the inviter's signed record of the uses, so every member's roster retires
            // it when they are spent, whatever this server stores.
            guard let event = body.inviteEvent, case .memberAdded(let record) = event.change,
                event.signer == member.id, record.rights == rights.union(.invite),
                let invite = event.invite, invite.inviter == member.id,
                invite.nameplate == SignedInvite.linkNameplate, invite.uses == body.uses
            else {
                throw APIError.badRequest(
                    .invalidEvent,
                    "Field inviteEvent must add the invite's signer with the invite right and the granted rights, "
                        + "signed by you, with your signed record of its uses.")
            }
            try appendVerifiedEvent(event, space: space.id)
            inviter = member.id
            inviteMember = record.id
        case .device:
            let space = try existingSpace(Substring(body.space.base64URL))
            inviter = try requireMember(try authenticate(request, space: space.id)).id
        }
        let expiresAt = now + body.expiresIn
        try store.forgetExpiredKeyInvitePayloads(now: now)
        try store.insertKeyInvite(
            KeyInviteRow(
                id: body.id, space: body.space, shape: body.shape, sealed: sealed, verifier: verifier,
                inviter: inviter, inviteMember: inviteMember, rights: rights, personName: body.personName,
                spaceName: spaceName, sealedBranding: branding, sealedNames: names, createdAt: now,
                expiresAt: expiresAt,
                usesLeft: body.uses))
        return .json(KeyInviteWire.Minted(id: body.id, expiresAt: expiresAt), status: 201)
    }

    /// Verifies a membership event against the roster, stores and applies it (no device token).
    private func appendVerifiedEvent(_ event: MembershipEvent, space: SpaceID) throws {
        guard event.space == space else {
            throw APIError.badRequest(.wrongContext, "The event belongs to another space.")
        }
        let applied = try applyEvent(event, space: space)
        try store.insertEvent(
            space: space, sequence: event.sequence, hash: applied.head, json: try encodeEvent(event))
        switch event.change {
        case .memberAdded(let record):
            try store.insertMember(record, space: space, sequence: event.sequence)
            try recordRetiredLinkSigner(event, retired: applied.retiredSigner)
        case .memberRemoved(let id):
            try store.markRemoved(id, space: space, sequence: event.sequence)
            try store.revokeTokens(space: space, member: id, now: now)
        case .rightsChanged(let id, let rights):
            try store.setRights(rights, of: id, space: space)
        case .memberRekeyed(let old, let record):
            try applyRekey(old: old, record: record, space: space, sequence: event.sequence)
        case .spaceCreated:
            throw APIError.badRequest(.invalidEvent, "A space is created only once.")
        case .memberRenamed:
            break
        }
        pendingChanges.append(.membership(space: space, sequence: event.sequence))
    }

    // MARK: Inspect

    func showKeyInvite(_ row: KeyInviteRow) throws -> APIResponse {
        try checkUsable(row)
        try checkInviter(row)
        var spaceName = row.spaceName ?? ""
        var avatar: String?
        var inviterName: String?
        var head: EventHead?
        if row.shape != .setup, let space = try store.space(row.space) {
            // A sealed invite shows its branding only to the link: no name or picture in clear.
            if row.sealedBranding == nil {
                spaceName = space.name
                avatar = space.avatarType == nil ? nil : "/api/server-avatar?space=\(space.id)"
            }
            let roster = try roster(space.id)
            // A name in clear only from spaces made before names were sealed (the sealed one,
            // opened on members' devices only, is empty here).
            if let inviter = row.inviter, let name = roster.everMember(inviter)?.name, !name.isEmpty {
                inviterName = name
            }
            head = EventHead(sequence: roster.nextSequence - 1, hash: roster.head.description)
        }
        return .json(
            KeyInviteWire.Invite(
                id: row.id, space: row.space, shape: row.shape, sealed: Base64URL.encode(row.sealed),
                spaceName: spaceName, avatar: avatar,
                sealedBranding: row.sealedBranding.map(Base64URL.encode),
                inviter: row.inviter, inviterName: inviterName, inviteMember: row.inviteMember,
                personName: row.personName, rights: row.rights, expiresAt: row.expiresAt,
                usesLeft: row.usesLeft,
                head: head,
                signerWraps: try row.inviteMember.map {
                    try store.wraps(space: row.space, recipient: $0, thread: nil)
                },
                retiredByLastUse: try row.inviteMember.map { try roster(row.space).isLinkSigner($0) },
                sealedNames: row.sealedNames.map(Base64URL.encode)))
    }

    // MARK: Claim

    func claimKeyInvite(_ request: APIRequest, _ row: KeyInviteRow) throws -> APIResponse {
        let body = try decode(KeyInviteWire.ClaimRequest.self, from: request)
        var secret = try bytes(body.claimSecret, field: "claimSecret")
        defer { sodium_memzero(&secret, secret.count) }
        let verifier = LinkKeys.verifier(of: secret)
        guard secret.count == 32, verifier.count == row.verifier.count,
            sodium_memcmp(verifier, row.verifier, verifier.count) == 0
        else {
            throw APIError.forbidden(
                .claimInvalid, "That is not the secret of this invite. Check the link.")
        }
        try checkUsable(row)
        try checkInviter(row)
        let claimed: KeyInviteWire.Claimed
        switch row.shape {
        case .setup:
            guard let genesis = body.genesis else {
                throw APIError.badRequest(.missingField, "Field genesis is missing.")
            }
            guard genesis.space == row.space else {
                throw APIError.badRequest(.wrongContext, "This invite sets up a different space.")
            }
            let created = try bootstrapSpace(
                name: row.spaceName ?? "", genesis: genesis, deviceLabel: body.deviceLabel)
            claimed = KeyInviteWire.Claimed(
                space: created.space, member: created.owner, shape: .setup, deviceToken: created.deviceToken,
                adminToken: created.adminToken)
        case .member, .dm:
            claimed = try claimMembership(body, row)
        case .device:
            guard let member = row.inviter, let record = try store.member(space: row.space, id: member),
                record.removedSequence == nil
            else {
                throw APIError.forbidden(
                    .notMember, "The member this device would join is no longer in the space.")
            }
            let token = try issueToken(
                space: row.space, member: member, label: body.deviceLabel, expiresIn: nil)
            claimed = KeyInviteWire.Claimed(
                space: row.space, member: member, shape: .device, deviceToken: token)
        }
        try store.useKeyInvite(row.id)
        return .json(claimed, status: 201)
    }

    /// A member or DM claim: the invite's signer adds the claimer (and, on the last use, removes
    /// itself); the claimer's own wraps of the invite's thread keys are stored.
    private func claimMembership(_ body: KeyInviteWire.ClaimRequest, _ row: KeyInviteRow) throws
        -> KeyInviteWire.Claimed
    {
        guard let inviteMember = row.inviteMember, try store.space(row.space) != nil else {
            throw APIError(500, .internal, "This invite is damaged.")
        }
        // Keys the claimer has not seen (a thread created since its GET) would never reach it.
        if let seen = body.signerThreads.map(Set.init) {
            let current = try store.wraps(space: row.space, recipient: inviteMember, thread: nil)
            guard current.allSatisfy({ seen.contains($0.thread) }) else {
                throw APIError.conflict(
                    .inviteKeysChanged, "A thread was created while you were joining: try again.")
            }
        }
        let events = body.events ?? []
        // A signer added with its uses is retired by the roster itself when they are spent.
        let retiresItself = try roster(row.space).isLinkSigner(inviteMember)
        let lastUse = row.usesLeft == 1 && !retiresItself
        guard events.count == (lastUse ? 2 : 1) else {
            throw APIError.badRequest(
                .invalidEvent,
                lastUse
                    ? "The last claim of an invite carries two events: adding you, then retiring the invite."
                    : "A claim carries one event: adding you.")
        }
        guard case .memberAdded(let record) = events[0].change, events[0].signer == inviteMember,
            record.rights == row.rights
        else {
            throw APIError.badRequest(
                .invalidEvent,
                "The first event must add you, signed by the invite, with the invite's rights.")
        }
        if lastUse {
            guard case .memberRemoved(let removed) = events[1].change, removed == inviteMember,
                events[1].signer == inviteMember
            else {
                throw APIError.badRequest(
                    .invalidEvent, "The second event must retire the invite's signer.")
            }
        }
        for event in events { try appendVerifiedEvent(event, space: row.space) }
        let wraps = body.wraps ?? []
        guard wraps.count <= configuration.maximumWrapsPerRequest else {
            throw APIError.badRequest(.invalidField, "Too many wraps in one request.")
        }
        let roster = try roster(row.space)
        for wrap in wraps {
            guard wrap.recipient == record.id, wrap.signer == record.keys.signing else {
                throw APIError.forbidden(
                    .signerMismatch, "A claim may only carry wraps from you to yourself.")
            }
            guard try store.thread(wrap.thread, space: row.space) != nil else {
                throw APIError.notFound(.unknownThread, "A wrap names a thread that is not in this space.")
            }
            try check { () throws(KeyModelError) in try wrap.verify(against: roster) }
            guard try !store.hasWrap(space: row.space, thread: wrap.thread, recipient: record.id) else {
                throw APIError.conflict(.wrapExists, "Two wraps for the same thread.")
            }
            try store.insertWrap(wrap, now: now)
            pendingChanges.append(.wraps(space: row.space, thread: wrap.thread))
        }
        let token = try issueToken(
            space: row.space, member: record.id, label: body.deviceLabel, expiresIn: nil)
        return KeyInviteWire.Claimed(
            space: row.space, member: record.id, shape: row.shape, deviceToken: token)
    }
}
