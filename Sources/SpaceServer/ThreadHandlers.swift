import SpaceModel

// Threads, key wraps, messages, inbox notes.
extension SpaceService {
    func listThreads(_ space: SpaceRow) throws -> APIResponse {
        let counts = try store.messageCounts(space: space.id)
        return .json(
            ThreadList(
                threads: try store.threads(space: space.id).map {
                    ThreadInfo(
                        id: $0.id, createdBy: $0.createdBy, createdAt: $0.createdAt,
                        metadata: $0.metadata.map { Base64URL.encode($0) }, messages: counts[$0.id] ?? 0)
                }))
    }

    func createThread(_ request: APIRequest, space: SpaceRow, principal: Principal) throws -> APIResponse {
        let member = try requireMember(principal)
        let body = try decode(CreateThreadBody.self, from: request)
        var metadata: [UInt8]?
        if let text = body.metadata {
            let bytes = try bytes(text, field: "metadata")
            guard bytes.count <= configuration.maximumThreadMetadataBytes else {
                throw APIError(
                    413, .metadataTooLarge,
                    "Thread metadata is larger than \(configuration.maximumThreadMetadataBytes) bytes.")
            }
            metadata = bytes
        }
        guard try store.thread(body.thread, space: space.id) == nil else {
            throw APIError.conflict(.threadExists, "A thread with that id already exists.")
        }
        try store.insertThread(
            body.thread, space: space.id, createdBy: member.id, metadata: metadata, now: now)
        let stored = try storeWraps(body.wraps, space: space, thread: body.thread, member: member)
        return .json(StoredCount(stored: stored), status: 201)
    }

    func postWraps(_ request: APIRequest, space: SpaceRow, thread: ThreadRow, principal: Principal) throws
        -> APIResponse
    {
        let member = try requireMember(principal)
        let body = try decode(WrapsBody.self, from: request)
        guard !body.wraps.isEmpty else {
            throw APIError.badRequest(.invalidField, "Field wraps must hold at least one key wrap.")
        }
        guard try holdsKey(member.id, thread: thread.id, createdBy: thread.createdBy, space: space.id) else {
            throw APIError.forbidden(.notAuthorised, "Only members who hold this thread's key may wrap it.")
        }
        return .json(
            StoredCount(stored: try storeWraps(body.wraps, space: space, thread: thread.id, member: member)),
            status: 201)
    }

    /// Only someone who holds a thread's key can wrap it: its creator or a member with a wrap, or
    /// a member who took over such an identity (`member_rekeyed`: a person's remaining device
    /// moving them to a new identity wraps to itself the keys the old one held).
    private func holdsKey(_ member: MemberID, thread: ThreadID, createdBy: MemberID, space: SpaceID) throws
        -> Bool
    {
        try !heldKeys(member, of: [thread: createdBy], space: space).isEmpty
    }

    /// Which of `threads` (id to creator) `member` holds the key of, as
    /// ``holdsKey(_:thread:createdBy:space:)`` decides it, with one wrap lookup per identity
    /// for all of them rather than one per thread and identity.
    private func heldKeys(_ member: MemberID, of threads: [ThreadID: MemberID], space: SpaceID) throws
        -> Set<ThreadID>
    {
        let roster = try roster(space)
        var open = threads
        var held: Set<ThreadID> = []
        var identity: MemberID? = member
        var seen: Set<MemberID> = []
        while let current = identity, !open.isEmpty, seen.insert(current).inserted {
            for (thread, creator) in open where creator == current {
                held.insert(thread)
                open[thread] = nil
            }
            if !open.isEmpty {
                let wrapped = try store.wrapSigners(
                    space: space, threads: open.keys.sorted(), recipient: current)
                for thread in wrapped.keys where open.removeValue(forKey: thread) != nil {
                    held.insert(thread)
                }
            }
            identity = roster.newIdentities[current]
        }
        return held
    }

    /// `POST …/wraps`: wraps for several threads in one request (one transaction), each thread
    /// checked as by ``postWraps(_:space:thread:principal:)``, and wrap bundles (each one
    /// member's keys of several threads, ``storeBundle(_:space:member:roster:)``).
    func postWrapsForThreads(_ request: APIRequest, space: SpaceRow, principal: Principal) throws
        -> APIResponse
    {
        let member = try requireMember(principal)
        let body = try decode(WrapsBody.self, from: request)
        let stored = try storeKeys(
            wraps: body.wraps, bundles: body.bundles ?? [], space: space, member: member)
        return .json(StoredCount(stored: stored), status: 201)
    }

    /// What `POST …/wraps` stores, and `POST …/members` after its events: single wraps and wrap
    /// bundles made by `member` (the caller), at least one and at most `maximumWrapsPerRequest`
    /// keys in all. Returns how many keys were stored.
    func storeKeys(wraps: [KeyWrap], bundles: [KeyWrapBundle], space: SpaceRow, member: MemberRecord)
        throws -> Int
    {
        guard !wraps.isEmpty || !bundles.isEmpty else {
            throw APIError.badRequest(.invalidField, "Field wraps must hold at least one key wrap.")
        }
        guard
            wraps.count + bundles.reduce(0, { $0 + $1.entries.count })
                <= configuration.maximumWrapsPerRequest
        else {
            throw APIError(
                413, .tooManyWraps, "Send at most \(configuration.maximumWrapsPerRequest) wraps at once.")
        }
        var stored = 0
        for thread in Set(wraps.map(\.thread)).sorted() {
            try checkWrapping(thread, space: space, member: member)
            stored += try storeWraps(
                wraps.filter { $0.thread == thread }, space: space, thread: thread, member: member)
        }
        if !bundles.isEmpty {
            let roster = try roster(space.id)
            for bundle in bundles {
                stored += try storeBundle(bundle, space: space, member: member, roster: roster)
            }
        }
        return stored
    }

    /// `member` may wrap `thread`'s key: the thread is in the space and the member holds its key.
    private func checkWrapping(_ thread: ThreadID, space: SpaceRow, member: MemberRecord) throws {
        try WrapPermission(of: member, for: [thread], space: space, service: self).check(thread)
    }

    /// What ``checkWrapping(_:space:member:)`` checks, looked up for several threads at once
    /// (a bundle names every thread of the space) and checked one thread at a time, in the
    /// caller's order, so the first failing thread gives the error it gave alone.
    private struct WrapPermission {
        let rows: [ThreadID: ThreadRow]
        let held: Set<ThreadID>

        init(of member: MemberRecord, for threads: [ThreadID], space: SpaceRow, service: SpaceService) throws
        {
            rows = try service.store.threads(threads, space: space.id)
            held = try service.heldKeys(member.id, of: rows.mapValues(\.createdBy), space: space.id)
        }

        func check(_ thread: ThreadID) throws {
            guard rows[thread] != nil else {
                throw APIError.notFound(.unknownThread, "A wrap names a thread this space does not have.")
            }
            guard held.contains(thread) else {
                throw APIError.forbidden(
                    .notAuthorised, "Only members who hold a thread's key may wrap it.")
            }
        }
    }

    /// Checks and stores a wrap bundle made by `member`: it names this space, is signed by the
    /// caller and verifies against the roster (one signature for all its threads), and every
    /// thread is one the caller may wrap, for which the recipient has no usable wrap yet.
    private func storeBundle(_ bundle: KeyWrapBundle, space: SpaceRow, member: MemberRecord, roster: Roster)
        throws -> Int
    {
        guard bundle.space == space.id else {
            throw APIError.badRequest(.wrongContext, "A wrap bundle is for another space.")
        }
        guard bundle.signer == member.keys.signing else {
            throw APIError.forbidden(
                .signerMismatch, "A wrap bundle is not signed by the member sending it.")
        }
        try check { () throws(KeyModelError) in try bundle.verify(against: roster) }
        // Looked up for all threads first (three statements, not three per thread), checked
        // thread by thread as before: deleting one thread's stale wrap changes no other
        // thread's rows.
        let threads = bundle.threads
        let permission = try WrapPermission(of: member, for: threads, space: space, service: self)
        let signers = try store.wrapSigners(space: space.id, threads: threads, recipient: bundle.recipient)
        for thread in threads {
            try permission.check(thread)
            try clearStaleWrap(
                space: space.id, thread: thread, recipient: bundle.recipient, signer: signers[thread],
                roster: roster)
        }
        try store.insertBundle(bundle, now: now)
        for thread in threads { pendingChanges.append(.wraps(space: space.id, thread: thread)) }
        return bundle.entries.count
    }

    /// Refuses a second wrap of `thread` for `recipient`, unless the stored one's signer has left
    /// (clients refuse wraps signed by former members, so a current member may then replace it):
    /// that one is deleted. `signer` is the stored wrap's signing key, nil without one.
    private func clearStaleWrap(
        space: SpaceID, thread: ThreadID, recipient: MemberID, signer: [UInt8]?, roster: Roster
    ) throws {
        guard let signer else { return }
        guard let key = try? SigningPublicKey(bytes: signer), roster.currentMember(signingKey: key) == nil
        else {
            throw APIError.conflict(.wrapExists, "Member \(recipient) already has a wrap for this thread.")
        }
        try store.deleteWrap(space: space, thread: thread, recipient: recipient)
    }

    /// Checks and stores wraps made by `member` for one thread: each names this space and thread,
    /// is signed by the caller, verifies against the roster, and is addressed to a current member
    /// who has no usable wrap for the thread yet.
    private func storeWraps(_ wraps: [KeyWrap], space: SpaceRow, thread: ThreadID, member: MemberRecord)
        throws -> Int
    {
        guard wraps.count <= configuration.maximumWrapsPerRequest else {
            throw APIError(
                413, .tooManyWraps, "Send at most \(configuration.maximumWrapsPerRequest) wraps at once.")
        }
        let roster = try roster(space.id)
        var seen = Set<MemberID>()
        for (index, wrap) in wraps.enumerated() {
            guard wrap.space == space.id, wrap.thread == thread else {
                throw APIError.badRequest(.wrongContext, "Wrap \(index) is for another space or thread.")
            }
            guard wrap.signer == member.keys.signing else {
                throw APIError.forbidden(
                    .signerMismatch, "Wrap \(index) is not signed by the member sending it.")
            }
            try check { () throws(KeyModelError) in try wrap.verify(against: roster) }
            guard seen.insert(wrap.recipient).inserted else {
                throw APIError.conflict(.wrapExists, "Wrap \(index) repeats a recipient of this request.")
            }
            try clearStaleWrap(
                space: space.id, thread: thread, recipient: wrap.recipient,
                signer: try store.wrapSigner(space: space.id, thread: thread, recipient: wrap.recipient),
                roster: roster)
            try store.insertWrap(wrap, now: now)
        }
        if !wraps.isEmpty { pendingChanges.append(.wraps(space: space.id, thread: thread)) }
        return wraps.count
    }

    func ownWraps(_ space: SpaceRow, thread: ThreadRow?, principal: Principal) throws -> APIResponse {
        let member = try requireMember(principal)
        let bundles = try store.bundles(space: space.id, recipient: member.id, thread: thread?.id)
        return .json(
            WrapList(
                wraps: try store.wraps(space: space.id, recipient: member.id, thread: thread?.id),
                bundles: bundles.isEmpty ? nil : bundles))
    }

    func postMessage(_ request: APIRequest, space: SpaceRow, thread: ThreadRow, principal: Principal) throws
        -> APIResponse
    {
        let member = try requireMember(principal)
        let message = try decode(MessageBody.self, from: request).message
        guard message.space == space.id, message.thread == thread.id else {
            throw APIError.badRequest(.wrongContext, "The message is for another space or thread.")
        }
        guard message.author == member.id else {
            throw APIError.forbidden(.authorMismatch, "A member may only post messages as themselves.")
        }
        guard message.ciphertext.count <= configuration.maximumMessageBytes else {
            throw APIError(
                413, .messageTooLarge,
                "The message is larger than \(configuration.maximumMessageBytes) bytes.")
        }
        try check { () throws(KeyModelError) in try message.verifySignature(authorKey: member.keys.signing) }
        guard try !store.messageExists(space: space.id, thread: thread.id, id: message.id) else {
            throw APIError.conflict(.messageExists, "A message with that id was already posted.")
        }
        let cursor = try store.insertMessage(message, now: now)
        pendingChanges.append(.message(space: space.id, thread: thread.id, cursor: cursor))
        return .json(AppendedMessage(cursor: cursor), status: 201)
    }

    func listMessages(_ request: APIRequest, space: SpaceRow, thread: ThreadRow, principal: Principal) throws
        -> APIResponse
    {
        _ = try requireMember(principal)
        let since = try integerQuery(request, "since", default: 0)
        let limit = try pageSize(request)
        let rows = try store.messages(space: space.id, thread: thread.id, since: since, limit: limit)
        return .json(
            MessageList(
                messages: rows.map { MessageEntry(cursor: $0.0, message: $0.1) }, next: rows.last?.0 ?? since)
        )
    }

    /// `POST …/inbox`: one note (`{"note"}`), or several (`{"notes"}`: an attendant's notes to
    /// several inviters in one request), stored all or none.
    func postNote(_ request: APIRequest, space: SpaceRow, principal: Principal) throws -> APIResponse {
        let member = try requireMember(principal)
        let body = try decode(NoteBody.self, from: request)
        guard let notes = body.notes else {
            guard let note = body.note else {
                throw APIError.badRequest(.missingField, "Field note is missing.")
            }
            return .json(NoteStored(id: try storeNote(note, space: space, sender: member)), status: 201)
        }
        try checkSeveral(
            notes, alsoOne: body.note != nil, field: "note",
            limit: configuration.maximumNotesPerRequest, tooMany: .tooManyNotes)
        var ids: [Int64] = []
        for (index, note) in notes.enumerated() {
            do {
                ids.append(try storeNote(note, space: space, sender: member))
            } catch let error as APIError where notes.count > 1 {
                throw APIError(error.status, reporting: error.code, "Note \(index): \(error.message)")
            }
        }
        return .json(NotesStored(ids: ids), status: 201)
    }

    /// Checks one note (for this space, sent and signed by the caller, to a current member) and
    /// stores it.
    private func storeNote(_ note: InboxNote, space: SpaceRow, sender member: MemberRecord) throws -> Int64 {
        guard note.space == space.id else {
            throw APIError.badRequest(.wrongContext, "The note is for another space.")
        }
        guard note.sender == member.id else {
            throw APIError.forbidden(.senderMismatch, "A member may only send notes as themselves.")
        }
        try check { () throws(KeyModelError) in try note.verifySignature(senderKey: member.keys.signing) }
        guard let recipient = try store.member(space: space.id, id: note.recipient),
            recipient.removedSequence == nil
        else {
            throw APIError.notFound(.unknownMember, "The note's recipient is not a member of this space.")
        }
        let id = try store.insertNote(note, now: now)
        pendingChanges.append(.note(space: space.id, recipient: note.recipient, id: id))
        return id
    }

    func listInbox(_ request: APIRequest, space: SpaceRow, principal: Principal) throws -> APIResponse {
        let member = try requireMember(principal)
        let since = try integerQuery(request, "since", default: 0)
        let limit = try pageSize(request)
        let rows = try store.notes(space: space.id, recipient: member.id, since: since, limit: limit)
        return .json(
            NoteList(
                notes: rows.map { NoteEntry(id: $0.0, receivedAt: $0.1, note: $0.2) },
                next: rows.last?.0 ?? since))
    }

    func deleteNote(_ text: Substring, space: SpaceRow, principal: Principal) throws -> APIResponse {
        let member = try requireMember(principal)
        guard let id = Int64(text), try store.deleteNote(id: id, space: space.id, recipient: member.id) else {
            throw APIError.notFound(.unknownNote, "There is no such note in your inbox.")
        }
        return .json(Done(ok: true))
    }
}
