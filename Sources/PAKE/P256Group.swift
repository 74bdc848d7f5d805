import COpenSSL

/// NIST P-256 through OpenSSL 3's `EC_POINT` API. Elements are SEC1 uncompressed encodings
/// (`04 ‖ X ‖ Y`, 65 bytes); scalars are 32 bytes big-endian, reduced mod the group order n.
/// The cofactor is 1, so every point on the curve is in the prime-order group.
enum P256Group: SPAKE2Group {
    static let elementByteCount = 65
    static let scalarByteCount = 32

    /// RFC 9382 §6 constants for P-256, SEC1 compressed (seeds "1.2.840.10045.3.1.7 point
    /// generation seed (M)" and "(N)"; `PAKETests` re-derives both with Appendix A).
    static let compressedM = [UInt8](
        constantHex: "02886e2f97ace46e55ba9dd7242579f2993b64e16ef3dcab95afd497333d8fa12f")
    static let compressedN = [UInt8](
        constantHex: "03d8bbd6c639c62937b04d997f38c3770719c629d7014d49a24b4f98baa1292b49")
    static let constantM: [UInt8] = curve.uncompressed(compressed: compressedM)!
    static let constantN: [UInt8] = curve.uncompressed(compressed: compressedN)!

    static func scalar(reducingBigEndian value: UnsafeRawBufferPointer) -> SecretBytes {
        precondition(value.count <= 64, "scalar input longer than 64 bytes")
        return curve.withContext { context in
            let number = SecretNumber(value)
            precondition(
                BN_nnmod(number.pointer, number.pointer, curve.order, context) == 1, "BN_nnmod failed")
            return number.bytes(count: scalarByteCount)
        }
    }

    static func scalar(canonicalBigEndian value: UnsafeRawBufferPointer) throws(SPAKE2Error)
        -> SecretBytes
    {
        guard value.count == scalarByteCount else { throw .invalidPasswordScalar }
        let number = SecretNumber(value)
        guard BN_is_zero(number.pointer) == 0, BN_cmp(number.pointer, curve.order) < 0 else {
            throw .invalidPasswordScalar
        }
        return number.bytes(count: scalarByteCount)
    }

    static func bigEndianBytes(of scalar: SecretBytes) -> SecretBytes { scalar }

    static func isZero(_ scalar: SecretBytes) -> Bool {
        scalar.withUnsafeBytes { bytes in bytes.allSatisfy { $0 == 0 } }
    }

    static func multiply(_ point: [UInt8], by scalar: SecretBytes) -> SecretBytes {
        curve.withContext { context in
            let p = point.withUnsafeBytes { curve.decodeTrusted($0) }
            defer { EC_POINT_free(p) }
            let n = SecretNumber(scalar)
            let result = curve.newPoint()
            defer { EC_POINT_clear_free(result) }
            precondition(
                EC_POINT_mul(curve.group, result, nil, p, n.pointer, context) == 1, "EC_POINT_mul failed")
            return curve.encodeSecret(result, context: context)
        }
    }

    static func blindedElement(x: SecretBytes, blinding: SecretBytes) -> [UInt8] {
        curve.withContext { context in
            let blindingPoint = blinding.withUnsafeBytes { curve.decodeTrusted($0) }
            defer { EC_POINT_clear_free(blindingPoint) }
            let n = SecretNumber(x)
            let result = curve.newPoint()
            defer { EC_POINT_clear_free(result) }
            precondition(
                EC_POINT_mul(curve.group, result, n.pointer, nil, nil, context) == 1
                    && EC_POINT_add(curve.group, result, result, blindingPoint, context) == 1,
                "P-256 blinding failed")
            return curve.encode(result, context: context)
        }
    }

    /// SEC1's encoding of the point at infinity.
    static func encodesIdentity(_ peer: [UInt8]) -> Bool { peer == [0] }

    static func sharedElement(
        peer: [UInt8], unblinding: SecretBytes, x: SecretBytes
    ) throws(SPAKE2Error) -> SecretBytes {
        try curve.withContext { context throws(SPAKE2Error) in
            let peerPoint = try curve.decodePeer(peer, context: context)
            defer { EC_POINT_free(peerPoint) }
            let unblindingPoint = unblinding.withUnsafeBytes { curve.decodeTrusted($0) }
            defer { EC_POINT_clear_free(unblindingPoint) }
            let n = SecretNumber(x)
            precondition(
                EC_POINT_invert(curve.group, unblindingPoint, context) == 1
                    && EC_POINT_add(curve.group, unblindingPoint, peerPoint, unblindingPoint, context) == 1
                    && EC_POINT_mul(curve.group, unblindingPoint, nil, unblindingPoint, n.pointer, context)
                        == 1,
                "P-256 unblinding failed")
            // h = 1. The result is the identity only if peer = w·N (or x = 0, which we never draw).
            guard EC_POINT_is_at_infinity(curve.group, unblindingPoint) == 0 else {
                throw .identityElement
            }
            return curve.encodeSecret(unblindingPoint, context: context)
        }
    }

    /// The curve, its order and prime, created once. `EC_GROUP` and `BIGNUM` are only read after
    /// creation, which OpenSSL allows from any thread.
    static let curve = Curve()

    final class Curve: @unchecked Sendable {
        let group: OpaquePointer
        let order: OpaquePointer
        /// The field prime p, 32 bytes big-endian.
        let prime: [UInt8]

        init() {
            guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1),
                let order = EC_GROUP_get0_order(group), let p = BN_new()
            else { preconditionFailure("OpenSSL has no P-256") }
            defer { BN_free(p) }
            precondition(EC_GROUP_get_curve(group, p, nil, nil, nil) == 1, "EC_GROUP_get_curve failed")
            var prime = [UInt8](repeating: 0, count: 32)
            precondition(BN_bn2binpad(p, &prime, 32) == 32, "BN_bn2binpad failed")
            self.group = group
            self.order = order
            self.prime = prime
        }

        func withContext<R, E: Error>(_ body: (OpaquePointer) throws(E) -> R) throws(E) -> R {
            guard let context = BN_CTX_new() else { preconditionFailure("BN_CTX_new failed") }
            defer { BN_CTX_free(context) }
            return try body(context)
        }

        func newPoint() -> OpaquePointer {
            guard let point = EC_POINT_new(group) else { preconditionFailure("EC_POINT_new failed") }
            return point
        }

        func encode(_ point: OpaquePointer, context: OpaquePointer) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: elementByteCount)
            out.withUnsafeMutableBytes { encode(point, into: $0, context: context) }
            return out
        }

        /// Encodes a secret point (w·M, K) straight into wiped-on-drop storage.
        func encodeSecret(_ point: OpaquePointer, context: OpaquePointer) -> SecretBytes {
            SecretBytes(count: elementByteCount) { encode(point, into: $0, context: context) }
        }

        private func encode(
            _ point: OpaquePointer, into out: UnsafeMutableRawBufferPointer, context: OpaquePointer
        ) {
            let written = EC_POINT_point2oct(
                group, point, POINT_CONVERSION_UNCOMPRESSED, uint8(out), out.count, context)
            precondition(written == elementByteCount, "EC_POINT_point2oct failed")
        }

        /// Decodes one of our own encodings (constants, precomputed multiples).
        func decodeTrusted(_ bytes: UnsafeRawBufferPointer) -> OpaquePointer {
            let point = newPoint()
            precondition(
                EC_POINT_oct2point(group, point, uint8(bytes), bytes.count, nil) == 1, "bad P-256 constant")
            return point
        }

        /// The uncompressed form of a SEC1-compressed point, or nil if it is not one.
        func uncompressed(compressed: [UInt8]) -> [UInt8]? {
            withContext { context in
                let point = newPoint()
                defer { EC_POINT_free(point) }
                guard compressed.count == 33,
                    EC_POINT_oct2point(group, point, compressed, compressed.count, context) == 1
                else { return nil }
                return encode(point, context: context)
            }
        }

        /// Decodes and validates a peer's element: exactly `04 ‖ X ‖ Y`, X and Y below p, on the
        /// curve (OpenSSL checks that in `EC_POINT_oct2point`). The identity has no 65-byte form.
        func decodePeer(_ bytes: [UInt8], context: OpaquePointer) throws(SPAKE2Error) -> OpaquePointer {
            if bytes == [0] { throw .identityElement }
            guard bytes.count == elementByteCount else {
                throw .wrongMessageLength(expected: elementByteCount, actual: bytes.count)
            }
            guard bytes[0] == 0x04 else { throw .nonCanonicalEncoding }
            guard bytes[1...32].lexicographicallyPrecedes(prime),
                bytes[33...64].lexicographicallyPrecedes(prime)
            else { throw .nonCanonicalEncoding }
            let point = newPoint()
            guard EC_POINT_oct2point(group, point, bytes, bytes.count, context) == 1,
                EC_POINT_is_on_curve(group, point, context) == 1
            else {
                EC_POINT_free(point)
                throw .notOnCurve
            }
            return point
        }
    }

    /// A `BIGNUM` holding a secret, marked constant-time and cleared when freed.
    final class SecretNumber {
        let pointer: OpaquePointer

        init(_ bigEndian: UnsafeRawBufferPointer) {
            pointer = Self.make(bigEndian)
        }

        init(_ secret: SecretBytes) {
            pointer = secret.withUnsafeBytes { Self.make($0) }
        }

        private static func make(_ bigEndian: UnsafeRawBufferPointer) -> OpaquePointer {
            guard let number = BN_secure_new() else { preconditionFailure("BN_secure_new failed") }
            BN_set_flags(number, BN_FLG_CONSTTIME)
            let converted = BN_bin2bn(
                bigEndian.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(bigEndian.count), number)
            precondition(converted != nil, "BN_bin2bn failed")
            return number
        }

        func bytes(count: Int) -> SecretBytes {
            SecretBytes(count: count) { out in
                precondition(
                    BN_bn2binpad(pointer, uint8(out), Int32(count)) == Int32(count), "BN_bn2binpad failed")
            }
        }

        deinit { BN_clear_free(pointer) }
    }
}
