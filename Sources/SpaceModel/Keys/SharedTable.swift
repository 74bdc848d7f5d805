/// A dictionary whose copies share all but what changed: entries sit in 1,024 small
/// dictionaries, two levels of 32 by the key's hash, so a change to a copy that others hold
/// copies two arrays of 32 references and one small dictionary instead of every entry.
///
/// A ``Roster`` is a value many hold at once (a cache, every admission in flight, the checks
/// deciding on it): with one `Dictionary` per field, each member added to a shared roster
/// copied the whole space (`docs/bot.md`, "Session 17"). Hashes are this process's
/// (`hashValue`), so the layout never leaves it; iteration order is unspecified, as a
/// dictionary's.
public struct SharedTable<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// Empty (`[]`) until a key falls under it; then 32 leaves.
    private var branches: [[[Key: Value]]] = Array(repeating: [], count: Self.width)
    public private(set) var count = 0

    static var width: Int { 32 }

    public init() {}

    public init(_ entries: [Key: Value]) {
        for (key, value) in entries { self[key] = value }
    }

    public var isEmpty: Bool { count == 0 }

    private static func place(_ key: Key) -> (Int, Int) {
        let hash = UInt(bitPattern: key.hashValue)
        return (Int(hash % 32), Int((hash / 32) % 32))
    }

    public subscript(key: Key) -> Value? {
        get {
            let (branch, leaf) = Self.place(key)
            let leaves = branches[branch]
            return leaves.isEmpty ? nil : leaves[leaf][key]
        }
        set {
            let (branch, leaf) = Self.place(key)
            if branches[branch].isEmpty {
                guard newValue != nil else { return }
                branches[branch] = Array(repeating: [:], count: Self.width)
            }
            // In place: only what another copy shares is copied (this branch and this leaf).
            let old = branches[branch][leaf].replaceValue(newValue, forKey: key)
            count += (newValue == nil ? 0 : 1) - (old == nil ? 0 : 1)
        }
    }

    /// Removes and returns the value for `key`.
    @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        let old = self[key]
        if old != nil { self[key] = nil }
        return old
    }

    /// The values, in no particular order (an array: to search them, search the table itself).
    public var values: [Value] { map(\.value) }

    /// The keys, in no particular order.
    public var keys: [Key] { map(\.key) }

    /// The entries as one dictionary (a copy of every entry).
    public var dictionary: [Key: Value] {
        Dictionary(uniqueKeysWithValues: lazy.map { ($0.key, $0.value) })
    }

    /// A table of the same keys with each value transformed.
    public func mapValues<T: Sendable>(_ transform: (Value) throws -> T) rethrows -> SharedTable<Key, T> {
        var result = SharedTable<Key, T>()
        for (key, value) in self { result[key] = try transform(value) }
        return result
    }

    /// How many of the 1,024 leaves `self` and `other` hold in the same storage (what a change
    /// to one of them did not copy). For tests.
    package func sharedLeaves(with other: Self) -> Int {
        var shared = 0
        for (mine, theirs) in zip(branches, other.branches) where !mine.isEmpty && !theirs.isEmpty {
            for (a, b) in zip(mine, theirs) where Self.identity(a) == Self.identity(b) { shared += 1 }
        }
        return shared
    }

    /// The storage a dictionary holds (a dictionary is one reference).
    private static func identity(_ leaf: [Key: Value]) -> UInt {
        withUnsafeBytes(of: leaf) { $0.load(as: UInt.self) }
    }
}

extension Dictionary {
    /// `updateValue`/`removeValue` as one call, returning the old value.
    fileprivate mutating func replaceValue(_ value: Value?, forKey key: Key) -> Value? {
        if let value { return updateValue(value, forKey: key) }
        return removeValue(forKey: key)
    }
}

extension SharedTable: Sequence {
    public struct Iterator: IteratorProtocol {
        private var branches: IndexingIterator<[[[Key: Value]]]>
        private var leaves: IndexingIterator<[[Key: Value]]>
        private var entries: Dictionary<Key, Value>.Iterator

        init(_ branches: [[[Key: Value]]]) {
            self.branches = branches.makeIterator()
            leaves = [].makeIterator()
            entries = [:].makeIterator()
        }

        public mutating func next() -> (key: Key, value: Value)? {
            while true {
                if let entry = entries.next() { return entry }
                if let leaf = leaves.next() {
                    entries = leaf.makeIterator()
                } else if let branch = branches.next() {
                    leaves = branch.makeIterator()
                } else {
                    return nil
                }
            }
        }
    }

    public func makeIterator() -> Iterator { Iterator(branches) }

    public var underestimatedCount: Int { count }
}

extension SharedTable: Equatable where Value: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.count == rhs.count && lhs.allSatisfy { rhs[$0.key] == $0.value }
    }
}

extension SharedTable: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (Key, Value)...) {
        for (key, value) in elements { self[key] = value }
    }
}
