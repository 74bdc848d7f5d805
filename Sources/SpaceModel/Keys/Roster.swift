/// A space's membership as proven by its signed event chain.
///
/// A roster only comes into being by verifying events: from the owner's key forward
/// (``verify(events:ownerKey:)``) on a client, or from the self-signed first event
/// (``init(genesis:)``) on a server that then checks each new event with ``apply(_:)``.
/// Rules: only the owner, admins and members with the invite right add members, granting at most
/// their own rights (the owner and admins may grant any); only the owner and admins remove
/// members, except that a member may remove themselves (leave); nobody removes the owner; only
/// the owner and admins change a member's rights. A `member_added` that carries an invite record
/// must carry one its inviter signed while a current member entitled to add members.
///
/// A `member_added` signed by the very inviter its invite record names, for the nameplate
/// ``SignedInvite/linkNameplate``, adds a full-length link's signer (a ``Delegation``): it may add at most the record's `uses` members, granting at most its
/// rights without the invite right, and sign nothing else but its own removal; it is retired by
/// the event that spends its last use, and its inviter or an admin may retire it sooner (on
/// expiry). Its key travels in the link, so these rules are what bounds a link holder who keeps
/// it, even with the server's help (`docs/threat-model.md`, "Links after use and expiry").
public struct Roster: Sendable, Equatable {
    public let space: SpaceID
    public private(set) var owner: MemberID
    /// Current members, the owner included.
    /// A ``SharedTable``, as are the former members and the signing keys: an event applied to a
    /// roster others hold copies what it changes, not the whole space.
    public private(set) var members: SharedTable<MemberID, MemberRecord>
    /// Members who were removed (their past messages still verify).
    public private(set) var formerMembers: SharedTable<MemberID, MemberRecord>
    /// Members re-admitted with a new identity: new member id to the id they had before.
    public private(set) var newIdentities: [MemberID: MemberID] = [:]
    /// The sequence of the event that made each former member one (removed, left, re-keyed
    /// away): a thread key made before it is known to them (`docs/key-model.md`).
    public private(set) var removedAt: [MemberID: UInt64] = [:]
    /// Link signers by member id, current and retired (``Delegation``).
    public private(set) var delegations: [MemberID: Delegation] = [:]
    /// Who claimed each link: the members a link's signer added, by the signer's id.
    public private(set) var admittedBy: [MemberID: [MemberID]] = [:]
    /// Hash of the last event applied.
    public private(set) var head: EventHash
    /// The sequence number the next event must carry.
    public private(set) var nextSequence: UInt64
    /// Current members by signing key, kept with `members` (keys are unique among current
    /// members), so finding a signer is a lookup rather than a scan of the whole space.
    private var bySigningKey: SharedTable<SigningPublicKey, MemberID> = [:]

    /// Verifies a whole event chain, starting with the first event, which must be signed by
    /// `ownerKey` (the key the client already trusts as the space's owner).
    public static func verify(events: [MembershipEvent], ownerKey: SigningPublicKey) throws(KeyModelError)
        -> Roster
    {
        guard let first = events.first else {
            throw KeyModelError(.invalidEvent, "There are no membership events to verify.")
        }
        guard case .spaceCreated(let owner) = first.change, owner.keys.signing == ownerKey else {
            throw KeyModelError(.ownerKeyMismatch, "This space was not created by the expected owner.")
        }
        var roster = try Roster(genesis: first)
        for event in events.dropFirst() {
            try roster.apply(event)
        }
        return roster
    }

    /// Starts a roster from a space's first event, checking that it is well formed and signed by
    /// the owner it names. Whoever trusts the result trusts that owner.
    public init(genesis event: MembershipEvent) throws(KeyModelError) {
        guard event.sequence == 0 else {
            throw KeyModelError(.eventOutOfOrder, "The first membership event must have sequence 0.")
        }
        guard event.previous == .genesis else {
            throw KeyModelError(.eventChainBroken, "The first membership event must not name a predecessor.")
        }
        guard case .spaceCreated(let owner) = event.change else {
            throw KeyModelError(.invalidEvent, "The first membership event must create the space.")
        }
        guard event.signer == owner.id else {
            throw KeyModelError(.notAuthorised, "A space can only be created by its owner.")
        }
        try Self.checkRecord(owner)
        guard owner.keys.signing.isValidSignature(event.signature, for: event.signedBytes) else {
            throw KeyModelError(.badSignature, "The space's first event is not signed by its owner.")
        }
        space = event.space
        self.owner = owner.id
        members = [owner.id: owner.with(rights: .all)]
        bySigningKey = [owner.keys.signing: owner.id]
        formerMembers = [:]
        head = event.hash
        nextSequence = 1
    }

    /// Checks `event` against this roster and applies it. On error the roster is unchanged.
    public mutating func apply(_ event: MembershipEvent) throws(KeyModelError) {
        try apply(event, verifyingSignatures: true)
    }

    /// ``apply(_:)``; without `verifyingSignatures` every rule is checked except the event's and
    /// its invite record's signatures, for a prefix pinned by a checkpoint hash a trusted party
    /// vouched for (``verify(events:ownerKey:vouchedThrough:)``).
    mutating func apply(_ event: MembershipEvent, verifyingSignatures: Bool) throws(KeyModelError) {
        try apply(event, checks: verifyingSignatures ? .all : .none)
    }

    /// Which signatures ``apply(_:checks:)`` verifies: what this process made or verified already
    /// is not verified again; every rule is checked whatever this says.
    package struct SignatureChecks: Sendable {
        /// The event's own signature: not for one this device has just signed.
        var event: Bool
        /// The invite record's, through `memo` when given.
        var invite: Bool
        var memo: SignatureMemo?

        static let all = SignatureChecks(event: true, invite: true)
        /// Within a prefix pinned by a checkpoint a trusted party vouched for.
        static let none = SignatureChecks(event: false, invite: false)

        /// An event this device has just signed (``nextEvent(_:signedBy:invite:)``): its invite
        /// record, when it carries one, through `memo`.
        package static func signedHere(memo: SignatureMemo?) -> SignatureChecks {
            SignatureChecks(event: false, invite: true, memo: memo)
        }
    }

    private mutating func apply(_ event: MembershipEvent, checks: SignatureChecks) throws(KeyModelError) {
        guard event.space == space else {
            throw KeyModelError(.wrongContext, "This membership event belongs to another space.")
        }
        guard event.sequence == nextSequence else {
            throw KeyModelError(
                .eventOutOfOrder,
                "Expected membership event \(nextSequence), got \(event.sequence) (reordered or replayed).")
        }
        guard event.previous == head else {
            throw KeyModelError(.eventChainBroken, "This membership event does not follow the previous one.")
        }
        guard let signer = members[event.signer] else {
            throw KeyModelError(
                .signerNotMember, "This membership event is signed by someone who is not a member.")
        }
        // Built once: the signature is over these bytes and the new head is their hash.
        let signed = event.signedBytes
        guard !checks.event || signer.keys.signing.isValidSignature(event.signature, for: signed)
        else {
            throw KeyModelError(.badSignature, "This membership event's signature does not verify.")
        }
        let signerRights = rights(of: signer.id)
        if event.invite != nil {
            guard case .memberAdded = event.change else {
                throw KeyModelError(.invalidEvent, "Only a member_added event may carry an invite record.")
            }
        }
        if let delegation = delegations[signer.id] {
            try applyDelegated(event, signed: signed, signer: signer, delegation: delegation)
            return
        }
        switch event.change {
        case .spaceCreated:
            throw KeyModelError(.invalidEvent, "A space can only be created once.")
        case .rightsChanged(let id, let rights):
            guard signerRights.contains(.admin) else {
                throw KeyModelError(.notAuthorised, "\(Self.label(signer)) may not change members' rights.")
            }
            guard id != owner else {
                throw KeyModelError(.notAuthorised, "The owner's rights cannot be changed.")
            }
            guard let record = members[id] else {
                throw KeyModelError(.invalidEvent, "Member \(id) is not a current member.")
            }
            guard MemberRights.all.isSuperset(of: rights) else {
                throw KeyModelError(
                    .invalidEvent, "A member record grants rights this version does not know.")
            }
            members[id] = record.with(rights: rights)
        case .memberAdded(let record):
            guard signerRights.contains(.admin) || signerRights.contains(.invite) else {
                throw KeyModelError(.notAuthorised, "\(Self.label(signer)) may not add members.")
            }
            guard signerRights.contains(.admin) || signerRights.isSuperset(of: record.rights) else {
                throw KeyModelError(.notAuthorised, "\(Self.label(signer)) may not grant rights they lack.")
            }
            try checkNewcomer(record)
            if let invite = event.invite {
                try checkInvite(invite, verifyingSignature: checks.invite, memo: checks.memo)
                if invite.inviter == signer.id, invite.nameplate == SignedInvite.linkNameplate {
                    guard invite.uses >= 1 else {
                        throw KeyModelError(.invalidEvent, "A link's signer must have at least one use.")
                    }
                    delegations[record.id] = Delegation(
                        inviter: signer.id, usesLeft: invite.uses, expiresAt: invite.expiresAt)
                }
            }
            members[record.id] = record
            bySigningKey[record.keys.signing] = record.id
        case .memberRemoved(let id):
            // Admins remove anyone; any member may leave (how an invite's signer retires itself);
            // an inviter may retire the signer of their own link (when it expires unused).
            guard signerRights.contains(.admin) || id == signer.id || delegations[id]?.inviter == signer.id
            else {
                throw KeyModelError(.notAuthorised, "\(Self.label(signer)) may not remove members.")
            }
            guard id != owner else {
                throw KeyModelError(.notAuthorised, "The owner cannot be removed from their space.")
            }
            try retire(id)
        case .memberRekeyed(let old, let record):
            try applyRekey(old: old, record: record, signer: signer)
        case .memberRenamed(let id, let sealed):
            // A member names themselves; an admin may correct anyone's name but the owner's.
            guard id == signer.id || (signerRights.contains(.admin) && id != owner) else {
                throw KeyModelError(.notAuthorised, "\(Self.label(signer)) may not rename that member.")
            }
            guard let record = members[id] else {
                throw KeyModelError(.invalidEvent, "Member \(id) is not a current member.")
            }
            members[id] = MemberRecord(id: id, keys: record.keys, rights: record.rights, sealedName: sealed)
        }
        head = event.hash(signedBytes: signed)
        nextSequence += 1
    }

    /// Checks a record about to join: well formed, with an id never used in this space and a
    /// signing key no current member uses.
    private func checkNewcomer(_ record: MemberRecord) throws(KeyModelError) {
        try Self.checkRecord(record)
        guard members[record.id] == nil, formerMembers[record.id] == nil else {
            throw KeyModelError(.invalidEvent, "Member id \(record.id) is already taken in this space.")
        }
        guard currentMember(signingKey: record.keys.signing) == nil else {
            throw KeyModelError(.invalidEvent, "A current member already uses that signing key.")
        }
    }

    /// Moves a current member to the former members.
    private mutating func retire(_ id: MemberID) throws(KeyModelError) {
        guard let removed = members.removeValue(forKey: id) else {
            throw KeyModelError(.invalidEvent, "Member \(id) is not a current member.")
        }
        bySigningKey[removed.keys.signing] = nil
        formerMembers[id] = removed
        removedAt[id] = nextSequence
    }

    /// An event signed by a link's signer: adding one claimer per use (the last use retires the
    /// signer in the same event), or retiring itself. Anything else is refused, so whoever keeps
    /// the link's key can do no more than the link allowed, in any order a server chooses.
    private mutating func applyDelegated(
        _ event: MembershipEvent, signed: [UInt8], signer: MemberRecord, delegation: Delegation
    )
        throws(KeyModelError)
    {
        switch event.change {
        case .memberAdded(let record):
            guard event.invite == nil, delegation.usesLeft > 0 else {
                throw KeyModelError(.notAuthorised, "This invite link has been used up.")
            }
            // What an inviter who left sealed into a link is no longer theirs to give.
            guard members[delegation.inviter] != nil else {
                throw KeyModelError(
                    .notAuthorised, "The person who made this invite link is no longer in the space.")
            }
            guard signer.rights.subtracting(.invite).isSuperset(of: record.rights) else {
                throw KeyModelError(.notAuthorised, "An invite link may not grant rights it was not given.")
            }
            try checkNewcomer(record)
            members[record.id] = record
            bySigningKey[record.keys.signing] = record.id
            delegations[signer.id]?.usesLeft -= 1
            admittedBy[signer.id, default: []].append(record.id)
            if delegation.usesLeft == 1 { try retire(signer.id) }
        case .memberRemoved(let id) where id == signer.id:
            try retire(id)
        default:
            throw KeyModelError(
                .notAuthorised, "An invite link's signer may only add the people who claim it.")
        }
        head = event.hash(signedBytes: signed)
        nextSequence += 1
    }

    /// Re-admission rules: the owner, admins and inviters may re-key a member (an inviter only one
    /// whose rights they hold); only another admin may re-key the owner. A member may also move
    /// themselves to a new identity (signed with the old one): what a person's remaining device
    /// does when another device, which holds the same identity, is removed (`docs/key-model.md`).
    /// The new identity keeps the member's rights and name slot; the old one becomes a former member.
    private mutating func applyRekey(old: MemberID, record: MemberRecord, signer: MemberRecord)
        throws(KeyModelError)
    {
        let signerRights = rights(of: signer.id)
        guard let previous = members[old] else {
            throw KeyModelError(.invalidEvent, "Member \(old) is not a current member.")
        }
        if signer.id == old {
            // Moving oneself: nothing is granted that was not held.
        } else if old == owner {
            guard signerRights.contains(.admin) else {
                throw KeyModelError(.notAuthorised, "Only another admin may re-admit the owner.")
            }
        } else {
            guard signerRights.contains(.admin) || signerRights.contains(.invite) else {
                throw KeyModelError(.notAuthorised, "\(Self.label(signer)) may not re-admit members.")
            }
            guard signerRights.contains(.admin) || signerRights.isSuperset(of: previous.rights) else {
                throw KeyModelError(.notAuthorised, "\(Self.label(signer)) may not grant rights they lack.")
            }
        }
        guard record.rights == rights(of: old) else {
            throw KeyModelError(.invalidEvent, "A re-admitted member keeps exactly the rights they had.")
        }
        try checkNewcomer(record)
        members.removeValue(forKey: old)
        bySigningKey[previous.keys.signing] = nil
        formerMembers[old] = previous
        removedAt[old] = nextSequence
        members[record.id] = record
        bySigningKey[record.keys.signing] = record.id
        newIdentities[record.id] = old
        if old == owner { owner = record.id }
    }

    /// A copy with `event` applied.
    public func applying(_ event: MembershipEvent) throws(KeyModelError) -> Roster {
        var copy = self
        try copy.apply(event)
        return copy
    }

    /// ``apply(_:)`` in place, returning what ``undo(_:)`` needs to put the roster back as it
    /// was. A holder that may have to take an event back (a server whose transaction rolls back)
    /// keeps one roster and these, rather than a copy of every member per event
    /// (``applying(_:)`` copies each dictionary it touches: the whole space, on every join).
    public mutating func applyUndoably(_ event: MembershipEvent) throws(KeyModelError) -> Undo {
        try applyUndoably(event, checks: .all)
    }

    /// ``applyUndoably(_:)`` verifying the signatures `checks` names.
    package mutating func applyUndoably(_ event: MembershipEvent, checks: SignatureChecks)
        throws(KeyModelError)
        -> Undo
    {
        let undo = Undo(saving: event, from: self)
        do throws(KeyModelError) {
            try apply(event, checks: checks)
        } catch {
            // `apply` checks before it changes anything; this keeps that true whatever it throws.
            self.undo(undo)
            throw error
        }
        return undo
    }

    /// Takes back the event whose ``applyUndoably(_:)`` gave `undo`; events taken back must go
    /// in the reverse of the order they were applied.
    public mutating func undo(_ undo: Undo) {
        for (id, entry) in undo.entries {
            members[id] = entry.member
            formerMembers[id] = entry.former
            newIdentities[id] = entry.newIdentity
            removedAt[id] = entry.removedAt
            delegations[id] = entry.delegation
            admittedBy[id] = entry.admitted
        }
        for (key, id) in undo.signingKeys { bySigningKey[key] = id }
        owner = undo.owner
        head = undo.head
        nextSequence = undo.nextSequence
    }

    /// What one event may change, as it was before: every entry of each member the event names
    /// (its signer, the member it adds, removes, re-keys or renames), the signing keys of those
    /// members and of the records it brings, and the chain's owner, head and next sequence.
    /// `apply` changes nothing else (a link's signer retired by its last use is the event's signer).
    public struct Undo: Sendable {
        struct Entry: Sendable {
            let member: MemberRecord?
            let former: MemberRecord?
            let newIdentity: MemberID?
            let removedAt: UInt64?
            let delegation: Delegation?
            let admitted: [MemberID]?
        }

        let entries: [(MemberID, Entry)]
        let signingKeys: [(SigningPublicKey, MemberID?)]
        let owner: MemberID
        let head: EventHash
        let nextSequence: UInt64

        init(saving event: MembershipEvent, from roster: Roster) {
            var ids = [event.signer]
            var records: [MemberRecord] = []
            switch event.change {
            case .spaceCreated(let record), .memberAdded(let record):
                ids.append(record.id)
                records.append(record)
            case .memberRemoved(let id), .rightsChanged(let id, _), .memberRenamed(let id, _):
                ids.append(id)
            case .memberRekeyed(let old, let record):
                ids += [old, record.id]
                records.append(record)
            }
            var entries: [(MemberID, Entry)] = []
            var keys: [SigningPublicKey] = records.map(\.keys.signing)
            for id in ids where !entries.contains(where: { $0.0 == id }) {
                let member = roster.members[id]
                if let member { keys.append(member.keys.signing) }
                entries.append(
                    (
                        id,
                        Entry(
                            member: member, former: roster.formerMembers[id],
                            newIdentity: roster.newIdentities[id],
                            removedAt: roster.removedAt[id], delegation: roster.delegations[id],
                            admitted: roster.admittedBy[id])
                    ))
            }
            signingKeys = keys.map { ($0, roster.bySigningKey[$0]) }
            self.entries = entries
            owner = roster.owner
            head = roster.head
            nextSequence = roster.nextSequence
        }
    }

    /// Makes and signs the next event of this roster's chain with `identity`, which must belong
    /// to a current member. The result still has to pass ``apply(_:)``.
    public func nextEvent(
        _ change: MembershipChange, signedBy identity: DeviceIdentity, invite: SignedInvite? = nil
    ) throws(KeyModelError) -> MembershipEvent {
        guard let signer = currentMember(signingKey: identity.publicKeys.signing) else {
            throw KeyModelError(.signerNotMember, "This device is not a member of the space.")
        }
        return MembershipEvent.make(
            space: space, sequence: nextSequence, previous: head, change: change, signer: signer.id,
            invite: invite, identity: identity)
    }

    /// The space's attendant (its bot): the current member holding the `attendant` right, or nil
    /// when members attend their own invites. With several, the one with the smallest id.
    public var attendant: MemberRecord? {
        members.values.filter { $0.id != owner && $0.rights.contains(.attendant) }.min { $0.id < $1.id }
    }

    /// Checks an invite record against this roster: signed by its inviter, for this space, and
    /// the inviter a current member entitled to add members. With `memo`, a record whose very
    /// bytes this process verified before is not verified again.
    public func checkInvite(_ invite: SignedInvite, memo: SignatureMemo? = nil) throws(KeyModelError) {
        try checkInvite(invite, verifyingSignature: true, memo: memo)
    }

    func checkInvite(_ invite: SignedInvite, verifyingSignature: Bool, memo: SignatureMemo? = nil)
        throws(KeyModelError)
    {
        guard invite.space == space else {
            throw KeyModelError(.wrongContext, "The invite record belongs to another space.")
        }
        let key: SigningPublicKey
        do throws(JoinGrantError) {
            // The inviter's key as this roster holds it (validated once, when decoded) when the
            // record names it; otherwise decoded from the record. Within a pinned prefix the
            // record's signature was checked by whoever vouched for the prefix.
            if let known = members[invite.inviter]?.keys.signing, invite.names(known) {
                if verifyingSignature { try invite.verifySignature(knownKey: known, memo: memo) }
                key = known
            } else {
                key = try invite.verifySignature(memo: memo)
            }
        } catch {
            throw KeyModelError(.badSignature, "The invite record does not verify: \(error.message)")
        }
        guard let inviter = currentMember(signingKey: key), inviter.id == invite.inviter else {
            throw KeyModelError(.signerNotMember, "The invite record's inviter is not a current member.")
        }
        let rights = rights(of: inviter.id)
        guard rights.contains(.admin) || rights.contains(.invite) else {
            throw KeyModelError(.notAuthorised, "\(Self.label(inviter)) may not add members.")
        }
    }

    /// Whether a thread key made when the chain was at `sequence` (the roster's `nextSequence`
    /// then) is known to someone who has left since: a member removed, who left, or whose identity
    /// was replaced. A link's signer does not count: its key opens only what the link's holder
    /// was invited to read.
    public func hasLostMemberSince(_ sequence: UInt64) -> Bool {
        removedAt.contains { id, at in at >= sequence && !isLinkSigner(id) }
    }

    /// The current members who are `ids` now: each id itself while a member, the identity that
    /// replaced it after a re-key, and for a link's signer whoever claimed the link.
    public func currentMembers(standingFor ids: [MemberID]) -> Set<MemberID> {
        var replacedBy: [MemberID: MemberID] = [:]
        for (new, old) in newIdentities { replacedBy[old] = new }
        var result: Set<MemberID> = []
        var pending = ids
        var seen: Set<MemberID> = []
        while let id = pending.popLast() {
            guard seen.insert(id).inserted else { continue }
            if members[id] != nil, delegations[id] == nil { result.insert(id) }
            if let next = replacedBy[id] { pending.append(next) }
            pending += admittedBy[id] ?? []
        }
        return result
    }

    /// Whether `id` is or was a full-length link's signer, which adds claimers and nothing else:
    /// its wraps and messages are never anyone's.
    public func isLinkSigner(_ id: MemberID) -> Bool {
        delegations[id] != nil
    }

    /// The effective rights of a current member (the owner holds all); empty for non-members.
    public func rights(of id: MemberID) -> MemberRights {
        if id == owner { return .all }
        return members[id]?.rights ?? []
    }

    /// The record of a current member with this signing key.
    public func currentMember(signingKey: SigningPublicKey) -> MemberRecord? {
        bySigningKey[signingKey].flatMap { members[$0] }
    }

    /// The record of a current or former member.
    public func everMember(_ id: MemberID) -> MemberRecord? {
        members[id] ?? formerMembers[id]
    }

    /// Fills in each sealed name (``SealedName``) that `open` opens on this device, for current
    /// and former members; a name that would not pass as one in clear stays unopened.
    public mutating func revealNames(_ open: (SealedName, MemberID) -> String?) {
        func revealed(_ records: SharedTable<MemberID, MemberRecord>) -> SharedTable<MemberID, MemberRecord> {
            records.mapValues { record in
                guard let sealed = record.sealedName, let name = open(sealed, record.id),
                    (try? Self.checkName(name)) != nil
                else { return record }
                return record.named(name)
            }
        }
        members = revealed(members)
        formerMembers = revealed(formerMembers)
    }

    /// Whether some sealed name is not yet opened here.
    public var hasSealedNames: Bool { !sealedNameThreads.isEmpty }

    /// The threads whose keys open the names still sealed: the only keys a device needs to
    /// show them (most spaces: one, the names thread).
    public var sealedNameThreads: Set<ThreadID> {
        var threads = Set<ThreadID>()
        for records in [members, formerMembers] {
            for record in records.values where record.name.isEmpty {
                if let sealed = record.sealedName { threads.insert(sealed.thread) }
            }
        }
        return threads
    }

    private static func label(_ member: MemberRecord) -> String {
        member.name.isEmpty ? "Member \(member.id)" : member.name
    }

    private static func checkName(_ name: String) throws(KeyModelError) {
        guard name.utf8.count <= MemberRecord.maximumNameByteCount else {
            throw KeyModelError(.invalidEvent, "A member name is at most 128 bytes long.")
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw KeyModelError(.invalidEvent, "A member name cannot contain control characters.")
        }
    }

    private static func checkRecord(_ record: MemberRecord) throws(KeyModelError) {
        try checkName(record.name)
        guard MemberRights.all.isSuperset(of: record.rights) else {
            throw KeyModelError(.invalidEvent, "A member record grants rights this version does not know.")
        }
    }
}

/// A full-length link's signer as the roster records it: added by `inviter` with a signed invite
/// record, it admits at most `usesLeft` more claimers. `expiresAt` (Unix seconds, from the record)
/// is when the inviter's or an admin's device retires it if it is still there; the roster itself
/// cannot read a clock, so until then the uses left are all it bounds.
public struct Delegation: Sendable, Equatable {
    public let inviter: MemberID
    public internal(set) var usesLeft: Int
    public let expiresAt: Int64
}
