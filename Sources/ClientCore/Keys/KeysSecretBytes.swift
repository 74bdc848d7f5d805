import CSodium

/// Secret bytes owned by the key model: never printed, compared in constant time, wiped when the
/// last reference goes away.
///
/// This is the key model's own small secret type, kept until PAKE's `SecretBytes` can be shared;
/// the two will be unified then (search for `KeysSecretBytes`).
public final class KeysSecretBytes: @unchecked Sendable {
    // Immutable after initialisation, so sharing across threads is safe.
    private let storage: UnsafeMutableRawBufferPointer

    /// Number of secret bytes.
    public let count: Int

    /// Makes `count` bytes filled in by `fill`, which writes into the secret storage directly so
    /// the secret never passes through an ordinary array.
    init(count: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        let view = UnsafeMutableRawBufferPointer(rebasing: storage[0..<count])
        view.initializeMemory(as: UInt8.self, repeating: 0)
        fill(view)
        self.count = count
    }

    /// Copies `bytes` into secret storage. The caller should wipe its own copy if it can.
    public convenience init(copying bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        self.init(count: array.count) { buffer in
            array.withUnsafeBytes { source in
                if let base = source.baseAddress, let target = buffer.baseAddress {
                    target.copyMemory(from: base, byteCount: source.count)
                }
            }
        }
    }

    /// `count` bytes from the operating system's secure random source.
    public static func random(count: Int) -> KeysSecretBytes {
        Sodium.ensureReady()
        return KeysSecretBytes(count: count) { buffer in
            if let base = buffer.baseAddress { randombytes_buf(base, buffer.count) }
        }
    }

    /// Gives read access to the secret bytes for the duration of `body`.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// A copy as an ordinary array, for tests and for writing to a protected file. The copy is not
    /// wiped automatically.
    public func unprotectedCopy() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }

    /// Constant-time comparison; different lengths compare unequal.
    public func constantTimeEquals(_ other: KeysSecretBytes) -> Bool {
        guard count == other.count else { return false }
        if count == 0 { return true }
        return withUnsafeBytes { a in
            other.withUnsafeBytes { b in
                sodium_memcmp(a.baseAddress!, b.baseAddress!, count) == 0
            }
        }
    }

    deinit {
        if let base = storage.baseAddress { sodium_memzero(base, storage.count) }
        storage.deallocate()
    }
}

extension KeysSecretBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "KeysSecretBytes(\(count) bytes, redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
