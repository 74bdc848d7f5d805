import CSodium

/// Bytes that must stay secret: keys, scalars, transcripts that contain them.
///
/// - `description`, `debugDescription` and reflection (`dump`, string interpolation) redact the
///   contents; only the length shows.
/// - `==` runs in constant time for equal lengths (`sodium_memcmp`); lengths are not secret.
/// - The storage is overwritten with zeros (`sodium_memzero`) when the last copy is dropped.
///
/// A value type: copies share one immutable buffer, so passing it around never duplicates the
/// secret in memory.
public struct SecretBytes: Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    // Visible to the inlinable code below (not public): a generic helper that is not inlined into
    // its caller looks up generic metadata on every call, which the space server paid per request.
    @usableFromInline let storage: Storage

    /// Copies `bytes` into a new secret buffer. The caller remains responsible for its own copy.
    @inlinable public init(_ bytes: some Collection<UInt8>) {
        storage = Storage(count: bytes.count)
        storage.buffer.copyBytes(from: bytes)
    }

    /// Makes a secret buffer of `count` bytes and lets `body` fill it in place, so the secret
    /// never passes through an ordinary array. The buffer starts zeroed.
    @inlinable public init<E: Error>(
        count: Int, initializingWith body: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        storage = Storage(count: count)
        try body(storage.buffer)
    }

    /// `count` bytes from `random`.
    public init(randomCount count: Int, using random: inout some RandomByteSource) {
        storage = Storage(count: count)
        random.fill(storage.buffer)
    }

    /// The number of bytes (not secret).
    public var count: Int { storage.buffer.count }

    /// Read access to the secret bytes for the duration of `body`. Do not let the pointer escape.
    @inlinable public func withUnsafeBytes<R, E: Error>(
        _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        try body(UnsafeRawBufferPointer(storage.buffer))
    }

    /// A plain copy of the bytes, for handing to an API that needs an array (or for test
    /// vectors). The copy is not wiped: prefer ``withUnsafeBytes(_:)``.
    public func unredactedBytes() -> [UInt8] {
        Array(UnsafeRawBufferPointer(storage.buffer))
    }

    /// A new secret holding the first `length` bytes of this one.
    public func prefix(_ length: Int) -> SecretBytes {
        slice(0..<length)
    }

    /// A new secret holding bytes `range` of this one. `range` must lie within `0..<count`.
    public func slice(_ range: Range<Int>) -> SecretBytes {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "slice out of bounds")
        return SecretBytes(count: range.count) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage.buffer[range]))
        }
    }

    /// Constant-time comparison with `bytes` (for equal lengths; the length is not secret).
    @inlinable public func isEqual(toBytes bytes: some ReadableBytes) -> Bool {
        bytes.withReadableBytes { other in
            constantTimeEquals(UnsafeRawBufferPointer(storage.buffer), other)
        }
    }

    /// Constant time for equal lengths (`sodium_memcmp`); different lengths compare unequal.
    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        constantTimeEquals(
            UnsafeRawBufferPointer(lhs.storage.buffer), UnsafeRawBufferPointer(rhs.storage.buffer))
    }

    public var description: String { "SecretBytes(\(count) bytes, redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Heap storage zeroed on deinit. Never mutated after initialisation, hence Sendable.
    @usableFromInline final class Storage: @unchecked Sendable {
        /// The secret bytes (a view of `allocation`, which is never empty so the pointer is valid).
        @usableFromInline let buffer: UnsafeMutableRawBufferPointer
        private let allocation: UnsafeMutableRawBufferPointer

        @usableFromInline init(count: Int) {
            precondition(count >= 0, "negative SecretBytes length")
            allocation = .allocate(byteCount: max(count, 1), alignment: 16)
            allocation.initializeMemory(as: UInt8.self, repeating: 0)
            buffer = UnsafeMutableRawBufferPointer(start: allocation.baseAddress, count: count)
        }

        deinit {
            sodium_memzero(allocation.baseAddress, allocation.count)
            allocation.deallocate()
        }
    }
}

extension SecretBytes: ReadableBytes {
    @inlinable public func withReadableBytes<R, E: Error>(
        _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        try body(UnsafeRawBufferPointer(storage.buffer))
    }
}

/// Byte containers the crypto helpers accept as input: `[UInt8]`, `ArraySlice<UInt8>` and
/// ``SecretBytes`` (so a secret key never has to be copied into an ordinary array).
public protocol ReadableBytes {
    /// Calls `body` with the bytes laid out contiguously.
    func withReadableBytes<R, E: Error>(
        _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R
}

extension Array: ReadableBytes where Element == UInt8 {
    @inlinable public func withReadableBytes<R, E: Error>(
        _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        let result: Result<R, E> = withUnsafeBytes { buffer in
            do throws(E) { return .success(try body(buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

extension ArraySlice: ReadableBytes where Element == UInt8 {
    @inlinable public func withReadableBytes<R, E: Error>(
        _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        let result: Result<R, E> = withUnsafeBytes { buffer in
            do throws(E) { return .success(try body(buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

/// `sodium_memcmp` on equal lengths; unequal lengths are simply unequal.
@usableFromInline func constantTimeEquals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    guard a.count > 0 else { return true }
    Sodium.ensureInitialized()
    return sodium_memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
}
