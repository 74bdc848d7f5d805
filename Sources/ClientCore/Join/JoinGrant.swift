import Foundation
import JoinProtocol
import PAKE
import SpaceModel

/// The grant of a join (`docs/join-protocol.md`, phase `grant`): everything the joiner needs to
/// open the space, verified on the joiner's device before anything is saved.
///
/// The joiner does not receive a bearer token unless the attendant chose to send one: by default
/// (`device_token` null) it signs in to the space server with its own device key.
///
/// Version 2 leaves the membership chain out (`roster` absent): the joiner fetches it from the
/// space server once signed in and verifies it from the owner's key, which it did anyway, so the
/// grant no longer grows with the space. Version 1 grants (with `roster`) are still accepted.
/// A version 2 grant with ``checkpoint`` and ``vouched`` spares the joiner the chain altogether:
/// it fetches and checks only its own event (``verify(identity:now:nameplate:vouchedEvent:)``).
public struct JoinGrant: Codable, Sendable, Equatable {
    /// Version 3 carries the thread keys as wrap bundles (``bundles``); a version 2 joiner,
    /// which would find no keys in it, refuses it and asks to be updated. A grant of single
    /// wraps alone is still version 2.
    public static let currentVersion = 3
    /// Version 4 is version 3 written smaller (``compact()``, `JoinGrantCodec.swift`): what the
    /// joiner has elsewhere in the grant is left out (each bundle's space and recipient, its
    /// signer when it is the attendant's vouched record, the invite's space, the inviter's key
    /// when its vouched record has it, the owner's key when it is the inviter's) and each
    /// bundle's boxes are one base64url text. An attendant sends it only to a joiner whose
    /// request says it reads it (``JoinRequest/grantVersion``): older joiners refuse version 4.
    public static let compactVersion = 4
    /// Version 5 is version 4 (either form) with ``signInChallenge``: the joiner signs in with
    /// it at once instead of asking the server for one. An attendant sends it only to a joiner
    /// whose request says it reads it: a version 4 joiner's reader refuses a compact grant with
    /// a key it does not know.
    public static let challengeVersion = 5
    /// The versions this device accepts.
    public static let acceptedVersions = 1...5

    public struct Space: Codable, Sendable, Equatable {
        public let server: String
        public let id: SpaceID
        public let name: String
    }

    public struct HistoryHint: Codable, Sendable, Equatable {
        public let threads: Int
        public let messages: Int

        public init(threads: Int, messages: Int) {
            self.threads = threads
            self.messages = messages
        }
    }

    public let v: Int
    public let space: Space
    /// The owner's signing key (base64url); the roster is verified from it.
    public let ownerSigningKey: String
    public let memberID: MemberID
    public let deviceToken: String?
    /// Single wraps, from attendants before version 3.
    public let wraps: [KeyWrap]
    /// The thread keys wrapped to the joiner in bundles (JSON `wrap_bundles`; version 3), one
    /// per at most ``SpaceSession/maximumBundleThreads`` threads.
    public let bundles: [KeyWrapBundle]?
    public let invite: SignedInvite
    /// The signed membership chain (version 1 only; version 2 joiners fetch it themselves).
    public let roster: [MembershipEvent]?
    public let historyHint: HistoryHint
    /// The attendant's word that it verified the chain from the owner's key through this event
    /// (the joiner's `member_added`): the joiner then checks that the server's chain reaches
    /// exactly this hash instead of every signature before it (``Roster/verify(events:ownerKey:vouchedThrough:)``).
    /// Absent in older grants, which the joiner verifies in full.
    public let checkpoint: ChainCheckpoint?
    /// The records of the members the grant relies on, as the attendant verified them through
    /// ``checkpoint`` (JSON `vouched_members`): the attendant, which signed the joiner's event
    /// and the wraps, and the inviter (one record when they are the same member), each with its
    /// rights. With them the joiner checks the server's event at the checkpoint alone instead of
    /// the chain. Absent in older grants (and ignored by older joiners, which verify the chain).
    public let vouched: [MemberRecord]?
    /// A sign-in challenge the space server issued for ``memberID`` when the attendant added
    /// it (JSON `sign_in_challenge`; version 5): the joiner signs it with its own key and signs
    /// in without asking for one (``open(identity:deviceLabel:now:nameplate:)``). Not a secret
    /// and no authority: the server takes it only with a proof signed by this member's key,
    /// for this space, once, before it expires, and gives one to anyone who asks; an attendant
    /// (or the relay, which cannot read the grant anyway) that altered or kept it back costs the
    /// joiner the request for a fresh one, nothing more.
    public let signInChallenge: String?

    /// The most records ``vouched`` may hold (an attendant sends two at most).
    public static let maximumVouched = 4

    enum CodingKeys: String, CodingKey {
        case v, space, wraps, invite, roster, checkpoint
        case vouched = "vouched_members"
        case bundles = "wrap_bundles"
        case ownerSigningKey = "owner_signing_key"
        case memberID = "member_id"
        case deviceToken = "device_token"
        case historyHint = "history_hint"
        case signInChallenge = "sign_in_challenge"
    }

    public init(
        space: Space, ownerSigningKey: String, memberID: MemberID, deviceToken: String?, wraps: [KeyWrap],
        bundles: [KeyWrapBundle]? = nil, invite: SignedInvite, roster: [MembershipEvent]? = nil,
        historyHint: HistoryHint, checkpoint: ChainCheckpoint? = nil, vouched: [MemberRecord]? = nil,
        signInChallenge: String? = nil
    ) {
        // A challenge alone changes no version: in version 3's form older joiners read it with
        // `JSONDecoder`, which skips the key; ``with(signInChallenge:)`` labels the grant 5.
        v = bundles == nil ? 2 : Self.currentVersion
        self.space = space
        self.ownerSigningKey = ownerSigningKey
        self.memberID = memberID
        self.deviceToken = deviceToken
        self.wraps = wraps
        self.bundles = bundles
        self.invite = invite
        self.roster = roster
        self.historyHint = historyHint
        self.checkpoint = checkpoint
        self.vouched = vouched
        self.signInChallenge = signInChallenge
    }

    /// The JSON object's UTF-8 bytes, as `JoinMessage.grant` carries them.
    public func encoded() -> [UInt8] {
        // A version 4 grant the compact form cannot carry (a text that needs an escape, a bundle
        // for another member) goes in version 3's form, still labelled 4: every joiner that reads
        // 4 reads that form too, and it decodes to this very grant.
        if v >= Self.compactVersion, let bytes = JoinGrantWriter.compactBytes(self) { return bytes }
        // The attendant's usual grant is written directly (the same bytes; see JoinGrantCodec).
        if let bytes = JoinGrantWriter.bytes(self) { return bytes }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { Array($0) } ?? []
    }

    /// Parses a grant object; any structural problem is a clear error.
    public init(decoding bytes: [UInt8]) throws(JoinGrantError) {
        struct Version: Decodable { let v: Int }
        // Decoded once (a grant carries every wrap); only a grant that fails is read again, for
        // the error that says why, as before: not an object with a version, an unsupported
        // version, or a bad field.
        // The usual form is read directly (see JoinGrantCodec); anything else as `JSONDecoder`
        // reads it.
        let grant: JoinGrant
        if let direct = JoinGrantReader.grant(bytes) {
            grant = direct
        } else {
            let data = Data(bytes)
            do {
                grant = try JSONDecoder().decode(JoinGrant.self, from: data)
            } catch {
                guard let version = try? JSONDecoder().decode(Version.self, from: data) else {
                    throw .invalid("it is not a grant object")
                }
                guard Self.acceptedVersions.contains(version.v) else {
                    throw .invalid("grant version \(version.v) is not supported; update eleven")
                }
                throw .invalid("a field is missing or malformed")
            }
        }
        guard Self.acceptedVersions.contains(grant.v) else {
            throw .invalid("grant version \(grant.v) is not supported; update eleven")
        }
        self = grant
        if v == 1 && roster == nil { throw .invalid("the member list is missing") }
    }

    /// What a verified grant proves.
    public struct Verified: Sendable {
        /// The members whose records the grant was checked against, by id. From a grant that
        /// vouches for its members (checked against this device's event alone): only this device
        /// (as its event lists it), the inviter and the attendant, as the attendant vouched for
        /// them. From older grants: every current member of the verified chain, those up to a
        /// ``checkpoint`` with keys as the attendant verified them. Not a roster to rely on: verify
        /// the chain afresh (``SpaceSession/roster()``) before sealing anything to anyone.
        public let members: [MemberID: MemberRecord]
        public let inviter: MemberRecord
        public let threadKeys: [ThreadID: ThreadKey]
    }

    /// Checks everything on this device, without any I/O: the membership chain (`events`, as
    /// fetched from the space server, or the grant's own `roster` in version 1) from the owner's
    /// key, this device's membership under `memberID` with exactly its keys, the inviter's signed
    /// record (signature, a current member with the right to add, the one who added us, not
    /// expired at `now`, for the nameplate we joined on when `nameplate` is given), and every
    /// thread-key wrap (signed by a member, addressed to us, opens).
    @discardableResult
    public func verify(
        identity: DeviceIdentity, now: Int64, nameplate: String? = nil, events: [MembershipEvent]? = nil
    ) throws(JoinGrantError) -> Verified {
        guard let chain = events ?? roster else { throw .invalid("the member list is missing") }
        let ownerKey = try checkGrant(nameplate: nameplate)
        let roster: Roster
        do throws(KeyModelError) {
            // A fetched chain up to the attendant's checkpoint is pinned by its hash; the grant's
            // own chain (version 1) is verified in full.
            if let checkpoint, let events {
                roster = try Roster.verify(events: events, ownerKey: ownerKey, vouchedThrough: checkpoint)
            } else {
                roster = try Roster.verify(events: chain, ownerKey: ownerKey)
            }
        } catch {
            throw .forged("the member list does not verify (\(error.message))")
        }
        guard roster.space == space.id, invite.space == space.id else {
            throw .forged("the member list or invite belongs to another space")
        }
        guard let me = roster.members[memberID], me.keys == identity.publicKeys else {
            throw .forged("the member list does not list this device")
        }
        let inviterKey = try invite.verifySignature()
        let inviter = try checkInviter(
            roster.currentMember(signingKey: inviterKey), rights: { roster.rights(of: $0.id) })
        let added = chain.first {
            switch $0.change {
            case .memberAdded(let record), .memberRekeyed(_, let record): return record.id == memberID
            default: return false
            }
        }
        try checkAdded(by: added, inviter: inviter, now: now)
        let keys = try openWraps(
            { wrap throws(KeyModelError) in try wrap.open(with: identity, verifyingAgainst: roster) },
            bundle: { bundle throws(KeyModelError) in
                try bundle.open(with: identity, verifyingAgainst: roster)
            })
        return Verified(members: roster.members.dictionary, inviter: inviter, threadKeys: keys)
    }

    /// Checks a grant that carries ``checkpoint`` and ``vouched`` against `event`, the space
    /// server's event at the checkpoint's sequence, without any I/O and without the rest of the
    /// chain (`docs/join-protocol.md`, "What the joiner verifies"): the event has exactly the
    /// checkpoint's hash; it adds (or re-keys to) `memberID` with exactly this device's keys; it
    /// is signed by a vouched member (whether the signer may add members is a chain rule the
    /// attendant checked, and the hash pins the event to that check); the inviter's signed
    /// record names a vouched member's key and that member may add members; that member made
    /// the event, or the event carries this very invite; the invite is not expired at `now` and
    /// is for `nameplate` when given; every wrap is addressed to us, signed by a vouched member
    /// and opens.
    @discardableResult
    public func verify(
        identity: DeviceIdentity, now: Int64, nameplate: String? = nil, vouchedEvent event: MembershipEvent
    ) throws(JoinGrantError) -> Verified {
        try verify(identity: identity, now: now, nameplate: nameplate, vouchedEvent: event, inviterKey: nil)
    }

    /// ``verify(identity:now:nameplate:vouchedEvent:)``, with the invite record's key as its
    /// signature was already checked (`inviterKey`), or nil to check it here.
    func verify(
        identity: DeviceIdentity, now: Int64, nameplate: String?, vouchedEvent event: MembershipEvent,
        inviterKey checkedKey: SigningPublicKey?
    ) throws(JoinGrantError) -> Verified {
        guard let checkpoint, let vouched else { throw .invalid("the grant vouches for no members") }
        _ = try checkGrant(nameplate: nameplate)
        guard vouched.count <= Self.maximumVouched else {
            throw .invalid("the grant vouches for too many members")
        }
        var members: [MemberID: MemberRecord] = [:]
        var signers: [SigningPublicKey: MemberRecord] = [:]
        for record in vouched {
            guard record.id != memberID, record.keys.signing != identity.publicKeys.signing,
                members.updateValue(record, forKey: record.id) == nil,
                signers.updateValue(record, forKey: record.keys.signing) == nil
            else { throw .invalid("the grant vouches for a member twice, or for this device") }
        }
        // The hash covers everything the event says (its space, sequence, predecessor, change,
        // signer, invite and signature): this is the very event the attendant verified.
        guard event.sequence == checkpoint.sequence, event.hash == checkpoint.hash else {
            throw .forged("the space server's member list differs from the one the attendant vouched for")
        }
        guard event.space == space.id, invite.space == space.id else {
            throw .forged("the member list or invite belongs to another space")
        }
        let me: MemberRecord
        switch event.change {
        case .memberAdded(let record), .memberRekeyed(_, let record): me = record
        default: throw .forged("the member list does not list this device")
        }
        guard me.id == memberID, me.keys == identity.publicKeys else {
            throw .forged("the member list does not list this device")
        }
        guard let signer = members[event.signer],
            signer.keys.signing.isValidSignature(event.signature, for: event.signedBytes)
        else {
            throw .forged(
                "this device's membership event is not signed by a member the attendant vouched for")
        }
        let inviterKey: SigningPublicKey
        if let checkedKey { inviterKey = checkedKey } else { inviterKey = try invite.verifySignature() }
        let inviter = try checkInviter(
            members[invite.inviter].flatMap { $0.keys.signing == inviterKey ? $0 : nil }, rights: \.rights)
        try checkAdded(by: event, inviter: inviter, now: now)
        // A wrap or bundle signed by a vouched member, whose signature verifies.
        func checkVouched(_ signer: SigningPublicKey, _ signatureVerifies: Bool) throws(KeyModelError) {
            guard signers[signer] != nil else {
                throw KeyModelError(
                    .signerNotMember, "This key wrap was signed by someone the attendant did not vouch for.")
            }
            guard signatureVerifies else {
                throw KeyModelError(.badSignature, "This key wrap's signature does not verify.")
            }
        }
        let keys = try openWraps(
            { wrap throws(KeyModelError) in
                try checkVouched(wrap.signer, wrap.hasValidSignature)
                return try wrap.open(with: identity)
            },
            bundle: { bundle throws(KeyModelError) in
                try checkVouched(bundle.signer, bundle.hasValidSignature)
                return try bundle.open(with: identity)
            })
        members[me.id] = me
        return Verified(members: members, inviter: inviter, threadKeys: keys)
    }

    /// What both ways of verifying check first: the version, the nameplate, the owner's key
    /// (returned).
    private func checkGrant(nameplate: String?) throws(JoinGrantError) -> SigningPublicKey {
        guard Self.acceptedVersions.contains(v) else { throw .invalid("grant version \(v) is not supported") }
        if let nameplate, nameplate != invite.nameplate {
            throw .forged("the invite record is for another code")
        }
        guard let ownerBytes = Base64URL.decode(ownerSigningKey),
            let ownerKey = try? SigningPublicKey(bytes: ownerBytes)
        else { throw .invalid("the owner's key is malformed") }
        return ownerKey
    }

    /// The inviter (the member whose key signed the invite record, nil if none) may add members.
    private func checkInviter(_ inviter: MemberRecord?, rights: (MemberRecord) -> MemberRights)
        throws(JoinGrantError) -> MemberRecord
    {
        guard let inviter, inviter.id == invite.inviter else {
            throw .forged("the inviter is not a current member")
        }
        let held = rights(inviter)
        guard held.contains(.admin) || held.contains(.invite) else {
            throw .forged("\(inviter.name.isEmpty ? "the inviter" : inviter.name) may not add members")
        }
        return inviter
    }

    /// This device was added (`added`, the event that made it a member) by the inviter, or by an
    /// attendant (the space's bot) carrying this very invite; and the invite had not expired.
    private func checkAdded(by added: MembershipEvent?, inviter: MemberRecord, now: Int64)
        throws(JoinGrantError)
    {
        guard let added, added.signer == inviter.id || added.invite == invite else {
            throw .forged("this device was not added by the inviter")
        }
        guard now <= invite.expiresAt else { throw .forged("the invite had expired") }
    }

    /// Opens every wrap with `open` and every bundle with `openBundle`, which check the signer;
    /// each must be for us in this space, and a thread's key comes once.
    private func openWraps(
        _ open: (KeyWrap) throws(KeyModelError) -> ThreadKey,
        bundle openBundle: (KeyWrapBundle) throws(KeyModelError) -> [ThreadID: ThreadKey]
    ) throws(JoinGrantError) -> [ThreadID: ThreadKey] {
        var keys: [ThreadID: ThreadKey] = [:]
        func take(
            _ recipient: MemberID, _ space: SpaceID,
            _ opened: () throws(KeyModelError) -> [ThreadID: ThreadKey]
        )
            throws(JoinGrantError)
        {
            guard recipient == memberID, space == self.space.id else {
                throw .forged("a thread key is addressed to someone else")
            }
            let received: [ThreadID: ThreadKey]
            do throws(KeyModelError) {
                received = try opened()
            } catch {
                throw .forged("a thread key does not verify (\(error.message))")
            }
            for (thread, key) in received {
                guard keys.updateValue(key, forKey: thread) == nil else {
                    throw .forged("a thread's key comes twice")
                }
            }
        }
        for wrap in wraps {
            try take(wrap.recipient, wrap.space) { () throws(KeyModelError) in try [wrap.thread: open(wrap)] }
        }
        for bundle in bundles ?? [] {
            try take(bundle.recipient, bundle.space) { () throws(KeyModelError) in try openBundle(bundle) }
        }
        return keys
    }

    /// Signs in to the space server with this device's key (unless a token came with the grant),
    /// fetches this device's event or the member list, verifies the grant against it (see
    /// ``verify(identity:now:nameplate:vouchedEvent:)`` and ``verify(identity:now:nameplate:events:)``),
    /// and only then saves the space atomically in `state`. Returns what was saved.
    public func accept(
        identity: DeviceIdentity, state: LocalState, deviceLabel: String?, now: Int64,
        nameplate: String? = nil
    ) throws -> (saved: SavedSpace, verified: Verified) {
        let (saved, verified) = try open(
            identity: identity, deviceLabel: deviceLabel, now: now, nameplate: nameplate)
        try state.updateSpaces { $0.save(saved) }
        return (saved, verified)
    }

    /// ``accept(identity:state:deviceLabel:now:nameplate:)`` without saving: signs in, fetches
    /// this device's event at the checkpoint (a grant that vouches for its members; whatever the
    /// size of the space) or else the server's member list, and verifies against it; returns
    /// what to save (the bot keeps it elsewhere). The event comes with the sign-in's answer, and
    /// with the grant's ``signInChallenge`` the sign-in needs no challenge first: one request in
    /// all (older servers and attendants: up to three, as before).
    public func open(identity: DeviceIdentity, deviceLabel: String?, now: Int64, nameplate: String? = nil)
        throws -> (saved: SavedSpace, verified: Verified)
    {
        // What needs no server first: a wrong code or a forged invite stops before any request.
        if let nameplate, nameplate != invite.nameplate {
            throw JoinGrantError.forged("the invite record is for another code")
        }
        let inviterKey = try invite.verifySignature()
        var client = try SpaceClient(server: space.server)
        // The event at the checkpoint is all a grant that vouches for its members is checked
        // against: asked for with the sign-in.
        let wanted = roster == nil && vouched != nil ? checkpoint : nil
        // What came with the sign-in (nil from an older server: then fetched on its own).
        var signedInEvent: MembershipEvent?
        if let deviceToken {
            client.token = deviceToken
        } else {
            // With the grant's challenge, one request in all (else a fresh challenge first).
            let signedIn = try client.signIn(
                space.id, as: memberID, identity: identity, label: deviceLabel, challenge: signInChallenge,
                eventAt: wanted?.sequence)
            client.token = signedIn.token
            signedInEvent = signedIn.event
        }
        let verified: Verified
        if let checkpoint = wanted {
            // The server's event at the attendant's checkpoint: it must be exactly the one the
            // attendant vouched for (signing in showed the server registered this device). The
            // one the sign-in answered with is checked exactly as a fetched one.
            guard let event = try signedInEvent ?? client.event(space.id, at: checkpoint.sequence) else {
                throw JoinGrantError.forged("the space server does not hold this device's membership event")
            }
            verified = try verify(
                identity: identity, now: now, nameplate: nameplate, vouchedEvent: event,
                inviterKey: inviterKey)
        } else {
            // The server's chain, verified from the owner's key: it must list this device (a
            // version 1 grant's own chain is checked against it too).
            let events = try checkpoint != nil ? client.vouchedEvents(space.id) : client.events(space.id)
            if roster != nil { try verify(identity: identity, now: now, nameplate: nameplate) }
            verified = try verify(identity: identity, now: now, nameplate: nameplate, events: events)
        }
        let saved = SavedSpace(
            space: space.id, name: space.name, server: client.server, member: memberID,
            ownerSigningKey: ownerSigningKey, deviceToken: client.token ?? "")
        return (saved, verified)
    }
}

extension SpaceSession {
    /// The attendant's side of a grant: registers the joiner on the space server with the keys
    /// from `request` (a signed membership event by this device), wraps to them the key of every
    /// thread of the whole space this device holds (never a direct conversation; see
    /// ``ThreadMetadata``), and assembles the grant. `invite` is this device's signed record.
    ///
    /// With `readmit`, the joiner replaces that member (a new identity; see
    /// ``readmit(_:keys:name:)``).
    ///
    /// An attendant that is not the inviter (the space's bot) passes `carryInvite`: the
    /// `member_added` event then carries `invite`, and a joiner it already added with this
    /// invite (a bot restarted mid-join) is answered again instead of added twice.
    ///
    /// With `rosters` the chain is not read and verified afresh each time: the joiner's event is
    /// signed onto the chain as last verified and the chain is read again only when the server
    /// refuses it because the chain moved on. An attendant admitting several joiners at once
    /// passes one `admissions` queue for all of them: it keeps the chain in order and adds those
    /// who arrive together in one request, while their keys are wrapped in parallel. `keys` saves
    /// opening every thread key each time.
    public func admit(
        request: JoinRequest, invite: SignedInvite, carryInvite: Bool = false, rosters: RosterCache? = nil,
        admissions: AdmissionQueue? = nil, keys cachedKeys: ThreadKeyCache? = nil, readmit: MemberID? = nil
    ) throws(SpaceClientError) -> (grant: JoinGrant, member: MemberRecord) {
        let keys: MemberPublicKeys
        do throws(KeyModelError) {
            keys = try request.publicKeys.keys()
        } catch {
            throw SpaceClientError(
                .rejected, code: "invalid_request",
                message: "The joiner sent unusable keys (\(error.message)).")
        }
        // The chain's events only where they are searched (nil: not held): the cache appends
        // in place while nobody else holds its array.
        var events: [MembershipEvent]?
        var roster: Roster
        // What the cache holds may be stale: a plain addition is signed onto it anyway (the
        // queue reads the chain again if the server refuses), anything else reads it first.
        var fresh = true
        if let rosters, readmit == nil, let cached = rosters.latest {
            roster = cached
            fresh = false
        } else if let rosters {
            (events, roster) = try rosters.refresh(self)
        } else {
            (events, roster) = try verifiedChain()
        }
        // A member holding the joiner's keys already (keys are unique among current members).
        func holder() -> MemberRecord? {
            roster.currentMember(signingKey: keys.signing).flatMap { $0.keys == keys ? $0 : nil }
        }
        // Every `member_added` leaves its record, keys unchanged, among the current or former
        // members: only when one holds these keys can the chain hold an earlier addition, and
        // only then is it searched.
        func mayBeKnown() -> Bool {
            holder() != nil || (carryInvite && roster.formerMembers.contains { $0.value.keys == keys })
        }
        if !fresh && mayBeKnown(), let rosters {
            // Possibly known, in what may be stale: decide on the chain as it is now.
            (events, roster) = try rosters.refresh(self)
        }
        // This device's earlier addition of the joiner with this invite, or a member holding
        // their keys already.
        let earlier =
            carryInvite && mayBeKnown()
            ? events?.last { event in
                guard case .memberAdded(let added) = event.change else { return false }
                return added.keys == keys && event.invite == invite
            } : nil
        let alreadyMember = holder()
        // The thread list first: it gives the history hint and tells the key cache whether a
        // thread is new (else the wraps it opened before are current); with the keys, it gives
        // the names thread the joiner's name is sealed under. With the key cache, admissions
        // that run at once share one request that started after each of them did; a plain
        // addition reuses the list of the last one instead, and sends its length with the
        // event for the server to check (a thread created since refuses it, and the keys are
        // chosen again on the list read then).
        var threadList: [SpaceWire.ThreadInfo]?
        // The list was held, not read for this admission: only the server's check makes it current.
        var reused = false
        if let cachedKeys {
            let reuse = rosters != nil && readmit == nil && earlier == nil && alreadyMember == nil
            if let listed = try? cachedKeys.admissionThreads(self, reuse: reuse) {
                (threadList, reused) = listed
            }
        } else {
            threadList = try? client.threads(saved.space)
        }
        var heldKeys =
            if let cachedKeys {
                try cachedKeys.refresh(self, roster: roster, threads: threadList?.map(\.id))
            } else {
                try threadKeys(roster: roster)
            }
        let record: MemberRecord
        // The event that adds the joiner, when made here (else found in `events`).
        var addition: MembershipEvent?
        // The names thread the joiner's name is sealed under: made just now when the space had
        // none, so not among `heldKeys` yet.
        var madeNames: (thread: ThreadID, key: ThreadKey)?
        // The server's sign-in challenge for the joiner, from its answer to the admission.
        var challenge: String?
        // The keys the joiner gets, and their bundles when made before the admission (sent with
        // its event).
        var threadKeys: [ThreadID: ThreadKey] = [:]
        var carried: [KeyWrapBundle]?
        // The server stored the bundles with the event, having checked the list's length (then
        // with the messages the joiner's threads hold).
        var wrapsStored = false
        var threadsChecked = false
        var answeredMessages: Int?
        if let earlier, case .memberAdded(let added) = earlier.change {
            guard roster.members[added.id] != nil else {
                throw SpaceClientError(
                    .refused, code: "not_member", message: "The joiner was removed from the space meanwhile.")
            }
            record = added
        } else if let readmit {
            // The event only: the thread keys are wrapped below, with everyone else's.
            record = try rekey(readmit, keys: keys, name: request.displayName).record
            (events, roster) = try verifiedChain()
        } else {
            if let alreadyMember {
                throw SpaceClientError(
                    .rejected, code: "already_member",
                    message: "That key already belongs to \(Self.label(alreadyMember)) in \(saved.name).")
            }
            let names = try namesThread(roster: roster, threadKeys: heldKeys, threads: threadList)
            madeNames = names
            // Made just now (the list does not hold it): the list is not the space's any more.
            let namesMade = threadList?.contains { $0.id == names.thread } != true
            if namesMade { cachedKeys?.forgetThreads() }
            record = sealedRecord(keys: keys, rights: [], name: request.displayName, names: names)
            if let rosters {
                // The bundles ride with the event (one request fewer per join): chosen on the
                // roster the joiner is admitted on, as for every admission of a cached roster,
                // not on the one after (which adds the joiner, and what others added meanwhile).
                for attempt in 1... {
                    threadKeys = shared(heldKeys, threadList, roster, madeNames)
                    let made = wrapBundles(threadKeys, for: record)
                    // Not when the names thread was made just now: the list does not hold it.
                    let threadCount = cachedKeys != nil && !namesMade ? threadList?.count : nil
                    do throws(SpaceClientError) {
                        let added = try (admissions ?? AdmissionQueue()).add(
                            record, invite: carryInvite ? invite : nil, bundles: made,
                            threadCount: threadCount,
                            session: self, rosters: rosters)
                        (addition, roster, wrapsStored, carried, challenge) = (
                            added.event, added.roster, added.wrapsStored, made, added.signInChallenge
                        )
                        (threadsChecked, answeredMessages) = (added.threadsChecked, added.messages)
                        if added.wrapsStored, threadCount != nil, let threadList {
                            cachedKeys?.admitted(on: threadList, checked: added.threadsChecked)
                        }
                        break
                    } catch  where error.typedCode == .threadsChanged && attempt < Self.threadListAttempts {
                        // A thread was created since the list was read: nothing was stored;
                        // choose the keys again on the list as it is now.
                        guard let cachedKeys else { throw error }
                        cachedKeys.forgetThreads()
                        (threadList, reused) =
                            (try? cachedKeys.admissionThreads(self, reuse: false)) ?? (nil, false)
                        heldKeys = try cachedKeys.refresh(
                            self, roster: roster, threads: threadList?.map(\.id))
                    }
                }
                if reused && !threadsChecked, let cachedKeys {
                    // The held list went unchecked (a server from before, or these bundles were
                    // sent apart): read it now, and give the joiner the keys it adds.
                    cachedKeys.forgetThreads()
                    threadList = try? cachedKeys.admissionThreads(self, reuse: false).threads
                    heldKeys = try cachedKeys.refresh(self, roster: roster, threads: threadList?.map(\.id))
                    // Not stored: chosen again below and posted. Stored: the keys of threads
                    // created since go in bundles of their own.
                    let missing = shared(heldKeys, threadList, roster, madeNames).filter {
                        threadKeys[$0.key] == nil
                    }
                    if !wrapsStored {
                        carried = nil
                    } else if !missing.isEmpty {
                        let more = wrapBundles(missing, for: record)
                        try client.postWraps(saved.space, bundles: more)
                        threadKeys.merge(missing) { held, _ in held }
                        carried = (carried ?? []) + more
                    }
                }
            } else {
                let event = try signed { () throws(KeyModelError) in
                    try roster.nextEvent(
                        .memberAdded(record), signedBy: identity, invite: carryInvite ? invite : nil)
                }
                challenge = try client.addMember(saved.space, event: event).signInChallenge
                try signed { () throws(KeyModelError) in try roster.apply(event) }
                addition = event
            }
        }
        if carried == nil {
            // A re-admitted member gets back what this device holds.
            threadKeys = readmit != nil ? heldKeys : shared(heldKeys, threadList, roster, madeNames)
        }
        let bundles = carried ?? wrapBundles(threadKeys, for: record)
        if earlier != nil {
            // A resumed admission may have stopped before posting its bundles (each is stored
            // whole or not at all; one stored before is refused as `wrap_exists`).
            for bundle in bundles { try? client.postWraps(saved.space, bundles: [bundle]) }
        }
        // The history hint counts what the server holds in the threads the joiner gets keys to
        // (one request; reading every message just to count them cost more than the join), the
        // names thread aside: it holds no messages.
        let messages =
            answeredMessages
            ?? (threadList ?? []).reduce(0) { total, info in
                total + (threadKeys[info.id] != nil ? info.messages ?? 0 : 0)
            }
        let namesThread =
            madeNames?.thread ?? Self.namesThread(heldKeys, threads: threadList, roster: roster)?.thread
        let hintedThreads = threadKeys.keys.filter { $0 != namesThread }.count
        // Every thread's key in one request (one commit on the server) up to 1,000 threads,
        // unless they came with the event.
        if earlier == nil && !wrapsStored {
            for start in stride(from: 0, to: bundles.count, by: 2) {
                try client.postWraps(
                    saved.space, bundles: Array(bundles[start..<min(start + 2, bundles.count)]))
            }
        }
        // The records the joiner checks its event, the invite and the wraps against, from the
        // roster verified through that event: this device's own (it signed the event and every
        // wrap) and the inviter's. Without both the joiner verifies the chain (and refuses).
        let vouched: [MemberRecord]? =
            if let me = roster.currentMember(signingKey: identity.publicKeys.signing),
                let inviter = roster.members[invite.inviter]
            {
                (me.id == inviter.id ? [me] : [me, inviter]).map {
                    $0.with(rights: roster.rights(of: $0.id))
                }
            } else {
                nil
            }
        let grant = JoinGrant(
            space: .init(server: saved.server, id: saved.space, name: saved.name),
            ownerSigningKey: saved.ownerSigningKey, memberID: record.id, deviceToken: nil, wraps: [],
            bundles: bundles, invite: invite, historyHint: .init(threads: hintedThreads, messages: messages),
            checkpoint: (addition ?? events?.last(where: { $0.change.adds(record.id) })).map(
                ChainCheckpoint.init),
            vouched: vouched)
        // The smaller form only to a joiner that says it reads it: the relay stores the grant
        // and wipes it again, page by page (docs/bot.md, "Session 13").
        let reads = request.grantVersion ?? JoinGrant.currentVersion
        let sent = reads >= JoinGrant.compactVersion ? grant.compact() : grant
        // The challenge only to a joiner that reads it (version 5; see ``JoinGrant/challengeVersion``).
        guard let challenge, reads >= JoinGrant.challengeVersion else { return (sent, record) }
        return (sent.with(signInChallenge: challenge), record)
    }

    /// How many times an admission chooses its keys on a thread list that the server then finds
    /// stale (`threads_changed`) before it gives up: each time, a thread was created meanwhile.
    static let threadListAttempts = 3

    /// The most threads one wrap bundle holds (the server takes at most 1,000 keys per request).
    public static let maximumBundleThreads = 500

    /// Of `held`, the keys a new member is given: the whole space's threads only, never a direct
    /// conversation or a thread for a set of members (as its creator sealed into its metadata);
    /// and the names thread made for it (`madeNames`), not among `held` yet.
    private func shared(
        _ held: [ThreadID: ThreadKey], _ threads: [SpaceWire.ThreadInfo]?, _ roster: Roster,
        _ madeNames: (thread: ThreadID, key: ThreadKey)?
    ) -> [ThreadID: ThreadKey] {
        var keys = Self.sharedThreadKeys(held, threads: threads, roster: roster)
        if let madeNames { keys[madeNames.thread] = madeNames.key }
        return keys
    }

    /// `keys` wrapped to `record`: one bundle (one ephemeral key, one signature) per at most
    /// ``maximumBundleThreads`` threads, where a wrap per thread cost a sealed box and a
    /// signature each.
    private func wrapBundles(_ keys: [ThreadID: ThreadKey], for record: MemberRecord) -> [KeyWrapBundle] {
        let sorted = keys.sorted { $0.key < $1.key }
        return stride(from: 0, to: sorted.count, by: Self.maximumBundleThreads).compactMap { start in
            identity.wrapBundle(
                Dictionary(
                    uniqueKeysWithValues: sorted[start..<min(start + Self.maximumBundleThreads, sorted.count)]
                        .map {
                            ($0.key, $0.value)
                        }),
                for: record, in: saved.space)
        }
    }

    /// The server refused an event because it does not follow the server's chain (sequence
    /// taken or previous hash not its head): the chain moved on since it was read.
    static func chainMoved(_ error: SpaceClientError) -> Bool {
        error.status == 409
            && (error.typedCode == .eventOutOfOrder || error.typedCode == .eventChainBroken)
    }
}
