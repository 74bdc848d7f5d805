import Foundation
import SpaceModel

extension SpaceSession {
    /// The membership chain and its roster, verified from the saved owner key. With ``chains``,
    /// the chain this device verified before is rebuilt from its sealed copy without checking
    /// its signatures again, and only the server's events from its last one on are fetched: that
    /// last one must come back unchanged (else the server rewrote it, `roster_fork`) and exist
    /// (else the server dropped it, `roster_rollback`), and every later event is verified in full
    /// and remembered. Without a copy that opens, the whole chain is verified and remembered.
    /// `revealing`: open the sealed names (``verifiedRoster(_:revealing:)``).
    public func verifiedChain(revealing: Bool = true) throws(SpaceClientError) -> (
        events: [MembershipEvent], roster: Roster
    ) {
        guard let chains else {
            let events = try client.events(saved.space)
            return (events, try verifiedRoster(events, revealing: revealing))
        }
        let ownerKey = try ownerKey()
        let remembered = chains.load(saved.space, ownerKey: ownerKey)
        var events: [MembershipEvent]
        var roster: Roster
        if let remembered, let head = remembered.events.last,
            let rebuilt = try? Roster.verify(
                events: remembered.events, ownerKey: ownerKey, vouchedThrough: ChainCheckpoint(head))
        {
            let newer = try client.events(saved.space, from: Int(head.sequence))
            try continues(newer, from: head, store: chains)
            roster = rebuilt
            try checkedChain { () throws(KeyModelError) in
                for event in newer.dropFirst() { try roster.apply(event) }
            }
            events = remembered.events + newer.dropFirst()
            if newer.count > 1 { try remember(events, over: remembered, in: chains, ownerKey: ownerKey) }
        } else {
            events = try client.events(saved.space)
            roster = try verifiedRoster(events, revealing: false)
            try remember(events, over: remembered, in: chains, ownerKey: ownerKey)
        }
        if revealing { revealNames(in: &roster) }
        return (events, roster)
    }

    /// The server's events from the remembered `head`'s sequence on begin with `head` itself.
    private func continues(_ newer: [MembershipEvent], from head: MembershipEvent, store: VerifiedChainStore)
        throws(SpaceClientError)
    {
        guard let first = newer.first else {
            throw SpaceClientError(
                .verification, code: "roster_rollback",
                message: "\(client.server) serves a member list of \(saved.name) that ends before change "
                    + "\(head.sequence), which this device already checked: it is hiding later changes "
                    + "(a removal, say). Nothing it sent was used. \(Self.advice(store, saved.space))")
        }
        guard first.sequence == head.sequence, first.hash == head.hash else {
            throw fork(at: head.sequence, store)
        }
    }

    /// Remembers `events`, verified just now; a chain another command remembered meanwhile that
    /// differs from them means the server served two histories.
    private func remember(
        _ events: [MembershipEvent], over remembered: VerifiedChainStore.Remembered?,
        in store: VerifiedChainStore,
        ownerKey: SigningPublicKey
    ) throws(SpaceClientError) {
        // A copy that cannot be written costs only speed: the next call starts from an older
        // point (or the start) and verifies everything after it.
        guard
            let sequence = try? store.remember(
                events, space: saved.space, ownerKey: ownerKey, over: remembered)
        else { return }
        throw self.fork(at: sequence, store)
    }

    private func fork(at sequence: UInt64, _ store: VerifiedChainStore) -> SpaceClientError {
        SpaceClientError(
            .verification, code: "roster_fork",
            message: "\(client.server) now serves a member list of \(saved.name) whose change \(sequence) "
                + "differs from the one this device already checked: the server rewrote its history. "
                + "Nothing it sent was used. \(Self.advice(store, saved.space))")
    }

    private static func advice(_ store: VerifiedChainStore, _ space: SpaceID) -> String {
        "Tell the space's owner. Only if they restored the server from an older copy, move "
            + "\(store.path(space)) away to check the list from the start."
    }
}
