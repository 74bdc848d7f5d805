// The JSON bodies of the full-length invite endpoints (`/api/key-invite…`, see
// `Sources/SpaceServer/API.md`), shared by the server and the client. Byte strings are base64url
// without padding.

/// What claiming a full-length invite does.
public enum InviteShape: String, Codable, Sendable, Equatable, CaseIterable {
    /// The first person in creates the space as its owner and bootstraps its keys.
    case setup
    /// Joins the space as a new member and receives the inviter's thread keys.
    case member
    /// Joins as a new member and lands in a direct thread with the inviter.
    case dm
    /// Adds a device to an existing member: adopts that member's identity; no new member.
    case device

    var byte: UInt8 {
        switch self {
        case .setup: 1
        case .member: 2
        case .dm: 3
        case .device: 4
        }
    }
}

/// Request and response bodies of `/api/key-invite`.
public enum KeyInviteWire {
    /// `POST /api/key-invite`: files an invite. `sealed` is the payload sealed under the link's
    /// wrap key; `verifier` checks claims. Member and DM invites carry `inviteEvent`, the
    /// `member_added` event for the invite's signer (see API.md).
    public struct MintRequest: Codable, Sendable {
        public let id: KeyInviteID
        public let space: SpaceID
        public let shape: InviteShape
        public let sealed: String
        public let verifier: String
        public let expiresIn: Int64
        public let uses: Int
        public let personName: String?
        public let spaceName: String?
        public let rights: MemberRights?
        public let inviteEvent: MembershipEvent?
        public let sealedBranding: String?
        /// The invitee's and inviter's names sealed under the link (``InviteNames``), which
        /// clients send instead of `personName`.
        public let sealedNames: String?

        public init(
            id: KeyInviteID, space: SpaceID, shape: InviteShape, sealed: String, verifier: String,
            expiresIn: Int64, uses: Int, personName: String? = nil, spaceName: String? = nil,
            rights: MemberRights? = nil, inviteEvent: MembershipEvent? = nil, sealedBranding: String? = nil,
            sealedNames: String? = nil
        ) {
            self.sealedNames = sealedNames
            self.id = id
            self.space = space
            self.shape = shape
            self.sealed = sealed
            self.verifier = verifier
            self.expiresIn = expiresIn
            self.uses = uses
            self.personName = personName
            self.spaceName = spaceName
            self.rights = rights
            self.inviteEvent = inviteEvent
            self.sealedBranding = sealedBranding
        }
    }

    /// The answer to minting.
    public struct Minted: Codable, Sendable {
        public let id: KeyInviteID
        public let expiresAt: Int64
        public init(id: KeyInviteID, expiresAt: Int64) {
            self.id = id
            self.expiresAt = expiresAt
        }
    }

    /// `GET /api/key-invite/{id}`: the sealed payload and public branding. Never consumes anything.
    public struct Invite: Codable, Sendable {
        public let id: KeyInviteID
        public let space: SpaceID
        public let shape: InviteShape
        public let sealed: String
        public let spaceName: String
        public let avatar: String?
        public let sealedBranding: String?
        public let inviter: MemberID?
        public let inviterName: String?
        public let inviteMember: MemberID?
        public let personName: String?
        /// ``MintRequest/sealedNames``, as minted.
        public let sealedNames: String?
        public let rights: MemberRights
        public let expiresAt: Int64
        public let usesLeft: Int
        /// The head of the space's membership chain (absent for setup invites), so a joiner can
        /// sign the events that add them.
        public let head: SpaceWire.EventHead?
        /// Member and DM invites: the key wraps addressed to the invite's signer, made for threads
        /// created after the invite was minted (the signer is a member, so every new thread is
        /// wrapped to it). Sealed to the signer's key, which only the link opens.
        public let signerWraps: [KeyWrap]?
        /// Whether the roster retires the invite's signer by itself when its last use is spent
        /// (a signer added with its use count, `Roster.delegations`): the last claim then carries
        /// only the event that adds the claimer. Absent or false: an invite minted before, whose
        /// last claim also retires the signer with a second event.
        public let retiredByLastUse: Bool?

        public init(
            id: KeyInviteID, space: SpaceID, shape: InviteShape, sealed: String, spaceName: String,
            avatar: String?, sealedBranding: String?, inviter: MemberID?, inviterName: String?,
            inviteMember: MemberID?, personName: String?, rights: MemberRights, expiresAt: Int64,
            usesLeft: Int,
            head: SpaceWire.EventHead?, signerWraps: [KeyWrap]? = nil, retiredByLastUse: Bool? = nil,
            sealedNames: String? = nil
        ) {
            self.sealedNames = sealedNames
            self.head = head
            self.retiredByLastUse = retiredByLastUse
            self.signerWraps = signerWraps
            self.id = id
            self.space = space
            self.shape = shape
            self.sealed = sealed
            self.spaceName = spaceName
            self.avatar = avatar
            self.sealedBranding = sealedBranding
            self.inviter = inviter
            self.inviterName = inviterName
            self.inviteMember = inviteMember
            self.personName = personName
            self.rights = rights
            self.expiresAt = expiresAt
            self.usesLeft = usesLeft
        }
    }

    /// `POST /api/key-invite/{id}/claim`. `claimSecret` proves the link; setup claims carry
    /// `genesis`, member and DM claims `events` and `wraps`.
    public struct ClaimRequest: Codable, Sendable {
        public let claimSecret: String
        public let genesis: MembershipEvent?
        public let events: [MembershipEvent]?
        public let wraps: [KeyWrap]?
        public let deviceLabel: String?
        /// Member and DM claims: the threads of the `signerWraps` the claimer saw. A thread wrapped
        /// to the signer since is missing from the claim's wraps, so the server refuses the claim
        /// (409 `invite_keys_changed`) and the claimer tries again with the new keys.
        public let signerThreads: [ThreadID]?

        public init(
            claimSecret: String, genesis: MembershipEvent? = nil, events: [MembershipEvent]? = nil,
            wraps: [KeyWrap]? = nil, deviceLabel: String? = nil, signerThreads: [ThreadID]? = nil
        ) {
            self.claimSecret = claimSecret
            self.genesis = genesis
            self.events = events
            self.wraps = wraps
            self.deviceLabel = deviceLabel
            self.signerThreads = signerThreads
        }
    }

    /// `GET /api/key-invite/stale/{space}`: invite signers still in the roster whose invites can
    /// no longer be claimed.
    public struct StaleSigners: Codable, Sendable {
        public let members: [MemberID]
        public init(members: [MemberID]) { self.members = members }
    }

    /// The answer to a claim: the member the claimer now acts as and its device token (and the
    /// admin token for a setup claim).
    public struct Claimed: Codable, Sendable {
        public let space: SpaceID
        public let member: MemberID
        public let shape: InviteShape
        public let deviceToken: SpaceWire.IssuedToken
        public let adminToken: String?

        public init(
            space: SpaceID, member: MemberID, shape: InviteShape, deviceToken: SpaceWire.IssuedToken,
            adminToken: String? = nil
        ) {
            self.space = space
            self.member = member
            self.shape = shape
            self.deviceToken = deviceToken
            self.adminToken = adminToken
        }
    }
}
