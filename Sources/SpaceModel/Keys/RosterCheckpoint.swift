import Foundation

/// A point of a space's membership chain that a party the reader already trusts vouches it
/// verified from the owner's key: the event at `sequence` has hash `hash`. Because every event
/// names its predecessor's hash, the hash pins every event up to that one, exactly as they were
/// when the voucher checked them.
///
/// The attendant of a join sends one in the grant (the joiner's own `member_added` event): the
/// joiner takes the owner's key from that same grant, so the attendant is already the party it
/// trusts for which space it joins (`docs/join-protocol.md`, "What the joiner verifies").
public struct ChainCheckpoint: Codable, Sendable, Hashable {
    public let sequence: UInt64
    public let hash: EventHash

    public init(sequence: UInt64, hash: EventHash) {
        self.sequence = sequence
        self.hash = hash
    }

    /// The checkpoint naming `event`.
    public init(_ event: MembershipEvent) {
        self.init(sequence: event.sequence, hash: event.hash)
    }

    private enum CodingKeys: String, CodingKey {
        case sequence, hash
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sequence = try c.decode(UInt64.self, forKey: .sequence)
        hash = try c.decodeChecked(forKey: .hash) { b throws(KeyModelError) in try EventHash(bytes: b) }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sequence, forKey: .sequence)
        try c.encodeBytes(hash.bytes, forKey: .hash)
    }
}

extension CodingUserInfoKey {
    /// Set to `true` on a decoder, member keys are decoded without checking that they are usable
    /// points (their lengths are still checked): only for a chain that
    /// ``Roster/verify(events:ownerKey:vouchedThrough:)`` then checks, which checks the keys of
    /// every event the checkpoint does not pin.
    public static let memberKeysVouched = CodingUserInfoKey(rawValue: "eleven.memberKeysVouched")!
}

extension Roster {
    /// Verifies a chain whose events up to `checkpoint` someone the caller trusts already verified
    /// from `ownerKey`: those events must hash-link from the owner's first event to exactly the
    /// checkpoint's hash and obey every membership rule, but their signatures and keys are not
    /// checked again (the hash pins them to what the voucher checked). Every later event is
    /// verified in full, keys included. A chain that ends before the checkpoint, or does not reach
    /// its hash, is refused.
    public static func verify(
        events: [MembershipEvent], ownerKey: SigningPublicKey, vouchedThrough checkpoint: ChainCheckpoint
    ) throws(KeyModelError) -> Roster {
        guard let first = events.first else {
            throw KeyModelError(.invalidEvent, "There are no membership events to verify.")
        }
        guard case .spaceCreated(let owner) = first.change, owner.keys.signing == ownerKey else {
            throw KeyModelError(.ownerKeyMismatch, "This space was not created by the expected owner.")
        }
        try checkKeys(of: first)
        var roster = try Roster(genesis: first)
        try roster.checkHead(checkpoint)
        for event in events.dropFirst() {
            let pinned = event.sequence <= checkpoint.sequence
            if !pinned { try checkKeys(of: event) }
            try roster.apply(event, verifyingSignatures: !pinned)
            try roster.checkHead(checkpoint)
        }
        guard roster.nextSequence > checkpoint.sequence else {
            throw KeyModelError(
                .eventChainBroken, "The member list ends before the point the attendant vouched for.")
        }
        return roster
    }

    /// At the checkpoint's sequence, the head must be its hash.
    private func checkHead(_ checkpoint: ChainCheckpoint) throws(KeyModelError) {
        guard nextSequence - 1 == checkpoint.sequence, head != checkpoint.hash else { return }
        throw KeyModelError(
            .eventChainBroken, "The member list differs from the one the attendant vouched for.")
    }

    /// The keys an event introduces are usable points (decoding checks them unless told not to).
    private static func checkKeys(of event: MembershipEvent) throws(KeyModelError) {
        switch event.change {
        case .spaceCreated(let record), .memberAdded(let record), .memberRekeyed(_, let record):
            _ = try EncryptionPublicKey(bytes: record.keys.encryption.bytes)
            _ = try SigningPublicKey(bytes: record.keys.signing.bytes)
        case .memberRemoved, .rightsChanged, .memberRenamed:
            break
        }
    }
}

extension MembershipChange {
    /// Whether this change makes `member` a member (created, added or re-keyed to).
    package func adds(_ member: MemberID) -> Bool {
        switch self {
        case .spaceCreated(let record), .memberAdded(let record), .memberRekeyed(_, let record):
            record.id == member
        case .memberRemoved, .rightsChanged, .memberRenamed: false
        }
    }
}
