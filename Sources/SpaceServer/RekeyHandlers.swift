import SpaceModel

extension SpaceService {
    /// Stores a verified "member re-keyed" event's effect: the new identity becomes a member, the
    /// old one a former member whose tokens stop working.
    func applyRekey(old: MemberID, record: MemberRecord, space: SpaceID, sequence: UInt64) throws {
        try store.insertMember(record, space: space, sequence: sequence)
        try store.markRemoved(old, space: space, sequence: sequence)
        try store.revokeTokens(space: space, member: old, now: now)
    }
}
