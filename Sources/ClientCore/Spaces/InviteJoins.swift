import SpaceModel

/// Someone who joined with one of this member's invites while another member (the space's bot)
/// attended it, read from the verified member list.
///
/// The bot signs a `member_added` event that carries the inviter's signed invite record, so the
/// member list itself says who let whom in, with the inviter's and the attendant's signatures.
/// That is how an inviter learns of joins to the invites it handed to the bot: the bot sends no
/// note of its own per join (a sealed, signed note per join cost the bot, the space server and
/// the inbox as much as a fifth of the whole join, and said nothing the list does not).
public struct InviteJoin: Sendable, Equatable {
    /// The event's place in the member list.
    public let sequence: UInt64
    /// The member who joined.
    public let member: MemberID
    /// Their display name as this device reads it (empty when they gave none or it is sealed
    /// to keys this device does not hold).
    public let name: String
    /// The inviter's signed record the attendant admitted them with.
    public let invite: SignedInvite
    /// The member who attended the invite and signed the event.
    public let attendant: MemberID
}

extension SpaceSession {
    /// The joins with this member's invites that another member attended, in the order of the
    /// member list, after the event at `after` (all of them when nil), and the list's last
    /// sequence (to pass as `after` next time).
    public func invitedJoins(after: UInt64?) throws(SpaceClientError) -> (joins: [InviteJoin], head: UInt64) {
        let (events, roster) = try verifiedChain()
        return (
            Self.invitedJoins(in: events, roster: roster, inviter: saved.member, after: after),
            events.last?.sequence ?? 0
        )
    }

    /// ``invitedJoins(after:)`` over a verified chain and its roster (names from `roster`).
    public static func invitedJoins(
        in events: [MembershipEvent], roster: Roster, inviter: MemberID, after: UInt64?
    ) -> [InviteJoin] {
        events.compactMap { event in
            guard after.map({ event.sequence > $0 }) ?? true, case .memberAdded(let record) = event.change,
                let invite = event.invite, invite.inviter == inviter, event.signer != inviter
            else { return nil }
            let name = roster.members[record.id]?.name ?? roster.formerMembers[record.id]?.name ?? record.name
            return InviteJoin(
                sequence: event.sequence, member: record.id, name: name, invite: invite,
                attendant: event.signer)
        }
    }
}
