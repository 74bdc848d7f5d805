import SpaceModel

// JSON bodies of the space API (see API.md). Byte strings are base64url without padding. The
// bodies clients also use live in SpaceModel (`SpaceWire`).

typealias CreateSpaceBody = SpaceWire.CreateSpaceRequest
typealias EventBody = SpaceWire.EventRequest
typealias ChallengeBody = SpaceWire.ChallengeRequest
typealias SignInBody = SpaceWire.SignInRequest
typealias CreateThreadBody = SpaceWire.CreateThreadRequest
typealias WrapsBody = SpaceWire.WrapsRequest
typealias MessageBody = SpaceWire.MessageRequest
typealias IssuedToken = SpaceWire.IssuedToken
typealias EventHead = SpaceWire.EventHead
typealias CreatedSpace = SpaceWire.CreatedSpace
typealias SpaceInfo = SpaceWire.SpaceInfo
typealias MemberInfo = SpaceWire.MemberInfo
typealias MemberList = SpaceWire.MemberList
typealias EventList = SpaceWire.EventList
typealias AppendedEvent = SpaceWire.AppendedEvent
typealias AppendedEvents = SpaceWire.AppendedEvents
typealias Challenge = SpaceWire.Challenge
typealias SignedIn = SpaceWire.SignedIn
typealias ThreadInfo = SpaceWire.ThreadInfo
typealias ThreadList = SpaceWire.ThreadList
typealias WrapList = SpaceWire.WrapList
typealias StoredCount = SpaceWire.StoredCount
typealias AppendedMessage = SpaceWire.AppendedMessage
typealias MessageEntry = SpaceWire.MessageEntry
typealias MessageList = SpaceWire.MessageList

typealias MembersBody = SpaceWire.MembersRequest

struct AvatarBody: Decodable {
    let contentType: String
    let data: String
}

struct BrandingBody: Decodable {
    let name: String?
    let avatar: AvatarBody?
    let removeAvatar: Bool?
}

struct TokenRequestBody: Decodable {
    let label: String?
    let expiresIn: Int64?
}

/// `{"note"}`, or several notes (`{"notes"}`, stored all or none).
struct NoteBody: Decodable {
    let note: InboxNote?
    let notes: [InboxNote]?
}

extension NoteBody: StrictJSONReadable {
    private static let keys = StrictJSONReader.keys("note", "notes")

    static func read(_ reader: inout StrictJSONReader) -> Self? {
        var note: InboxNote?
        var notes: [InboxNote]?
        var object = StrictJSONReader.ObjectScan(keys: keys)
        while let key = reader.nextKey(&object) {
            let read =
                key == 0
                ? StrictJSONReader.got(&note, reader.inboxNote())
                : StrictJSONReader.got(&notes, reader.array { $0.inboxNote() })
            if !read { return nil }
        }
        return object.failed ? nil : Self(note: note, notes: notes)
    }
}

struct GroupInfo: Encodable {
    let space: SpaceID
    let name: String
    let avatar: String?
}

struct RelayInfo: Encodable {
    let relay: String
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

struct NoteEntry: Encodable {
    let id: Int64
    let receivedAt: Int64
    let note: InboxNote
}

struct NoteList: Encodable {
    let notes: [NoteEntry]
    let next: Int64
}

struct NoteStored: Encodable, DirectJSONWritable {
    let id: Int64

    func writeJSON(into out: inout [UInt8]) {
        out += #"{"id":"#.utf8
        out += String(id).utf8
        out.append(UInt8(ascii: "}"))
    }
}

/// The answer to `{"notes"}`: each note's id, in order.
struct NotesStored: Encodable, DirectJSONWritable {
    let ids: [Int64]

    func writeJSON(into out: inout [UInt8]) {
        out += #"{"ids":["#.utf8
        for (index, id) in ids.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += String(id).utf8
        }
        out += "]}".utf8
    }
}

struct Done: Encodable {
    let ok: Bool
}
