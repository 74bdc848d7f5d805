import PAKE

/// Randomness for the attendant's key agreement derived from a stored seed, so an attendant
/// that saved its invite (`eleven invite --detach`) computes the same SPAKE2 message after a
/// restart as the one already waiting in the mailbox. Block `i` of use `u` is
/// `HKDF-SHA256(seed, info = "eleven/invite/spake2/v1" ‖ u ‖ i)`. Each use gets its own stream.
public struct DerivedRandom: RandomByteSource {
    private let seed: SecretBytes
    private let use: UInt64
    private var block: UInt64 = 0

    public init(seed: SecretBytes, use: Int) {
        self.seed = seed
        self.use = UInt64(max(0, use))
    }

    public mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard buffer.count > 0 else { return }
        var info = Array("eleven/invite/spake2/v1".utf8)
        info += withUnsafeBytes(of: use.littleEndian) { Array($0) }
        info += withUnsafeBytes(of: block.littleEndian) { Array($0) }
        block &+= 1
        let bytes = HKDFSHA256.deriveKey(from: seed, info: info, byteCount: buffer.count)
        bytes.withUnsafeBytes { source in buffer.copyMemory(from: source) }
    }
}
