/// What the RFC 9382 protocol needs from a prime-order group. Elements travel as their wire
/// encodings (`[UInt8]`, or ``SecretBytes`` when they are password-equivalent); scalars are
/// ``SecretBytes`` in the group's native byte order (see each group).
protocol SPAKE2Group {
    /// The wire length of an element (32 for edwards25519, 65 for SEC1-uncompressed P-256).
    static var elementByteCount: Int { get }
    /// The RFC 9382 constants M and N, encoded.
    static var constantM: [UInt8] { get }
    static var constantN: [UInt8] { get }

    /// `value mod order` for a big-endian integer of at most 64 bytes.
    static func scalar(reducingBigEndian value: UnsafeRawBufferPointer) -> SecretBytes
    /// A scalar from its canonical 32-byte big-endian form; rejects zero and values ≥ order.
    static func scalar(canonicalBigEndian value: UnsafeRawBufferPointer) throws(SPAKE2Error)
        -> SecretBytes
    /// The scalar as 32 big-endian bytes (its encoding inside the RFC 9382 transcript).
    static func bigEndianBytes(of scalar: SecretBytes) -> SecretBytes
    static func isZero(_ scalar: SecretBytes) -> Bool

    /// `scalar · point` for a trusted point (one of our constants).
    static func multiply(_ point: [UInt8], by scalar: SecretBytes) -> SecretBytes
    /// `x·P + blinding`: our outbound element.
    static func blindedElement(x: SecretBytes, blinding: SecretBytes) -> [UInt8]
    /// `h·x·(peer − unblinding)` after validating `peer` (exactly `elementByteCount` bytes,
    /// canonical, on the curve, in the prime-order subgroup, not the identity).
    static func sharedElement(
        peer: [UInt8], unblinding: SecretBytes, x: SecretBytes
    ) throws(SPAKE2Error) -> SecretBytes
    /// Whether `peer` is the encoding of the identity itself (refused whatever the password).
    static func encodesIdentity(_ peer: [UInt8]) -> Bool
}

extension [UInt8] {
    /// Bytes from a hex string known at compile time (constants). Traps on malformed input.
    init(constantHex hex: StaticString) {
        let text = hex.description
        precondition(text.count.isMultiple(of: 2), "odd-length hex constant")
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count / 2)
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else {
                preconditionFailure("malformed hex constant")
            }
            bytes.append(byte)
            index = next
        }
        self = bytes
    }
}
