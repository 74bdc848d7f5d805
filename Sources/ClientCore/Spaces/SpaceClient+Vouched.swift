import SpaceModel

extension SpaceClient {
    /// ``events(_:)`` decoded without checking member keys (``CodingUserInfoKey/memberKeysVouched``),
    /// for ``Roster/verify(events:ownerKey:vouchedThrough:)`` only.
    public func vouchedEvents(_ space: SpaceID) throws(SpaceClientError) -> [MembershipEvent] {
        try events(space, userInfo: [.memberKeysVouched: true])
    }

    /// The event the server holds at `sequence` (nil when it holds none there): a joiner whose
    /// grant vouches for its members checks only its own event (``JoinGrant/open(identity:deviceLabel:now:nameplate:)``).
    public func event(_ space: SpaceID, at sequence: UInt64) throws(SpaceClientError) -> MembershipEvent? {
        try eventPage(
            "/api/spaces/\(space.base64URL)/events?from=\(sequence)&limit=1", keysVouched: false
        ).first
    }
}
