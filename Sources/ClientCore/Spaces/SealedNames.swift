import SpaceModel

// Members' names travel sealed (``SealedName``) under the key of the space's names thread, a
// thread that holds no messages and whose key every member is given: attendants wrap it to
// joiners like every shared thread, and every link carries it. A device opens the names with
// the keys wrapped to it; the space server keeps only the boxes.

extension SpaceSession {
    /// A new member record for `name`, sealed under the names thread (made first when the space,
    /// from before names were sealed, has none). It holds the name in clear too, for this
    /// device; the event carries and signs only the box.
    func sealedRecord(
        id: MemberID = .random(), keys: MemberPublicKeys, rights: MemberRights, name: String, roster: Roster
    ) throws(SpaceClientError) -> MemberRecord {
        sealedRecord(id: id, keys: keys, rights: rights, name: name, names: try namesThread(roster: roster))
    }

    /// A new member record for `name`, sealed under `names` (the names thread and its key).
    func sealedRecord(
        id: MemberID = .random(), keys: MemberPublicKeys, rights: MemberRights, name: String,
        names: (thread: ThreadID, key: ThreadKey)
    ) -> MemberRecord {
        MemberRecord(
            id: id, keys: keys, rights: rights, name: name,
            sealedName: SealedName.seal(
                name, key: names.key, space: saved.space, thread: names.thread, member: id))
    }

    /// The names thread this device holds, made now (wrapped to every current member) when the
    /// space has none yet: what moves a space from before names were sealed to sealed names
    /// for every name given from then on. When someone who held its key has left since it was
    /// made, it is continued first under a new key wrapped to the current members, so no name
    /// given from then on opens with a key a former member holds.
    func namesThread(
        roster: Roster, threadKeys known: [ThreadID: ThreadKey]? = nil,
        threads known2: [SpaceWire.ThreadInfo]? = nil
    ) throws(SpaceClientError) -> (thread: ThreadID, key: ThreadKey) {
        let keys: [ThreadID: ThreadKey]
        if let known { keys = known } else { keys = try threadKeys(roster: roster) }
        let threads: [SpaceWire.ThreadInfo]
        if let known2 { threads = known2 } else { threads = try client.threads(saved.space) }
        guard let names = Self.namesThreads(keys, threads: threads, roster: roster).last else {
            return try createThread(named: "", roster: roster, purpose: .names)
        }
        guard roster.hasLostMemberSince(names.metadata.keyMadeAt ?? 0) else {
            return (names.thread, names.key)
        }
        return try createThread(named: "", roster: roster, continues: names.thread, purpose: .names)
    }

    /// Gives `member` (this device's member by default) a new name, sealed under the names
    /// thread in a signed `member_renamed` event: the server stores only the box. Returns the
    /// record as it was.
    @discardableResult
    public func rename(_ member: MemberID? = nil, to name: String) throws(SpaceClientError) -> MemberRecord {
        let roster = try roster()
        let id = member ?? saved.member
        guard let previous = roster.members[id] else {
            throw SpaceClientError(
                .rejected, code: "unknown_member", message: "\(id) is not a member of \(saved.name).")
        }
        let names = try namesThread(roster: roster)
        let sealed = SealedName.seal(
            name, key: names.key, space: saved.space, thread: names.thread, member: id)
        let event = try signed { () throws(KeyModelError) in
            try roster.nextEvent(.memberRenamed(id, sealed), signedBy: identity)
        }
        _ = try client.appendEvent(event)
        return previous
    }

    /// Opens every sealed name in `roster` this device holds the key to (asking for its wraps
    /// only when some name is sealed, and opening only the wraps of the threads that seal them).
    /// A name that does not open stays empty: it shows as the member's id, as a name never
    /// given does.
    func revealNames(in roster: inout Roster, threadKeys known: [ThreadID: ThreadKey]? = nil) {
        let needed = roster.sealedNameThreads
        guard !needed.isEmpty, let keys = known ?? (try? threadKeys(roster: roster, only: needed)) else {
            return
        }
        let space = saved.space
        roster.revealNames { sealed, member in
            keys[sealed.thread].flatMap { sealed.open(key: $0, space: space, member: member) }
        }
    }
}
