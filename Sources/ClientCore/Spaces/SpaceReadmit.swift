import SpaceModel

// The re-invite floor (rung 4 of account recovery): someone who lost every device joins again
// with a new identity, and a member with the right to invite re-admits them in place of their
// old one: a signed "member re-keyed" event, and every thread key (history included) wrapped to
// the new keys, so nobody is silently swapped and the history reads again.

extension SpaceSession {
    /// Replaces `old`'s keys with `keys` (a new member id, the same rights), then wraps every
    /// thread key this device holds to the new identity. Returns the new record.
    public func readmit(_ old: MemberID, keys: MemberPublicKeys, name: String) throws(SpaceClientError)
        -> MemberRecord
    {
        let (record, roster) = try rekey(old, keys: keys, name: name)
        try wrapThreadKeys(to: record, roster: roster)
        return record
    }

    /// The signed "member re-keyed" event alone (no wraps): `old`'s place and rights go to a new
    /// record with `keys`. Returns it and the roster after the event.
    func rekey(_ old: MemberID, keys: MemberPublicKeys, name: String) throws(SpaceClientError)
        -> (record: MemberRecord, roster: Roster)
    {
        var roster = try roster()
        guard let previous = roster.members[old] else {
            throw SpaceClientError(
                .rejected, code: "unknown_member", message: "\(old) is not a member of \(saved.name).")
        }
        if let existing = roster.members.values.first(where: { $0.keys == keys }) {
            throw SpaceClientError(
                .rejected, code: "already_member",
                message: "That key already belongs to \(Self.label(existing)) in \(saved.name).")
        }
        let record = try sealedRecord(
            keys: keys, rights: roster.rights(of: old), name: name.isEmpty ? previous.name : name,
            roster: roster)
        let event = try signed { () throws(KeyModelError) in
            try roster.nextEvent(.memberRekeyed(old: old, new: record), signedBy: identity)
        }
        _ = try client.addMember(saved.space, event: event)
        try signed { () throws(KeyModelError) in try roster.apply(event) }
        return (record, roster)
    }

    /// Wraps every thread key this device holds to `record` (so they can read the history); with
    /// `sharedOnly`, only those of the whole space's threads (``ThreadMetadata/isShared``).
    func wrapThreadKeys(to record: MemberRecord, roster: Roster, sharedOnly: Bool = false)
        throws(SpaceClientError)
    {
        var keys = try threadKeys(roster: roster)
        if sharedOnly {
            keys = Self.sharedThreadKeys(keys, threads: try client.threads(saved.space), roster: roster)
        }
        for (thread, key) in keys {
            let wrap = identity.wrap(key, for: record, in: saved.space, thread: thread)
            try client.postWraps(saved.space, thread: thread, wraps: [wrap])
        }
    }

    /// "Sam has a new identity" for each member re-admitted with new keys.
    public static func newIdentityNotes(_ roster: Roster) -> [String] {
        roster.newIdentities.keys.sorted().compactMap { id in
            roster.members[id].map { "\(label($0)) has a new identity" }
        }
    }
}

extension SpaceSession {
    /// Moves this member to a new identity, made here: a "member re-keyed" event signed with the
    /// current identity, a token for the new one, and every thread key this device holds wrapped
    /// to it. What a person's remaining device does after removing another of their devices,
    /// which holds the current identity too: that identity becomes a former member (its tokens
    /// are refused, and each shared thread continues under a new key at its next message,
    /// `docs/key-model.md`). Returns the saved space to store and the identity that now acts in it.
    public func moveToNewIdentity(deviceLabel: String? = nil) throws(SpaceClientError)
        -> (saved: SavedSpace, identity: DeviceIdentity)
    {
        let before = try roster()
        // Opened while the current identity is still a member; wrapped to the new one below.
        let keys = try threadKeys(roster: before)
        let fresh = DeviceIdentity.generate()
        let (record, _) = try rekey(saved.member, keys: fresh.publicKeys, name: "")
        var client = try SpaceClient(server: saved.server)
        let token = try client.signIn(saved.space, as: record.id, identity: fresh, label: deviceLabel)
        client.token = token.token
        var moved = saved
        moved.member = record.id
        moved.deviceToken = token.token
        for (thread, key) in keys.sorted(by: { $0.key < $1.key }) {
            try client.postWraps(
                saved.space, thread: thread,
                wraps: [fresh.wrap(key, for: record, in: saved.space, thread: thread)])
        }
        return (moved, fresh)
    }
}
