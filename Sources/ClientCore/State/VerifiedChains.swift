import Foundation
import PAKE
import SpaceModel

/// The membership chain of each space as this device last verified it, kept between commands:
/// each command then fetches and verifies only the events after it, and the space server cannot
/// rewrite or roll back what this device already checked (``SpaceSession/verifiedChain(revealing:)``).
/// One file per space, `roster-<space>.sealed`, sealed (``SealedStateFile``, key `rosters.key`)
/// with bound data that names the space and its owner's key, so a file that was edited, damaged
/// or copied from another space does not open, and is never trusted: the chain is then verified
/// from the owner's key, as on a new device. The events are stored as the server's event list
/// (`{"events":[…]}`) so they are read back by the fast reader of that form.
public struct VerifiedChainStore: Sendable {
    public let directory: StateDirectory

    public init(directory: StateDirectory) {
        self.directory = directory
    }

    /// A chain as remembered: its events (from the owner's first event, hash-linked), and the
    /// file's bytes they were read from, so that saving learns whether another command saved since.
    public struct Remembered: Sendable {
        public let events: [MembershipEvent]
        let sealed: [UInt8]
    }

    func file(_ space: SpaceID, ownerKey: SigningPublicKey) -> SealedStateFile<SpaceWire.EventList> {
        SealedStateFile(
            directory: directory, keyFile: "rosters.key", sealedFile: "roster-\(space.base64URL).sealed",
            additionalData: Array("eleven/verified-chain/v1".utf8) + space.bytes + ownerKey.bytes,
            what: "member list this device checked")
    }

    /// The path of `space`'s file, for messages.
    public func path(_ space: SpaceID) -> String {
        directory.file("roster-\(space.base64URL).sealed")
    }

    /// The chain remembered for `space`, or nil when there is none or it does not open.
    public func load(_ space: SpaceID, ownerKey: SigningPublicKey) -> Remembered? {
        let file = file(space, ownerKey: ownerKey)
        guard let read = try? file.loadBytes(), let events = Self.decode(read.plain) else { return nil }
        return Remembered(events: events, sealed: read.sealed)
    }

    /// Saves `events`, a chain verified from `ownerKey`, as `space`'s, unless the file now holds a
    /// longer chain that extends them (another command saved it meanwhile: the longer one stays).
    /// `loaded`: what ``load(_:ownerKey:)`` gave before the events were fetched. Returns the
    /// sequence at which the file's chain and `events` differ, when they do: the server gave
    /// another command a different chain, and nothing is saved.
    public func remember(
        _ events: [MembershipEvent], space: SpaceID, ownerKey: SigningPublicKey, over loaded: Remembered?
    ) throws(LocalStateError) -> UInt64? {
        let file = file(space, ownerKey: ownerKey)
        return try directory.locked { () throws(LocalStateError) -> UInt64? in
            let current = try directory.read(file.sealedFile)
            // Nobody saved since this command read the file (or both found none): only then is
            // the file's chain known without opening it again.
            if current != loaded?.sealed, let current,
                let held = (try? file.opened(current)).flatMap(Self.decode)
            {
                if let fork = Self.divergence(held, events) { return fork }
                if held.count >= events.count { return nil }
            }
            guard let plain = try? JSONEncoder().encode(SpaceWire.EventList(events: events)) else {
                throw LocalStateError(.unwritable, "could not encode the \(file.what)")
            }
            try file.write(bytes: Array(plain))
            return nil
        }
    }

    /// The sequence of the first event where two chains from the same first event differ within
    /// the shorter one's length (they share every earlier event, by the hash links), or nil.
    static func divergence(_ a: [MembershipEvent], _ b: [MembershipEvent]) -> UInt64? {
        let shared = min(a.count, b.count)
        guard shared > 0, a[shared - 1].hash != b[shared - 1].hash else { return nil }
        return zip(a, b).first { $0.hash != $1.hash }?.0.sequence
    }

    /// The stored events; their keys were checked when they were first verified.
    private static func decode(_ plain: [UInt8]) -> [MembershipEvent]? {
        guard let events = try? SpaceWire.EventList.decode(plain, keysVouched: true), !events.isEmpty else {
            return nil
        }
        return events
    }
}
