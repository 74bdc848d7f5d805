import CSodium

/// edwards25519 through libsodium's `crypto_core_ed25519_*` and
/// `crypto_scalarmult_ed25519_*noclamp`. Elements are RFC 8032 encodings (32 bytes); scalars
/// are 32 bytes little-endian, reduced mod L.
enum Edwards25519Group: SPAKE2Group {
    static let elementByteCount = 32
    static let scalarByteCount = 32

    /// RFC 9382 §6 constants for edwards25519 (seed "edwards25519 point generation seed (M)"
    /// and "(N)"; `PAKETests` re-derives both with the Appendix A procedure).
    static let constantM = [UInt8](
        constantHex: "d048032c6ea0b6d697ddc2e86bda85a33adac920f1bf18e1b0c6d166a5cecdaf")
    static let constantN = [UInt8](
        constantHex: "d3bfb518f44f3430f29d0c92af503865a1ed3281dc69b35dd868ba85f886c4ab")

    /// The cofactor h = 8 as a little-endian scalar.
    private static let cofactor: [UInt8] = [8] + [UInt8](repeating: 0, count: 31)
    /// The identity element (0, 1).
    static let identity: [UInt8] = [1] + [UInt8](repeating: 0, count: 31)

    static func scalar(reducingBigEndian value: UnsafeRawBufferPointer) -> SecretBytes {
        precondition(value.count <= 64, "scalar input longer than 64 bytes")
        Sodium.ensureInitialized()
        // libsodium reduces a 64-byte little-endian integer: reverse into a zero-padded buffer.
        let wide = SecretBytes(count: 64) { wide in
            for (offset, byte) in value.reversed().enumerated() { wide[offset] = byte }
        }
        return SecretBytes(count: scalarByteCount) { out in
            wide.withUnsafeBytes { wide in
                crypto_core_ed25519_scalar_reduce(uint8(out), uint8(wide))
            }
        }
    }

    static func scalar(canonicalBigEndian value: UnsafeRawBufferPointer) throws(SPAKE2Error)
        -> SecretBytes
    {
        guard value.count == scalarByteCount else { throw .invalidPasswordScalar }
        let reduced = scalar(reducingBigEndian: value)
        // Canonical iff reducing changed nothing.
        let unchanged = bigEndianBytes(of: reduced).withUnsafeBytes { constantTimeEquals($0, value) }
        guard unchanged, !isZero(reduced) else { throw .invalidPasswordScalar }
        return reduced
    }

    static func bigEndianBytes(of scalar: SecretBytes) -> SecretBytes {
        SecretBytes(count: scalar.count) { out in
            scalar.withUnsafeBytes { bytes in
                for (offset, byte) in bytes.reversed().enumerated() { out[offset] = byte }
            }
        }
    }

    static func isZero(_ scalar: SecretBytes) -> Bool {
        scalar.withUnsafeBytes { sodium_is_zero(uint8($0), $0.count) == 1 }
    }

    static func multiply(_ point: [UInt8], by scalar: SecretBytes) -> SecretBytes {
        SecretBytes(count: elementByteCount) { out in
            let status = scalar.withUnsafeBytes { n in
                point.withUnsafeBytes { p in crypto_scalarmult_ed25519_noclamp(uint8(out), uint8(n), uint8(p))
                }
            }
            // Our constants are valid prime-order points and password scalars are non-zero.
            precondition(status == 0, "edwards25519 multiplication of a constant failed")
        }
    }

    static func baseMultiple(_ scalar: SecretBytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: elementByteCount)
        let status = out.withUnsafeMutableBytes { out in
            scalar.withUnsafeBytes { n in crypto_scalarmult_ed25519_base_noclamp(uint8(out), uint8(n)) }
        }
        precondition(status == 0, "edwards25519 base multiplication failed (zero scalar)")
        return out
    }

    static func blindedElement(x: SecretBytes, blinding: SecretBytes) -> [UInt8] {
        var point = baseMultiple(x)
        let status = point.withUnsafeMutableBytes { point in
            blinding.withUnsafeBytes { blinding in
                crypto_core_ed25519_add(uint8(point), uint8(point), uint8(blinding))
            }
        }
        precondition(status == 0, "edwards25519 addition of valid points failed")
        return point
    }

    static func sharedElement(
        peer: [UInt8], unblinding: SecretBytes, x: SecretBytes
    ) throws(SPAKE2Error) -> SecretBytes {
        try sharedElement(peer: peer, unblinding: unblinding, scalar: x, cofactor: true)
    }

    /// `s·(peer − unblinding)`, or `(8s mod L)·(peer − unblinding)` with `cofactor`.
    ///
    /// Validation costs no extra scalar multiplication: `crypto_core_ed25519_sub` rejects bytes
    /// that are not on the curve, and `crypto_scalarmult_ed25519_noclamp` rejects (returns -1 for)
    /// a non-canonical point, a small-order point, a point outside the prime-order subgroup, and
    /// an identity result. Since `unblinding` is a prime-order point, `peer − unblinding` is in
    /// the subgroup exactly when `peer` is. Canonical form and the identity are checked here
    /// first; a failure is then classified on a slow path that only errors take.
    static func sharedElement(
        peer: [UInt8], unblinding: SecretBytes, scalar: SecretBytes, cofactor: Bool
    ) throws(SPAKE2Error) -> SecretBytes {
        guard peer.count == elementByteCount else {
            throw .wrongMessageLength(expected: elementByteCount, actual: peer.count)
        }
        try checkEncoding(peer)
        Sodium.ensureInitialized()
        var decoded: Int32 = 0
        let difference = SecretBytes(count: elementByteCount) { out in
            decoded = peer.withUnsafeBytes { peer in
                unblinding.withUnsafeBytes { unblinding in
                    crypto_core_ed25519_sub(uint8(out), uint8(peer), uint8(unblinding))
                }
            }
        }
        guard decoded == 0 else { throw .notOnCurve }
        let multiplier: SecretBytes
        if cofactor {
            multiplier = SecretBytes(count: scalarByteCount) { out in
                scalar.withUnsafeBytes { s in
                    crypto_core_ed25519_scalar_mul(uint8(out), uint8(s), Self.cofactor)
                }
            }
        } else {
            multiplier = scalar
        }
        var status: Int32 = 0
        let shared = SecretBytes(count: elementByteCount) { out in
            status = multiplier.withUnsafeBytes { n in
                difference.withUnsafeBytes { q in
                    crypto_scalarmult_ed25519_noclamp(uint8(out), uint8(n), uint8(q))
                }
            }
        }
        guard status == 0 else { throw classifyRejected(peer) }
        return shared
    }

    static func encodesIdentity(_ peer: [UInt8]) -> Bool {
        peer.count == elementByteCount && peer[0] == 1 && peer[1...].allSatisfy { $0 == 0 }
    }

    /// Cheap encoding checks: y < p, no sign bit on x = 0, not the identity.
    static func checkEncoding(_ point: [UInt8]) throws(SPAKE2Error) {
        // y ≥ p = 2^255 − 19 (same test as libsodium's ge25519_is_canonical).
        var high: UInt8 = (point[31] & 0x7f) ^ 0x7f
        for index in 1...30 { high |= point[index] ^ 0xff }
        if high == 0 && point[0] >= 0xed { throw .nonCanonicalEncoding }
        // x = 0 exactly when y = ±1; its sign bit must then be clear.
        let signBit = point[31] & 0x80 != 0
        let yIsOne = point[0] == 1 && point[1...30].allSatisfy { $0 == 0 } && point[31] & 0x7f == 0
        let yIsMinusOne =
            point[0] == 0xec && point[1...30].allSatisfy { $0 == 0xff } && point[31] & 0x7f == 0x7f
        if signBit && (yIsOne || yIsMinusOne) { throw .nonCanonicalEncoding }
        if yIsOne { throw .identityElement }
    }

    /// Why libsodium refused a multiplication involving `peer` (error path only; costs a
    /// scalar multiplication).
    static func classifyRejected(_ peer: [UInt8]) -> SPAKE2Error {
        let valid = peer.withUnsafeBytes { crypto_core_ed25519_is_valid_point(uint8($0)) } == 1
        // A valid peer point can only fail if it equals the unblinding term (identity result).
        return valid ? .identityElement : .notInPrimeOrderSubgroup
    }
}

@inline(__always)
func uint8(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
    buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
}

@inline(__always)
func uint8(_ buffer: UnsafeMutableRawBufferPointer) -> UnsafeMutablePointer<UInt8> {
    buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
}
