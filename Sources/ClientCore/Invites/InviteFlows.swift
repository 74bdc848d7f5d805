import Foundation
import PAKE
import SpaceModel

/// How an invite is minted.
public struct InviteOptions: Sendable {
    /// The invited person's name: it fills the link's name slot and is suggested when they join.
    public var personName: String?
    /// How many people may claim a member invite (other shapes are single-use).
    public var uses = 1
    /// Seconds until the invite expires.
    public var expiresIn: Int64 = 7 * 24 * 3600
    /// Rights the joiner gets (at most the inviter's own, unless the inviter is an admin).
    public var rights: MemberRights = []
    /// Seal the space's branding: the link gets a third slot with the key that reveals the name.
    public var sealedBranding = false

    public init(
        personName: String? = nil, uses: Int = 1, expiresIn: Int64 = 7 * 24 * 3600, rights: MemberRights = [],
        sealedBranding: Bool = false
    ) {
        self.personName = personName
        self.uses = uses
        self.expiresIn = expiresIn
        self.rights = rights
        self.sealedBranding = sealedBranding
    }
}

/// The welcome card of an invite, read without consuming anything: what the person is invited
/// to, by whom, and until when. Names come from the server (or, for sealed spaces, from the
/// link's branding key); they are checked against the signed roster only once joined.
public struct InviteCard: Sendable, Equatable {
    public let server: String
    public let space: SpaceID
    public let spaceName: String
    /// The avatar's path on ``server``, if the space has one.
    public let avatar: String?
    /// The name suggested for the joiner (the link's name slot, or the inviter's choice).
    public let suggestedName: String?
    public let inviter: MemberID?
    public let inviterName: String?
    public let shape: InviteShape
    /// Unix time in seconds.
    public let expiresAt: Int64
    public let usesLeft: Int
    /// Whether the name came from the link's branding key (a sealed space).
    public let isSealed: Bool
}

extension InviteCard {
    /// The saved space this invite leads to, if this device has it already: joining again would
    /// change nothing, so say so instead of claiming.
    public func alreadySaved(in spaces: SavedSpaces) -> SavedSpace? {
        spaces.spaces.first { $0.space == space }
    }
}

/// What claiming an invite gave this device.
public struct ClaimedInvite: Sendable {
    /// What to save in the spaces list.
    public let saved: SavedSpace
    /// The identity that acts in the space: the joiner's own (setup, member, DM) or the adopted
    /// one (device). Store it; without it the space cannot be read.
    public let identity: DeviceIdentity
    public let shape: InviteShape
    /// Where the joiner lands: the DM thread, or the space's first thread.
    public let thread: ThreadID?
}

extension InviteLink {
    // MARK: Mint

    /// Mints a member, DM or add-device invite in the space of `session` and returns the link to
    /// share. A member or DM invite needs the invite right; a DM invite makes a new thread with the
    /// inviter; a device invite carries this device's identity.
    public static func mint(
        _ shape: InviteShape, from session: SpaceSession, options: InviteOptions = InviteOptions()
    ) throws(SpaceClientError) -> InviteLink {
        guard shape != .setup else {
            throw SpaceClientError(
                .rejected, code: "invalid_shape",
                message: "A setup invite is minted with mintSetup(server:…).")
        }
        let saved = session.saved
        let roster = try session.roster()
        let secret = LinkSecret.random()
        let keys = secret.derive()
        let ownerKey: SigningPublicKey
        do throws(LocalStateError) {
            ownerKey = try saved.ownerKey()
        } catch {
            throw SpaceClientError(.verification, code: error.code.rawValue, message: error.message)
        }
        var payload = InvitePayload(shape: shape, space: saved.space, ownerSigningKey: ownerKey)
        var inviteEvent: MembershipEvent?
        switch shape {
        case .member, .dm:
            let held = roster.rights(of: saved.member)
            guard held.contains(.invite) || held.contains(.admin) else {
                throw SpaceClientError(
                    .refused, code: "not_authorised",
                    message: "You may not invite people to \(saved.name): ask an admin for the invite right.")
            }
            let heldKeys = try session.threadKeys(roster: roster)
            let threadList = try session.client.threads(saved.space)
            // Every link carries the names thread's key, a direct conversation's included: the
            // joiner seals their own name with it and reads everyone's.
            let names = try session.namesThread(roster: roster, threadKeys: heldKeys, threads: threadList)
            // The invite's signer's id, which stands for whoever claims the link.
            let signerID = MemberID.random()
            if shape == .dm {
                let thread = ThreadID.random()
                let key = ThreadKey.random()
                guard let me = roster.members[saved.member] else {
                    throw SpaceClientError(
                        .refused, code: "not_member", message: "You are not a member of \(saved.name).")
                }
                let title = options.personName.map { "\(SpaceSession.label(me)) & \($0)" } ?? "direct"
                // For the two of them only: no attendant hands its key to a later joiner, and
                // whoever writes after someone left continues it for the two (`members`).
                let metadata = ThreadMetadata(
                    name: title, audience: .members, keyMadeAt: roster.nextSequence,
                    members: [saved.member, signerID]
                ).sealed(
                    by: session.identity, key: key, space: saved.space, thread: thread, author: saved.member)
                try session.client.createThread(
                    saved.space, thread: thread,
                    wraps: [session.identity.wrap(key, for: me, in: saved.space, thread: thread)],
                    metadata: metadata)
                // Every names thread, so that names sealed under an earlier one open too.
                let allNames = SpaceSession.namesThreads(heldKeys, threads: threadList, roster: roster)
                    .map { ($0.thread, $0.key) }.filter { $0.0 != names.thread }
                payload.threads = [(thread, key)] + allNames + [names]
            } else {
                // The whole space's threads only: never a direct conversation.
                let shared = SpaceSession.sharedThreadKeys(heldKeys, threads: threadList, roster: roster)
                    .filter { $0.key != names.thread }
                let ordered: [(ThreadID, ThreadKey)] = shared.sorted { $0.key < $1.key }
                    .prefix(InvitePayload.maximumThreads - 1).map { ($0.key, $0.value) }
                payload.threads = ordered + [names]
            }
            payload.namesThread = names.thread
            // The invite's signer: admitted now, it admits whoever claims the link.
            // The inviter's signed record of its uses and expiry goes with it: every member's
            // roster retires it when the uses are spent, and the inviter's devices when it expires
            // (``SpaceSession/retireStaleInviteSigners()``), so the key in the link is worth
            // nothing afterwards, even to a server that stores what it likes.
            let signer = DeviceIdentity.generate()
            let record = MemberRecord(
                id: signerID, keys: signer.publicKeys, rights: options.rights.union(.invite),
                name: SpaceSession.inviteSignerName)
            let now = Int64(Date().timeIntervalSince1970)
            let uses = shape == .member ? options.uses : 1
            let delegation = session.identity.signInvite(
                space: saved.space, inviter: saved.member, nameplate: SignedInvite.linkNameplate,
                createdAt: now,
                expiresAt: now + options.expiresIn, uses: uses)
            do throws(KeyModelError) {
                inviteEvent = try roster.nextEvent(
                    .memberAdded(record), signedBy: session.identity, invite: delegation)
            } catch {
                throw SpaceClientError(.verification, code: error.code.rawValue, message: error.message)
            }
            payload.member = record.id
            payload.identity = signer
        case .device:
            payload.member = saved.member
            payload.identity = session.identity
        case .setup:
            break
        }
        // A sealed space's server knows no name (an empty one): its links carry the name sealed.
        var spaceIsSealed = false
        if shape != .device { spaceIsSealed = try session.client.spaceInfo(saved.space).name.isEmpty }
        let brandingKey = options.sealedBranding || spaceIsSealed ? BrandingKey.random() : nil
        let inviterName = roster.members[saved.member]?.name ?? ""
        let names = InviteNames(person: options.personName, inviter: inviterName.isEmpty ? nil : inviterName)
        _ = try session.client.mintKeyInvite(
            KeyInviteWire.MintRequest(
                id: keys.id, space: saved.space, shape: shape,
                sealed: Base64URL.encode(payload.seal(id: keys.id, wrapKey: keys.wrapKey)),
                verifier: Base64URL.encode(keys.verifier), expiresIn: options.expiresIn,
                uses: shape == .member ? options.uses : 1,
                rights: shape == .device ? nil : options.rights, inviteEvent: inviteEvent,
                sealedBranding: brandingKey.map {
                    Base64URL.encode(SealedBranding.seal(saved.name, key: $0, id: keys.id))
                },
                sealedNames: Base64URL.encode(names.sealed(with: keys))))
        return InviteLink(
            server: session.client.server, name: options.personName ?? saved.name, secret: secret,
            brandingKey: brandingKey)
    }

    /// Mints a setup invite: whoever claims it first creates the space named `spaceName` on
    /// `server` as its owner. Needs the server's creation token when it has one.
    public static func mintSetup(
        server: String, spaceName: String, creationToken: String? = nil,
        options: InviteOptions = InviteOptions()
    ) throws(SpaceClientError) -> InviteLink {
        let client = try SpaceClient(server: server, token: creationToken)
        let secret = LinkSecret.random()
        let keys = secret.derive()
        let space = SpaceID.random()
        let payload = InvitePayload(shape: .setup, space: space)
        _ = try client.mintKeyInvite(
            KeyInviteWire.MintRequest(
                id: keys.id, space: space, shape: .setup,
                sealed: Base64URL.encode(payload.seal(id: keys.id, wrapKey: keys.wrapKey)),
                verifier: Base64URL.encode(keys.verifier), expiresIn: options.expiresIn, uses: 1,
                spaceName: spaceName,
                sealedNames: Base64URL.encode(
                    InviteNames(person: options.personName, inviter: nil).sealed(with: keys))))
        return InviteLink(server: client.server, name: options.personName ?? spaceName, secret: secret)
    }

    // MARK: Inspect

    /// The space's name as the link shows it: opened with the link's branding key when the
    /// invite is sealed (its server then shows no name in clear), else the server's.
    func branding(of invite: KeyInviteWire.Invite, id: KeyInviteID) -> (name: String, sealed: Bool) {
        if let brandingKey, let text = invite.sealedBranding, let bytes = Base64URL.decode(text),
            let name = SealedBranding.open(bytes, key: brandingKey, id: id)
        {
            return (name, true)
        }
        return (invite.spaceName, false)
    }

    /// The names sealed into the invite for the link's holder (``InviteNames``), else those an
    /// older client sent in clear.
    func names(of invite: KeyInviteWire.Invite, _ keys: LinkKeys) -> InviteNames {
        if let text = invite.sealedNames, let box = Base64URL.decode(text),
            let names = InviteNames.open(box, with: keys)
        {
            return names
        }
        return InviteNames(person: invite.personName, inviter: invite.inviterName)
    }

    /// Reads the invite's card from its server without consuming it. Fails when the link does not
    /// open the invite (a changed link), or with the server's `invite_expired` / `invite_used`.
    public func inspect() throws(SpaceClientError) -> InviteCard {
        let keys = secret.derive()
        let invite = try fetch(keys)
        let (spaceName, sealed) = branding(of: invite, id: keys.id)
        let names = names(of: invite, keys)
        return InviteCard(
            server: server, space: invite.space, spaceName: spaceName, avatar: invite.avatar,
            // The name slot holds the space's name when no person was named: not a name to suggest.
            suggestedName: names.person
                ?? name.flatMap { $0 == invite.spaceName || $0 == spaceName ? nil : $0 },
            inviter: invite.inviter,
            inviterName: names.inviter ?? invite.inviterName,
            shape: invite.shape, expiresAt: invite.expiresAt, usesLeft: invite.usesLeft, isSealed: sealed)
    }

    /// The invite, checked to open with this link's key.
    private func fetch(_ keys: LinkKeys) throws(SpaceClientError) -> KeyInviteWire.Invite {
        let invite = try SpaceClient(server: server).keyInvite(keys.id)
        guard invite.id == keys.id else {
            throw InvitePayload.unreadable("the server answered for another invite")
        }
        _ = try payload(of: invite, keys)
        return invite
    }

    private func payload(of invite: KeyInviteWire.Invite, _ keys: LinkKeys) throws(SpaceClientError)
        -> InvitePayload
    {
        guard let sealed = Base64URL.decode(invite.sealed) else {
            throw InvitePayload.unreadable("it is not base64url")
        }
        return try InvitePayload.open(
            sealed, id: keys.id, shape: invite.shape, space: invite.space, wrapKey: keys.wrapKey)
    }

    // MARK: Claim

    /// Claims the invite: the deferred, explicit step after ``inspect()``.
    /// - setup: creates the space with `identity` as owner and makes its first thread;
    /// - member / DM: adds `identity` as a new member named `name` (default: the suggested name),
    ///   wrapping the invite's thread keys to itself;
    /// - device: adopts the member identity in the invite (`identity` is not used).
    /// Everything the server answers is verified against the signed roster before returning.
    public func claim(
        identity: DeviceIdentity = .generate(), name: String? = nil, deviceLabel: String? = nil
    ) throws(SpaceClientError) -> ClaimedInvite {
        let keys = secret.derive()
        let client = try SpaceClient(server: server)
        var attempt = 0
        while true {
            attempt += 1
            let invite = try client.keyInvite(keys.id)
            let payload = try payload(of: invite, keys)
            do throws(SpaceClientError) {
                return try claim(
                    invite, payload, keys, client, identity: identity, name: name, deviceLabel: deviceLabel)
            } catch {
                // Another claim of a multi-use invite moved the roster on, or a thread was created
                // meanwhile: build on the new head with the new keys.
                let retried = ["event_out_of_order", "event_chain_broken", "invite_keys_changed"]
                guard attempt < 4, retried.contains(error.code) else {
                    throw error
                }
            }
        }
    }

    private func claim(
        _ invite: KeyInviteWire.Invite, _ payload: InvitePayload, _ keys: LinkKeys, _ client: SpaceClient,
        identity: DeviceIdentity, name: String?, deviceLabel: String?
    ) throws(SpaceClientError) -> ClaimedInvite {
        let claimSecret = keys.claimSecret.withUnsafeBytes { Base64URL.encode($0) }
        switch invite.shape {
        case .setup:
            let owner = MemberID.random()
            let names = (thread: ThreadID.random(), key: ThreadKey.random())
            let genesis = identity.createSpace(
                invite.space, as: owner,
                ownerSealedName: SealedName.seal(
                    name ?? "", key: names.key, space: invite.space, thread: names.thread, member: owner))
            let claimed = try client.claimKeyInvite(
                keys.id,
                KeyInviteWire.ClaimRequest(
                    claimSecret: claimSecret, genesis: genesis, deviceLabel: deviceLabel))
            let saved = SavedSpace(
                space: claimed.space, name: invite.spaceName, server: server, member: claimed.member,
                ownerSigningKey: identity.publicKeys.signing.description,
                deviceToken: claimed.deviceToken.token,
                adminToken: claimed.adminToken)
            let thread = try SpaceSession(saved: saved, identity: identity).startThreads(names: names)
            return ClaimedInvite(saved: saved, identity: identity, shape: .setup, thread: thread)
        case .member, .dm:
            guard let signer = payload.identity, let signerID = payload.member, let head = invite.head,
                let hashBytes = Base64URL.decode(head.hash), let previous = try? EventHash(bytes: hashBytes),
                head.sequence < UInt64.max - 2
            else { throw InvitePayload.unreadable("it lacks the invite's signer or the space's state") }
            let chosen = name ?? names(of: invite, keys).person ?? self.name ?? ""
            let id = MemberID.random()
            // Sealed under the names thread the link carries; a link minted before names were
            // sealed carries none, and the name goes in clear as it always did.
            let record = MemberRecord(
                id: id, keys: identity.publicKeys, rights: invite.rights, name: chosen,
                sealedName: payload.names.map {
                    SealedName.seal(chosen, key: $0.key, space: invite.space, thread: $0.thread, member: id)
                })
            let added = MembershipEvent.make(
                space: invite.space, sequence: head.sequence + 1, previous: previous,
                change: .memberAdded(record),
                signer: signerID, identity: signer)
            var events = [added]
            if invite.usesLeft == 1, invite.retiredByLastUse != true {
                events.append(
                    MembershipEvent.make(
                        space: invite.space, sequence: head.sequence + 2, previous: added.hash,
                        change: .memberRemoved(signerID), signer: signerID, identity: signer))
            }
            let (threadKeys, fromSigner) = Self.threadKeys(
                invite, payload, signer: signer, signerID: signerID)
            let wraps = threadKeys.map { thread, key in
                identity.wrap(key, for: record, in: invite.space, thread: thread)
            }
            let claimed = try client.claimKeyInvite(
                keys.id,
                KeyInviteWire.ClaimRequest(
                    claimSecret: claimSecret, events: events, wraps: wraps, deviceLabel: deviceLabel,
                    signerThreads: (invite.signerWraps ?? []).map(\.thread)))
            let saved = try verifiedSave(
                invite, payload, member: record.id, identity: identity, claimed: claimed,
                signerWraps: fromSigner)
            return ClaimedInvite(
                saved: saved, identity: identity, shape: invite.shape,
                thread: payload.threads.first { $0.0 != payload.namesThread }?.0)
        case .device:
            guard let adopted = payload.identity, let member = payload.member else {
                throw InvitePayload.unreadable("it lacks the identity to adopt")
            }
            let claimed = try client.claimKeyInvite(
                keys.id, KeyInviteWire.ClaimRequest(claimSecret: claimSecret, deviceLabel: deviceLabel))
            let saved = try verifiedSave(invite, payload, member: member, identity: adopted, claimed: claimed)
            return ClaimedInvite(saved: saved, identity: adopted, shape: .device, thread: nil)
        }
    }

    /// The thread keys a member or DM claim passes on to the joiner: those sealed into the payload
    /// when the link was minted, then those of threads created since, which members wrapped to the
    /// invite's signer like to any other member (the payload only bootstraps; later keys arrive
    /// the way they reach every member). A wrap whose signature fails or that does not open is
    /// skipped; who signed the ones used is checked against the verified roster after claiming.
    static func threadKeys(
        _ invite: KeyInviteWire.Invite, _ payload: InvitePayload, signer: DeviceIdentity, signerID: MemberID
    ) -> (keys: [(ThreadID, ThreadKey)], fromSigner: [KeyWrap]) {
        var keys = payload.threads
        var seen = Set(keys.map(\.0))
        var fromSigner: [KeyWrap] = []
        for wrap in invite.signerWraps ?? []
        where wrap.space == invite.space && wrap.recipient == signerID && !seen.contains(wrap.thread)
            && keys.count < maximumClaimWraps
        {
            guard wrap.hasValidSignature, let key = try? wrap.open(with: signer) else { continue }
            seen.insert(wrap.thread)
            keys.append((wrap.thread, key))
            fromSigner.append(wrap)
        }
        return (keys, fromSigner)
    }

    /// The most key wraps one claim carries (the server's default limit per request).
    static let maximumClaimWraps = 1000

    /// The space to save, once the roster (verified from the owner key the inviter sealed into the
    /// payload) lists `member` with `identity`'s keys, and every key passed on from the invite's
    /// signer was wrapped by someone who is or was a member.
    private func verifiedSave(
        _ invite: KeyInviteWire.Invite, _ payload: InvitePayload, member: MemberID, identity: DeviceIdentity,
        claimed: KeyInviteWire.Claimed, signerWraps: [KeyWrap] = []
    ) throws(SpaceClientError) -> SavedSpace {
        let spaceName = branding(of: invite, id: invite.id).name
        guard claimed.space == invite.space, claimed.member == member, let ownerKey = payload.ownerSigningKey
        else {
            throw SpaceClientError(
                .verification, code: "invalid_response",
                message: "\(server) answered the claim for someone else.")
        }
        let saved = SavedSpace(
            space: invite.space, name: spaceName, server: server, member: member,
            ownerSigningKey: ownerKey.description, deviceToken: claimed.deviceToken.token)
        let roster = try SpaceSession(saved: saved, identity: identity).roster()
        guard roster.members[member]?.keys == identity.publicKeys else {
            throw SpaceClientError(
                .verification, code: "not_member",
                message: "The member list of \(spaceName) does not list this device after joining.")
        }
        let everyone = Array(roster.members.values) + Array(roster.formerMembers.values)
        for wrap in signerWraps where !everyone.contains(where: { $0.keys.signing == wrap.signer }) {
            throw SpaceClientError(
                .verification, code: "signer_not_member",
                message: "A thread key of \(spaceName) was wrapped by someone who was never a member.")
        }
        return saved
    }
}

extension SpaceSession {
    /// The roster name of a member or DM invite's signer.
    public static let inviteSignerName = "(invite)"

    /// Retires the signers of this space's member and DM invites that can no longer be claimed.
    /// A link's signer is retired by the claim that spends its last use; one whose link expired
    /// (by the expiry its inviter signed into the roster, never the server's word) or whose inviter
    /// left stays until its inviter's or an admin's device removes it with a signed event: this
    /// does that, whenever such a device reads the space. Signers from before links carried their
    /// uses are known only from the server's list and an admin retires them (a lying server can at
    /// worst void invites early). Returns who was retired.
    @discardableResult
    public func retireStaleInviteSigners(now: Int64 = Int64(Date().timeIntervalSince1970))
        throws(SpaceClientError) -> [MemberID]
    {
        let roster = try roster()
        let isAdmin = roster.rights(of: saved.member).contains(.admin)
        var stale: [MemberID] = []
        for (id, delegation) in roster.delegations where roster.members[id] != nil {
            let mine = isAdmin || delegation.inviter == saved.member
            let inviterGone = roster.members[delegation.inviter] == nil
            if mine && (now >= delegation.expiresAt || (isAdmin && inviterGone)) { stale.append(id) }
        }
        stale.sort()
        if isAdmin {
            stale += try client.staleInviteSigners(saved.space).filter { id in
                guard let record = roster.members[id] else { return false }
                return !roster.isLinkSigner(id) && record.name == Self.inviteSignerName && id != roster.owner
                    && id != saved.member
            }
        }
        for id in stale { try removeMember(id) }
        return stale
    }
}
