import PAKE

/// Rights a member holds in a space beyond reading and writing. The owner holds every right.
public struct MemberRights: OptionSet, Hashable, Sendable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// May add and remove members (except the owner) and grant any right.
    public static let admin = MemberRights(rawValue: 1 << 0)
    /// May add members, granting at most the rights the inviter holds.
    public static let invite = MemberRights(rawValue: 1 << 1)
    /// Attends short-code joins for the space (the sidecar bot): members send it their invites.
    public static let attendant = MemberRights(rawValue: 1 << 2)

    /// Every right this version knows.
    public static let all: MemberRights = [.admin, .invite, .attendant]

    /// Names used in JSON, in a fixed order.
    static let names: [(String, MemberRights)] = [
        ("admin", .admin), ("invite", .invite), ("attendant", .attendant),
    ]

    /// The JSON names of the rights held, in a fixed order.
    public var names: [String] { Self.names.filter { contains($0.1) }.map(\.0) }

    /// Parses JSON names; unknown names fail rather than being dropped.
    public init(names: [String]) throws(KeyModelError) {
        var rights: MemberRights = []
        for name in names {
            guard let right = Self.names.first(where: { $0.0 == name })?.1 else {
                throw KeyModelError(.invalidEvent, "\"\(name)\" is not a member right this version knows.")
            }
            rights.insert(right)
        }
        self = rights
    }
}

extension MemberRights: Codable {
    public init(from decoder: any Decoder) throws {
        let names = try decoder.singleValueContainer().decode([String].self)
        do {
            try self.init(names: names)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(names)
    }
}

/// One member of a space as the signed roster records them.
///
/// A name is carried in one of two forms: in clear (`name`, the form of spaces made before names
/// were sealed, still read) or sealed (`sealedName`, which the event signs; `name` is then empty
/// on the wire and filled in on a member's device once the box opens, ``named(_:)``).
public struct MemberRecord: Hashable, Sendable {
    /// Longest display name, in UTF-8 bytes.
    public static var maximumNameByteCount: Int { 128 }

    public let id: MemberID
    public let keys: MemberPublicKeys
    public let rights: MemberRights
    /// The display name the member chose (may be empty): as sent in clear, or as opened from
    /// `sealedName` on this device (empty until it is).
    public let name: String
    /// The name sealed for members only (``SealedName``); nil for a name in clear.
    public let sealedName: SealedName?

    public init(
        id: MemberID, keys: MemberPublicKeys, rights: MemberRights = [], name: String = "",
        sealedName: SealedName? = nil
    ) {
        self.id = id
        self.keys = keys
        self.rights = rights
        self.name = name
        self.sealedName = sealedName
    }

    /// This record with the name its sealed box opened to on this device.
    public func named(_ opened: String) -> MemberRecord {
        MemberRecord(id: id, keys: keys, rights: rights, name: opened, sealedName: sealedName)
    }

    /// This record with other rights.
    public func with(rights: MemberRights) -> MemberRecord {
        MemberRecord(id: id, keys: keys, rights: rights, name: name, sealedName: sealedName)
    }

    /// The name as the event carries and signs it: empty when sealed, whatever was opened here.
    var nameInClear: String { sealedName == nil ? name : "" }
}

extension MemberRecord: Codable {
    private enum CodingKeys: String, CodingKey { case id, keys, rights, name, sealedName }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let sealed = try c.decodeIfPresent(SealedName.self, forKey: .sealedName)
        // Beside a sealed name, a name in clear is not signed: a server could have added it.
        self.init(
            id: try c.decode(MemberID.self, forKey: .id),
            keys: try c.decode(MemberPublicKeys.self, forKey: .keys),
            rights: try c.decode(MemberRights.self, forKey: .rights),
            name: sealed == nil ? try c.decode(String.self, forKey: .name) : "", sealedName: sealed)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(keys, forKey: .keys)
        try c.encode(rights, forKey: .rights)
        try c.encode(nameInClear, forKey: .name)
        try c.encodeIfPresent(sealedName, forKey: .sealedName)
    }
}

/// The change a membership event makes.
public enum MembershipChange: Hashable, Sendable {
    /// The first event of a space: the owner creates it. Signed by the owner.
    case spaceCreated(owner: MemberRecord)
    /// A member joins with these public keys and rights.
    case memberAdded(MemberRecord)
    /// A member is removed; their later requests fail and new threads are not wrapped to them.
    case memberRemoved(MemberID)
    /// A current member's rights become exactly these (the owner and admins only; for example
    /// `eleven bot enable` grants a bot `invite` and `attendant`).
    case rightsChanged(MemberID, MemberRights)
    /// A member who lost every device is re-admitted with a new identity: `old` becomes a former
    /// member (their past messages still verify) and `new` takes their place and rights.
    case memberRekeyed(old: MemberID, new: MemberRecord)
    /// A current member's name becomes this one, sealed for members (``SealedName``). Signed by
    /// the member themselves or an admin.
    case memberRenamed(MemberID, SealedName)

    var tag: String {
        switch self {
        case .spaceCreated: "space_created"
        case .memberAdded: "member_added"
        case .memberRemoved: "member_removed"
        case .rightsChanged: "rights_changed"
        case .memberRekeyed: "member_rekeyed"
        case .memberRenamed: "member_renamed"
        }
    }
}

/// A signed change to a space's membership. Events form a hash chain: each names its sequence
/// number and the previous event's hash, so a client can verify the whole roster from the owner's
/// key forward and notice reordered, replayed, dropped or forged events.
public struct MembershipEvent: Hashable, Sendable {
    public let space: SpaceID
    /// 0 for the first event, then one more for each event.
    public let sequence: UInt64
    /// The previous event's hash (``EventHash/genesis`` for the first event).
    public let previous: EventHash
    public let change: MembershipChange
    /// The member who signed this event.
    public let signer: MemberID
    /// On a `member_added` signed by an attendant (the bot): the inviter's signed invite record
    /// the member joined with, so every member can audit who let whom in.
    public let invite: SignedInvite?
    public let signature: Signature

    /// Assembles an event from received parts (nothing verified yet; see ``Roster``).
    public init(
        space: SpaceID, sequence: UInt64, previous: EventHash, change: MembershipChange, signer: MemberID,
        invite: SignedInvite? = nil, signature: Signature
    ) {
        self.space = space
        self.sequence = sequence
        self.previous = previous
        self.change = change
        self.signer = signer
        self.invite = invite
        self.signature = signature
    }

    static func signedBytes(
        space: SpaceID, sequence: UInt64, previous: EventHash, change: MembershipChange, signer: MemberID,
        invite: SignedInvite? = nil
    ) -> [UInt8] {
        var encoder = CanonicalEncoder(domain: Domain.membershipEvent)
        encoder.append(space.bytes)
        encoder.append(sequence)
        encoder.append(previous.bytes)
        encoder.append(change.tag)
        switch change {
        case .spaceCreated(let member), .memberAdded(let member):
            encoder.append(member.id.bytes)
            encoder.append(member.keys.encryption.bytes)
            encoder.append(member.keys.signing.bytes)
            encoder.append(member.rights.rawValue)
            Self.appendName(of: member, to: &encoder)
        case .memberRemoved(let id):
            encoder.append(id.bytes)
        case .rightsChanged(let id, let rights):
            encoder.append(id.bytes)
            encoder.append(rights.rawValue)
        case .memberRekeyed(let old, let member):
            encoder.append(old.bytes)
            encoder.append(member.id.bytes)
            encoder.append(member.keys.encryption.bytes)
            encoder.append(member.keys.signing.bytes)
            encoder.append(member.rights.rawValue)
            Self.appendName(of: member, to: &encoder)
        case .memberRenamed(let id, let sealed):
            encoder.append(id.bytes)
            encoder.append(sealed.thread.bytes)
            encoder.append(sealed.box)
        }
        encoder.append(signer.bytes)
        // Events without an invite keep the encoding they always had.
        if let invite {
            encoder.append("invite")
            encoder.append(
                SignedInvite.signedBytes(
                    space: invite.space, inviter: invite.inviter, inviterKey: invite.inviterKey,
                    nameplate: invite.nameplate, createdAt: invite.createdAt, expiresAt: invite.expiresAt,
                    uses: invite.uses))
            encoder.append(invite.signature)
        }
        return encoder.bytes
    }

    /// A name in clear as events always carried it; a sealed one as an empty name followed by
    /// the box and the thread whose key seals it (fields are length-prefixed, so the two forms
    /// cannot be taken for each other).
    private static func appendName(of member: MemberRecord, to encoder: inout CanonicalEncoder) {
        encoder.append(member.nameInClear)
        if let sealed = member.sealedName {
            encoder.append("sealed-name")
            encoder.append(sealed.thread.bytes)
            encoder.append(sealed.box)
        }
    }

    /// The bytes the signer signed.
    package var signedBytes: [UInt8] {
        Self.signedBytes(
            space: space, sequence: sequence, previous: previous, change: change, signer: signer,
            invite: invite)
    }

    /// This event's hash, which the next event names as its predecessor.
    public var hash: EventHash { hash(signedBytes: signedBytes) }

    /// ``hash`` from this event's ``signedBytes``, for a caller that has them already (a roster
    /// applying the event checked its signature over them).
    func hash(signedBytes: [UInt8]) -> EventHash {
        var encoder = CanonicalEncoder(domain: Domain.membershipEventHash)
        encoder.append(signedBytes)
        encoder.append(signature.bytes)
        return EventHash(trusted: SHA256.hash(encoder.bytes))
    }

    /// Makes and signs an event.
    package static func make(
        space: SpaceID, sequence: UInt64, previous: EventHash, change: MembershipChange, signer: MemberID,
        invite: SignedInvite? = nil, identity: DeviceIdentity
    ) -> MembershipEvent {
        let signed = signedBytes(
            space: space, sequence: sequence, previous: previous, change: change, signer: signer,
            invite: invite)
        return MembershipEvent(
            space: space, sequence: sequence, previous: previous, change: change, signer: signer,
            invite: invite, signature: identity.sign(signed))
    }
}

extension DeviceIdentity {
    /// The first event of a new space, which makes this device's identity its owner.
    /// `ownerSealedName`: the owner's name sealed for members (``SealedName``), instead of
    /// `ownerName` in clear.
    public func createSpace(
        _ space: SpaceID, as owner: MemberID, ownerName: String = "", ownerSealedName: SealedName? = nil
    ) -> MembershipEvent {
        let record = MemberRecord(
            id: owner, keys: publicKeys, rights: .all, name: ownerSealedName == nil ? ownerName : "",
            sealedName: ownerSealedName)
        return MembershipEvent.make(
            space: space, sequence: 0, previous: .genesis, change: .spaceCreated(owner: record),
            signer: owner,
            identity: self)
    }
}

extension MembershipEvent: Codable {
    private enum CodingKeys: String, CodingKey {
        case version, space, sequence, previous, type, member, memberID, rights, signer, invite, signature
        case sealedName
    }

    /// The JSON form's version.
    package static let jsonVersion = 1

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let version = try c.decode(Int.self, forKey: .version)
        guard version == Self.jsonVersion else {
            throw DecodingError.dataCorruptedError(
                forKey: .version, in: c, debugDescription: "unsupported event version \(version)")
        }
        let type = try c.decode(String.self, forKey: .type)
        let change: MembershipChange
        switch type {
        case "space_created": change = .spaceCreated(owner: try c.decode(MemberRecord.self, forKey: .member))
        case "member_added": change = .memberAdded(try c.decode(MemberRecord.self, forKey: .member))
        case "member_removed": change = .memberRemoved(try c.decode(MemberID.self, forKey: .memberID))
        case "rights_changed":
            change = .rightsChanged(
                try c.decode(MemberID.self, forKey: .memberID),
                try c.decode(MemberRights.self, forKey: .rights))
        case "member_rekeyed":
            change = .memberRekeyed(
                old: try c.decode(MemberID.self, forKey: .memberID),
                new: try c.decode(MemberRecord.self, forKey: .member))
        case "member_renamed":
            change = .memberRenamed(
                try c.decode(MemberID.self, forKey: .memberID),
                try c.decode(SealedName.self, forKey: .sealedName))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: c, debugDescription: "unknown event type \"\(type)\"")
        }
        self.init(
            space: try c.decode(SpaceID.self, forKey: .space),
            sequence: try c.decode(UInt64.self, forKey: .sequence),
            previous: try c.decodeChecked(forKey: .previous) { b throws(KeyModelError) in
                try EventHash(bytes: b)
            },
            change: change,
            signer: try c.decode(MemberID.self, forKey: .signer),
            invite: try c.decodeIfPresent(SignedInvite.self, forKey: .invite),
            signature: try c.decodeChecked(forKey: .signature) { b throws(KeyModelError) in
                try Signature(bytes: b)
            })
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Self.jsonVersion, forKey: .version)
        try c.encode(space, forKey: .space)
        try c.encode(sequence, forKey: .sequence)
        try c.encodeBytes(previous.bytes, forKey: .previous)
        try c.encode(change.tag, forKey: .type)
        switch change {
        case .spaceCreated(let member), .memberAdded(let member): try c.encode(member, forKey: .member)
        case .memberRemoved(let id): try c.encode(id, forKey: .memberID)
        case .rightsChanged(let id, let rights):
            try c.encode(id, forKey: .memberID)
            try c.encode(rights, forKey: .rights)
        case .memberRekeyed(let old, let member):
            try c.encode(old, forKey: .memberID)
            try c.encode(member, forKey: .member)
        case .memberRenamed(let id, let sealed):
            try c.encode(id, forKey: .memberID)
            try c.encode(sealed, forKey: .sealedName)
        }
        try c.encode(signer, forKey: .signer)
        try c.encodeIfPresent(invite, forKey: .invite)
        try c.encodeBytes(signature.bytes, forKey: .signature)
    }
}
