import Support

/// Public keys already found valid in this process, so a key seen again (the same member's key
/// in every wrap, event and note) is not validated again: validating costs a scalar
/// multiplication (tens of microseconds), a lookup does not. Only keys that passed are kept, so
/// an invalid key is always checked (and refused) in full. Bounded: when full it starts over.
final class ValidatedKeys: Sendable {
    private let known = Locked(Set<[UInt8]>())
    private let capacity: Int

    init(capacity: Int = 8192) {
        self.capacity = capacity
    }

    /// Whether `bytes` passed `validate` before in this process; otherwise runs `validate` and
    /// remembers a pass.
    func check(_ bytes: [UInt8], _ validate: ([UInt8]) -> Bool) -> Bool {
        if known.withLock({ $0.contains(bytes) }) { return true }
        guard validate(bytes) else { return false }
        remember(bytes)
        return true
    }

    /// Records `bytes` as valid without checking: only for a key this process made itself
    /// (``DeviceIdentity/generate()``), which is valid by construction. A joiner reads its own
    /// fresh keys back in its member record; checking them again cost a scalar multiplication
    /// each (an Ed25519 subgroup check and an X25519 multiplication) per join.
    func remember(_ bytes: [UInt8]) {
        known.withLock { set in
            if set.count >= capacity { set.removeAll(keepingCapacity: true) }
            set.insert(bytes)
        }
    }

    /// Whether `bytes` is among the keys known valid (tests).
    func holds(_ bytes: [UInt8]) -> Bool {
        known.withLock { $0.contains(bytes) }
    }

    static let signing = ValidatedKeys()
    static let encryption = ValidatedKeys()
}
