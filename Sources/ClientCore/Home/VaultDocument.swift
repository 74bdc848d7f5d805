import Foundation
import SpaceModel

/// A Lamport stamp on a vault entry: a counter above every counter the device has seen, and the
/// device's tag to break ties, so two devices never make equal stamps.
public struct VaultClock: Codable, Sendable, Hashable, Comparable {
    public var counter: UInt64
    public var device: String

    public init(counter: UInt64, device: String) {
        self.counter = counter
        self.device = device
    }

    public static func < (lhs: VaultClock, rhs: VaultClock) -> Bool {
        (lhs.counter, lhs.device) < (rhs.counter, rhs.device)
    }
}

/// One saved space in the vault, or its tombstone once it was left (`saved == nil`). Entries
/// merge one by one: the later stamp wins, so edits to different spaces on two devices both
/// survive, and a removal is not undone by a device that has not heard of it.
public struct VaultEntry: Codable, Sendable, Equatable {
    public var space: SpaceID
    public var clock: VaultClock
    /// Where the space sits in the person's list (ascending; ties by space id).
    public var position: Double
    /// The space with its credentials and member identity; nil once removed.
    public var saved: SavedSpace?

    public var isRemoved: Bool { saved == nil }
}

/// A device's name as the person sees it (`eleven devices`), merged like an entry.
public struct VaultDeviceNote: Codable, Sendable, Equatable {
    public var anchor: AnchorID
    public var label: String
    public var clock: VaultClock
    public var removed: Bool
}

/// The plaintext of the vault: every saved space (with credentials, member identity keys, order
/// and stars), the account key, and device names. Pure value: merging, recording local edits and
/// moving entries take no I/O.
public struct VaultDocument: Codable, Sendable, Equatable {
    /// 2: the vault carries ``keyProof`` and ``sequence``. An eleven that knows only 1 refuses it
    /// (and asks to be updated) instead of uploading a copy without them.
    public static let currentVersion = 2

    public var version: Int
    /// The account key (base64url), so a device restored from the vault can check anchors.
    public var accountKey: String?
    /// ``VaultKey/proof(accountKey:)`` of the key this copy is sealed under (base64url): a device
    /// uses a key the home server hands it only when the vault sealed under it carries this proof.
    /// Nil in vaults written before keys were proven.
    public var keyProof: String?
    /// Grows by one at every upload. A device remembers the highest it saw, so a home server that
    /// serves an older copy is noticed. Nil (0) in vaults written before.
    public var sequence: UInt64?
    /// Sorted by space id.
    public private(set) var entries: [VaultEntry]
    /// Sorted by anchor id.
    public private(set) var devices: [VaultDeviceNote]

    public init() {
        version = Self.currentVersion
        entries = []
        devices = []
    }

    /// The highest counter in the document.
    var highestCounter: UInt64 {
        max(entries.map(\.clock.counter).max() ?? 0, devices.map(\.clock.counter).max() ?? 0)
    }

    private func nextClock(_ device: String) -> VaultClock {
        VaultClock(counter: highestCounter + 1, device: device)
    }

    /// The live spaces in the person's order.
    public var spaces: [SavedSpace] { liveEntries.compactMap(\.saved) }

    private var liveEntries: [VaultEntry] {
        entries.filter { !$0.isRemoved }.sorted { ($0.position, $0.space) < ($1.position, $1.space) }
    }

    /// Merges another copy: per space and per device, the later stamp wins.
    public func merged(with other: VaultDocument) -> VaultDocument {
        var result = self
        result.version = max(version, other.version)
        result.accountKey = accountKey ?? other.accountKey
        result.sequence = [sequence, other.sequence].compactMap { $0 }.max()
        // The syncing device sets the proof of the key it seals the merge under.
        result.keyProof = keyProof == other.keyProof ? keyProof : nil
        var byID = Dictionary(entries.map { ($0.space, $0) }) { $0.clock < $1.clock ? $1 : $0 }
        for entry in other.entries where byID[entry.space].map({ $0.clock < entry.clock }) ?? true {
            byID[entry.space] = entry
        }
        result.entries = byID.values.sorted { $0.space < $1.space }
        var notes = Dictionary(devices.map { ($0.anchor, $0) }) { $0.clock < $1.clock ? $1 : $0 }
        for note in other.devices where notes[note.anchor].map({ $0.clock < note.clock }) ?? true {
            notes[note.anchor] = note
        }
        result.devices = notes.values.sorted { $0.anchor < $1.anchor }
        return result
    }

    /// Records the device's current list as edits: new or changed spaces get a new stamp (a new
    /// space goes last), spaces missing from `local` become tombstones. The order of `local`
    /// is not read (``move(_:to:device:)`` changes order). Returns whether anything changed.
    @discardableResult
    public mutating func absorb(_ local: [SavedSpace], device: String) -> Bool {
        var counter = highestCounter
        var lastPosition = liveEntries.last?.position ?? 0
        var byID = Dictionary(entries.map { ($0.space, $0) }) { $0.clock < $1.clock ? $1 : $0 }
        let present = Set(local.map(\.space))
        var changed = false
        for space in local where byID[space.space]?.saved != space {
            counter += 1
            let position: Double
            if let existing = byID[space.space], !existing.isRemoved {
                position = existing.position
            } else {
                lastPosition += 1
                position = lastPosition
            }
            byID[space.space] = VaultEntry(
                space: space.space, clock: VaultClock(counter: counter, device: device), position: position,
                saved: space)
            changed = true
        }
        for entry in entries where !entry.isRemoved && !present.contains(entry.space) {
            counter += 1
            byID[entry.space] = VaultEntry(
                space: entry.space, clock: VaultClock(counter: counter, device: device),
                position: entry.position,
                saved: nil)
            changed = true
        }
        if changed { entries = byID.values.sorted { $0.space < $1.space } }
        return changed
    }

    /// Moves a live space to `index` (0-based, clamped) in the person's order; only that entry
    /// gets a new stamp. False when there is no such live space.
    @discardableResult
    public mutating func move(_ space: SpaceID, to index: Int, device: String) -> Bool {
        var live = liveEntries
        guard let from = live.firstIndex(where: { $0.space == space }) else { return false }
        let moving = live.remove(at: from)
        let target = min(max(0, index), live.count)
        let before = target > 0 ? live[target - 1].position : nil
        let after = target < live.count ? live[target].position : nil
        let position: Double =
            switch (before, after) {
            case (let b?, let a?): (b + a) / 2
            case (let b?, nil): b + 1
            case (nil, let a?): a - 1
            case (nil, nil): 1
            }
        guard let slot = entries.firstIndex(where: { $0.space == space }) else { return false }
        entries[slot] = VaultEntry(
            space: space, clock: nextClock(device), position: position, saved: moving.saved)
        return true
    }

    /// Names a device (or marks it removed).
    public mutating func note(
        device anchor: AnchorID, label: String, removed: Bool = false, by device: String
    ) {
        let note = VaultDeviceNote(anchor: anchor, label: label, clock: nextClock(device), removed: removed)
        devices.removeAll { $0.anchor == anchor }
        devices.append(note)
        devices.sort { $0.anchor < $1.anchor }
    }

    /// The JSON plaintext.
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { Array($0) } ?? []
    }

    /// Parses a vault plaintext; refuses one written by a newer client.
    public init(decoding bytes: [UInt8]) throws(LocalStateError) {
        struct Version: Decodable { let version: Int }
        guard let version = try? JSONDecoder().decode(Version.self, from: Data(bytes)) else {
            throw LocalStateError(.corrupt, "The saved spaces from your home server cannot be read.")
        }
        guard version.version <= Self.currentVersion else {
            throw LocalStateError(
                .tooNew,
                "Your saved spaces were written by a newer eleven (format \(version.version)). Update eleven."
            )
        }
        guard let document = try? JSONDecoder().decode(VaultDocument.self, from: Data(bytes)),
            Set(document.entries.map(\.space)).count == document.entries.count,
            Set(document.devices.map(\.anchor)).count == document.devices.count
        else {
            throw LocalStateError(.corrupt, "The saved spaces from your home server cannot be read.")
        }
        self = document
    }
}
