import ClientCore

// JSON bodies of the space API (see API.md). Byte strings are base64url without padding.

struct CreateSpaceBody: Decodable {
    let name: String
    let genesis: MembershipEvent
    let deviceLabel: String?
}

struct AvatarBody: Decodable {
    let contentType: String
    let data: String
}

struct BrandingBody: Decodable {
    let name: String?
    let avatar: AvatarBody?
    let removeAvatar: Bool?
}

struct EventBody: Decodable {
    let event: MembershipEvent
    let deviceLabel: String?
}

struct TokenRequestBody: Decodable {
    let label: String?
    let expiresIn: Int64?
}

struct SignInBody: Decodable {
    let proof: SignInProof
    let label: String?
    let expiresIn: Int64?
}

struct CreateThreadBody: Decodable {
    let thread: ThreadID
    let wraps: [KeyWrap]
    let metadata: String?
}

struct WrapsBody: Decodable {
    let wraps: [KeyWrap]
}

struct MessageBody: Decodable {
    let message: EncryptedMessage
}

struct NoteBody: Decodable {
    let note: InboxNote
}

struct IssuedToken: Encodable {
    let token: String
    let id: String
    let member: MemberID
    let expiresAt: Int64
}

struct CreatedSpace: Encodable {
    let space: SpaceID
    let adminToken: String
    let owner: MemberID
    let deviceToken: IssuedToken
    let head: EventHead
}

struct EventHead: Encodable {
    let sequence: UInt64
    let hash: String
}

struct GroupInfo: Encodable {
    let space: SpaceID
    let name: String
    let avatar: String?
}

struct SpaceInfo: Encodable {
    let space: SpaceID
    let name: String
    let owner: MemberID
    let ownerSigningKey: String
    let avatar: String?
    let head: EventHead
    let you: MemberID?
}

struct MemberInfo: Encodable {
    let id: MemberID
    let keys: MemberPublicKeys
    let rights: MemberRights
    let name: String
    let addedSequence: Int64
    let removedSequence: Int64?
}

struct MemberList: Encodable {
    let members: [MemberInfo]
    let formerMembers: [MemberInfo]
}

struct EventList: Encodable {
    let events: [MembershipEvent]
}

struct AppendedEvent: Encodable {
    let sequence: UInt64
    let hash: String
    let deviceToken: IssuedToken?
}

struct TokenInfo: Encodable {
    let id: String
    let member: MemberID
    let label: String
    let createdAt: Int64
    let expiresAt: Int64
    let revokedAt: Int64?
}

struct TokenList: Encodable {
    let tokens: [TokenInfo]
}

struct Challenge: Encodable {
    let challenge: String
    let expiresAt: Int64
}

struct ThreadInfo: Encodable {
    let id: ThreadID
    let createdBy: MemberID
    let createdAt: Int64
    let metadata: String?
}

struct ThreadList: Encodable {
    let threads: [ThreadInfo]
}

struct WrapList: Encodable {
    let wraps: [KeyWrap]
}

struct StoredCount: Encodable {
    let stored: Int
}

struct AppendedMessage: Encodable {
    let cursor: Int64
}

struct MessageEntry: Encodable {
    let cursor: Int64
    let message: EncryptedMessage
}

struct MessageList: Encodable {
    let messages: [MessageEntry]
    let next: Int64
}

struct NoteEntry: Encodable {
    let id: Int64
    let receivedAt: Int64
    let note: InboxNote
}

struct NoteList: Encodable {
    let notes: [NoteEntry]
    let next: Int64
}

struct NoteStored: Encodable {
    let id: Int64
}

struct Done: Encodable {
    let ok: Bool
}
