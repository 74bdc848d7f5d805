import SpaceModel

// The inbox (encrypted member-to-member notes) and generic membership events of the space API
// (`Sources/SpaceServer/API.md`): what the sidecar bot and the members who send it invites use.

extension SpaceWire {
    /// `POST …/inbox`.
    public struct NoteRequest: Codable, Sendable {
        public let note: InboxNote
        public init(note: InboxNote) { self.note = note }
    }

    /// `POST …/inbox` with several notes, stored all or none (a server before this form answers
    /// `missing_field`).
    public struct NotesRequest: Codable, Sendable {
        public let notes: [InboxNote]
        public init(notes: [InboxNote]) { self.notes = notes }
    }

    /// The answer to a ``NotesRequest``: each note's id, in order.
    public struct NotesStored: Codable, Sendable {
        public let ids: [Int64]
    }

    /// One note in the caller's inbox.
    public struct NoteEntry: Codable, Sendable {
        public let id: Int64
        public let receivedAt: Int64
        public let note: InboxNote
    }

    /// `GET …/inbox`: pass `next` as `since` to continue.
    public struct NoteList: Codable, Sendable {
        public let notes: [NoteEntry]
        public let next: Int64
    }

    /// `POST …/inbox` answer.
    public struct NoteStored: Codable, Sendable {
        public let id: Int64
    }

    /// `DELETE …/inbox/{id}` answer.
    public struct Done: Codable, Sendable {
        public let ok: Bool
    }
}

extension SpaceClient {
    private func spacePath(_ space: SpaceID, _ parts: String...) -> String {
        (["/api/spaces", space.base64URL] + parts).joined(separator: "/")
    }

    /// Delivers a signed, sealed note to its recipient's inbox; returns the note's id there.
    @discardableResult
    public func postNote(_ note: InboxNote) throws(SpaceClientError) -> Int64 {
        let stored: SpaceWire.NoteStored = try call(
            .post, spacePath(note.space, "inbox"), body: SpaceWire.NoteRequest(note: note))
        return stored.id
    }

    /// Delivers several signed, sealed notes (to any recipients) in one request, all or none;
    /// returns their ids, in order.
    public func postNotes(_ notes: [InboxNote]) throws(SpaceClientError) -> [Int64] {
        guard let space = notes.first?.space else { return [] }
        let stored: SpaceWire.NotesStored = try call(
            .post, spacePath(space, "inbox"), body: SpaceWire.NotesRequest(notes: notes))
        guard stored.ids.count == notes.count else {
            throw SpaceClientError(
                .invalidResponse, code: "invalid_response",
                message: "\(server) answered for \(stored.ids.count) of \(notes.count) notes")
        }
        return stored.ids
    }

    /// The caller's notes after id `since`, oldest first.
    public func notes(_ space: SpaceID, since: Int64 = 0, limit: Int = 100) throws(SpaceClientError)
        -> SpaceWire.NoteList
    {
        try call(.get, spacePath(space, "inbox") + "?since=\(since)&limit=\(limit)")
    }

    /// Deletes one of the caller's notes.
    public func deleteNote(_ space: SpaceID, id: Int64) throws(SpaceClientError) {
        let _: SpaceWire.Done = try call(.delete, spacePath(space, "inbox", String(id)))
    }

    /// Stores key wraps and wrap bundles for several threads in one request (`POST …/wraps`).
    public func postWraps(_ space: SpaceID, wraps: [KeyWrap] = [], bundles: [KeyWrapBundle] = [])
        throws(SpaceClientError)
    {
        let _: SpaceWire.StoredCount = try call(
            .post, spacePath(space, "wraps"),
            body: SpaceWire.WrapsRequest(wraps: wraps, bundles: bundles.isEmpty ? nil : bundles))
    }

    /// Submits any membership event the caller signed (`POST …/events`).
    @discardableResult
    public func appendEvent(_ event: MembershipEvent) throws(SpaceClientError) -> SpaceWire.AppendedEvent {
        try call(.post, spacePath(event.space, "events"), body: SpaceWire.EventRequest(event: event))
    }
}

// The note to the inviter is sent, and its answer read, for every joiner the bot admits: written
// and read by hand (``DirectJSONWritable``, ``StrictJSONReadable``), as `JSONEncoder` writes and
// `JSONDecoder` reads them.

extension SpaceWire.NoteRequest: DirectJSONWritable {
    public func writeJSON(into out: inout [UInt8]) {
        out += #"{"note":"#.utf8
        WireJSON.write(note, into: &out)
        out.append(UInt8(ascii: "}"))
    }
}

extension SpaceWire.NotesRequest: DirectJSONWritable {
    public func writeJSON(into out: inout [UInt8]) {
        out += #"{"notes":["#.utf8
        for (index, note) in notes.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            WireJSON.write(note, into: &out)
        }
        out += "]}".utf8
    }
}

extension SpaceWire.NoteStored: StrictJSONReadable {
    private static let keys = StrictJSONReader.keys("id")

    public static func read(_ reader: inout StrictJSONReader) -> Self? {
        reader.onlyField(keys) { $0.int() }.map { Self(id: Int64($0)) }
    }
}

extension SpaceWire.NotesStored: StrictJSONReadable {
    private static let keys = StrictJSONReader.keys("ids")

    public static func read(_ reader: inout StrictJSONReader) -> Self? {
        reader.onlyField(keys) { $0.array { $0.int() } }.map { Self(ids: $0.map(Int64.init)) }
    }
}
