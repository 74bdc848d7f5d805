import Support

/// Byte strings that passed a check in this process, so the same bytes met again are not checked
/// again: public keys found valid (``validSigningKeys``, ``validEncryptionKeys``; the same
/// member's key is in every wrap, event and note, and validating one costs a scalar
/// multiplication) and signatures verified (``SignatureMemo``). Only what passed is kept, so
/// bytes that fail are always checked (and refused) in full. Bounded: when full it starts over.
final class CheckedBytes: Sendable {
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

    /// Whether `bytes` passed before (tests).
    func holds(_ bytes: [UInt8]) -> Bool {
        known.withLock { $0.contains(bytes) }
    }

    /// How many are remembered (tests).
    var count: Int { known.withLock { $0.count } }

    static let validSigningKeys = CheckedBytes()
    static let validEncryptionKeys = CheckedBytes()
}
