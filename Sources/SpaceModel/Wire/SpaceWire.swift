// The JSON bodies of the space API (see `Sources/SpaceServer/API.md`), shared by the server and
// the client so both sides agree on every field. Byte strings are base64url without padding.

/// Request and response bodies of the space server's HTTP API.
public enum SpaceWire {
    /// `POST /api/spaces`.
    public struct CreateSpaceRequest: Codable, Sendable {
        public let name: String
        public let genesis: MembershipEvent
        public let deviceLabel: String?
        public init(name: String, genesis: MembershipEvent, deviceLabel: String? = nil) {
            self.name = name
            self.genesis = genesis
            self.deviceLabel = deviceLabel
        }
    }

    /// `POST …/members`, `DELETE …/members/{member}`, `POST …/events`.
    public struct EventRequest: Codable, Sendable {
        public let event: MembershipEvent
        public let deviceLabel: String?
        public init(event: MembershipEvent, deviceLabel: String? = nil) {
            self.event = event
            self.deviceLabel = deviceLabel
        }
    }

    /// `POST …/members` with several `member_added` events, in chain order (applied all or none),
    /// and the new members' wrap bundles, stored with them (absent: none; a server from before
    /// ignores them, and its answer has no ``AppendedEvents/wrapsStored``).
    ///
    /// `threadCount`: how many threads the list held that the bundles' keys were chosen from.
    /// A server that checks it refuses the request (409 `threads_changed`, nothing stored) when
    /// the space has another number of threads now, and says so in its answer
    /// (``AppendedEvents/threadCount``); threads are never removed nor changed, so the same
    /// number is the same list. A server from before ignores it.
    public struct EventsRequest: Codable, Sendable {
        public let events: [MembershipEvent]
        public let bundles: [KeyWrapBundle]?
        public let threadCount: Int?
        public init(events: [MembershipEvent], bundles: [KeyWrapBundle]? = nil, threadCount: Int? = nil) {
            self.events = events
            self.bundles = bundles
            self.threadCount = threadCount
        }
    }

    /// `POST …/members` as the server reads it: one event (``EventRequest``, with the new
    /// member's device label) or several `member_added` events (``EventsRequest``).
    public struct MembersRequest: Codable, Sendable {
        public let event: MembershipEvent?
        public let events: [MembershipEvent]?
        public let deviceLabel: String?
        /// With `events` only: wrap bundles stored after them (``EventsRequest/bundles``).
        public let bundles: [KeyWrapBundle]?
        /// With `events` only: the thread list's length the sender built on
        /// (``EventsRequest/threadCount``).
        public let threadCount: Int?
        public init(
            event: MembershipEvent? = nil, events: [MembershipEvent]? = nil, deviceLabel: String? = nil,
            bundles: [KeyWrapBundle]? = nil, threadCount: Int? = nil
        ) {
            self.event = event
            self.events = events
            self.deviceLabel = deviceLabel
            self.bundles = bundles
            self.threadCount = threadCount
        }
    }

    /// The answer to an ``EventsRequest``: each event's place in the chain, in order, and, when
    /// the request carried bundles and the server stored them, how many keys they held (absent
    /// otherwise: a server from before does not read them, and the sender posts them itself).
    /// `threadCount`: the request's, when the server checked it (the space held that many
    /// threads as the events were stored); absent from a server that does not check it.
    public struct AppendedEvents: Codable, Sendable {
        public let appended: [AppendedEvent]
        public let wrapsStored: Int?
        public let threadCount: Int?
        public init(appended: [AppendedEvent], wrapsStored: Int? = nil, threadCount: Int? = nil) {
            self.appended = appended
            self.wrapsStored = wrapsStored
            self.threadCount = threadCount
        }
    }

    /// `POST …/sign-in/challenge`: the challenge is good for this member only.
    public struct ChallengeRequest: Codable, Sendable {
        public let member: MemberID
        public init(member: MemberID) {
            self.member = member
        }
    }

    /// `POST …/sign-in`.
    public struct SignInRequest: Codable, Sendable {
        public let proof: SignInProof
        public let label: String?
        public let expiresIn: Int64?
        /// The sequence of a membership event to answer with beside the token (``SignedIn``): a
        /// joiner's own event at its grant's checkpoint, which it would otherwise `GET` next.
        /// Older servers ignore it (and answer without the event).
        public let eventAt: UInt64?
        public init(proof: SignInProof, label: String? = nil, expiresIn: Int64? = nil, eventAt: UInt64? = nil)
        {
            self.proof = proof
            self.label = label
            self.expiresIn = expiresIn
            self.eventAt = eventAt
        }
    }

    /// The answer to a sign-in: the device token (``IssuedToken``'s fields) and, when the
    /// request asked for one (``SignInRequest/eventAt``) and the server holds it, that event,
    /// as `GET …/events?from=N&limit=1` would list it.
    public struct SignedIn: Codable, Sendable {
        public let token: String
        public let id: String
        public let member: MemberID
        public let expiresAt: Int64
        public let event: MembershipEvent?
        public init(
            token: String, id: String, member: MemberID, expiresAt: Int64, event: MembershipEvent? = nil
        ) {
            self.token = token
            self.id = id
            self.member = member
            self.expiresAt = expiresAt
            self.event = event
        }

        public var issued: IssuedToken {
            IssuedToken(token: token, id: id, member: member, expiresAt: expiresAt)
        }
    }

    /// `POST …/threads`; `metadata` is opaque base64url (clients encrypt it).
    public struct CreateThreadRequest: Codable, Sendable {
        public let thread: ThreadID
        public let wraps: [KeyWrap]
        public let metadata: String?
        public init(thread: ThreadID, wraps: [KeyWrap], metadata: String? = nil) {
            self.thread = thread
            self.wraps = wraps
            self.metadata = metadata
        }
    }

    /// `POST …/threads/{thread}/wraps` (single wraps) and `POST …/wraps` (single wraps and wrap
    /// bundles, several threads at once).
    public struct WrapsRequest: Codable, Sendable {
        public let wraps: [KeyWrap]
        /// Absent from older clients, which send single wraps only.
        public let bundles: [KeyWrapBundle]?
        public init(wraps: [KeyWrap], bundles: [KeyWrapBundle]? = nil) {
            self.wraps = wraps
            self.bundles = bundles
        }
    }

    /// `POST …/threads/{thread}/messages`.
    public struct MessageRequest: Codable, Sendable {
        public let message: EncryptedMessage
        public init(message: EncryptedMessage) {
            self.message = message
        }
    }

    /// A device token, shown once.
    public struct IssuedToken: Codable, Sendable {
        public let token: String
        public let id: String
        public let member: MemberID
        public let expiresAt: Int64
        public init(token: String, id: String, member: MemberID, expiresAt: Int64) {
            self.token = token
            self.id = id
            self.member = member
            self.expiresAt = expiresAt
        }
    }

    /// The head of a space's membership chain.
    public struct EventHead: Codable, Sendable {
        public let sequence: UInt64
        public let hash: String
        public init(sequence: UInt64, hash: String) {
            self.sequence = sequence
            self.hash = hash
        }
    }

    /// The answer to creating a space.
    public struct CreatedSpace: Codable, Sendable {
        public let space: SpaceID
        public let adminToken: String
        public let owner: MemberID
        public let deviceToken: IssuedToken
        public let head: EventHead
        public init(
            space: SpaceID, adminToken: String, owner: MemberID, deviceToken: IssuedToken, head: EventHead
        ) {
            self.space = space
            self.adminToken = adminToken
            self.owner = owner
            self.deviceToken = deviceToken
            self.head = head
        }
    }

    /// `GET /api/spaces/{space}`.
    public struct SpaceInfo: Codable, Sendable {
        public let space: SpaceID
        public let name: String
        public let owner: MemberID
        public let ownerSigningKey: String
        public let avatar: String?
        public let head: EventHead
        public let you: MemberID?
        public init(
            space: SpaceID, name: String, owner: MemberID, ownerSigningKey: String, avatar: String? = nil,
            head: EventHead, you: MemberID? = nil
        ) {
            self.space = space
            self.name = name
            self.owner = owner
            self.ownerSigningKey = ownerSigningKey
            self.avatar = avatar
            self.head = head
            self.you = you
        }
    }

    /// A member as the server lists it.
    public struct MemberInfo: Codable, Sendable {
        public let id: MemberID
        public let keys: MemberPublicKeys
        public let rights: MemberRights
        public let name: String
        public let addedSequence: Int64
        public let removedSequence: Int64?
        public init(
            id: MemberID, keys: MemberPublicKeys, rights: MemberRights, name: String, addedSequence: Int64,
            removedSequence: Int64? = nil
        ) {
            self.id = id
            self.keys = keys
            self.rights = rights
            self.name = name
            self.addedSequence = addedSequence
            self.removedSequence = removedSequence
        }
    }

    /// `GET …/members`.
    public struct MemberList: Codable, Sendable {
        public let members: [MemberInfo]
        public let formerMembers: [MemberInfo]
        public init(members: [MemberInfo], formerMembers: [MemberInfo]) {
            self.members = members
            self.formerMembers = formerMembers
        }
    }

    /// `GET …/events`.
    public struct EventList: Codable, Sendable {
        public let events: [MembershipEvent]
        public init(events: [MembershipEvent]) {
            self.events = events
        }
    }

    /// The answer to a membership change; adding a member issues their first device token
    /// (single events only) and a sign-in challenge for them (``signInChallenge``).
    public struct AppendedEvent: Codable, Sendable {
        public let sequence: UInt64
        public let hash: String
        public let deviceToken: IssuedToken?
        /// A fresh sign-in challenge for the member the event added (as `POST …/sign-in/challenge`
        /// gives it), which the attendant passes on in the grant so the joiner signs in at once.
        /// Absent for other events and from older servers.
        public let signInChallenge: String?
        /// With a checked ``EventsRequest/threadCount``: how many messages the threads of the
        /// bundles to the member the event added hold (the grant's history hint, which the
        /// thread list's counts gave before).
        public let messages: Int?
        public init(
            sequence: UInt64, hash: String, deviceToken: IssuedToken? = nil, signInChallenge: String? = nil,
            messages: Int? = nil
        ) {
            self.sequence = sequence
            self.hash = hash
            self.deviceToken = deviceToken
            self.signInChallenge = signInChallenge
            self.messages = messages
        }

        /// This answer with `messages`.
        public func with(messages: Int) -> Self {
            Self(
                sequence: sequence, hash: hash, deviceToken: deviceToken, signInChallenge: signInChallenge,
                messages: messages)
        }
    }

    /// A sign-in challenge.
    public struct Challenge: Codable, Sendable {
        public let challenge: String
        public let expiresAt: Int64
        public init(challenge: String, expiresAt: Int64) {
            self.challenge = challenge
            self.expiresAt = expiresAt
        }
    }

    /// A thread as the server lists it.
    public struct ThreadInfo: Codable, Sendable {
        public let id: ThreadID
        public let createdBy: MemberID
        public let createdAt: Int64
        public let metadata: String?
        /// How many messages the thread holds (absent from servers before it was added).
        public let messages: Int?
        public init(
            id: ThreadID, createdBy: MemberID, createdAt: Int64, metadata: String? = nil, messages: Int? = nil
        ) {
            self.id = id
            self.createdBy = createdBy
            self.createdAt = createdAt
            self.metadata = metadata
            self.messages = messages
        }
    }

    /// `GET …/threads`.
    public struct ThreadList: Codable, Sendable {
        public let threads: [ThreadInfo]
        public init(threads: [ThreadInfo]) {
            self.threads = threads
        }
    }

    /// `GET …/wraps`: the caller's single wraps (what spaces stored before wrap bundles, and
    /// new threads' wraps) and wrap bundles (absent when there are none, and from older servers).
    public struct WrapList: Codable, Sendable {
        public let wraps: [KeyWrap]
        public let bundles: [KeyWrapBundle]?
        public init(wraps: [KeyWrap], bundles: [KeyWrapBundle]? = nil) {
            self.wraps = wraps
            self.bundles = bundles
        }
    }

    /// How many items a request stored.
    public struct StoredCount: Codable, Sendable {
        public let stored: Int
        public init(stored: Int) {
            self.stored = stored
        }
    }

    /// The answer to posting a message.
    public struct AppendedMessage: Codable, Sendable {
        public let cursor: Int64
        public init(cursor: Int64) {
            self.cursor = cursor
        }
    }

    /// A stored message and its cursor.
    public struct MessageEntry: Codable, Sendable {
        public let cursor: Int64
        public let message: EncryptedMessage
        public init(cursor: Int64, message: EncryptedMessage) {
            self.cursor = cursor
            self.message = message
        }
    }

    /// `GET …/messages`: pass `next` as `since` to continue.
    public struct MessageList: Codable, Sendable {
        public let messages: [MessageEntry]
        public let next: Int64
        public init(messages: [MessageEntry], next: Int64) {
            self.messages = messages
            self.next = next
        }
    }
}
