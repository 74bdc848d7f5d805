import SpaceModel

// The inbox (encrypted member-to-member notes) and generic membership events of the space API
// (`Sources/SpaceServer/API.md`): what the sidecar bot and the members who send it invites use.

extension SpaceWire {
    /// `POST …/inbox`.
    public struct NoteRequest: Codable, Sendable {
        public let note: InboxNote
        public init(note: InboxNote) { self.note = note }
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
