import CSodium
import Foundation
import PAKE
import Testing

extension [UInt8] {
    /// Bytes from a hex string (test data only; traps on malformed input).
    init(hex: String) {
        let digits = Array(hex.utf8)
        precondition(digits.count.isMultiple(of: 2), "odd-length hex")
        self = stride(from: 0, to: digits.count, by: 2).map { index in
            UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16)!
        }
    }

    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

extension SecretBytes {
    var hex: String { unredactedBytes().hex }
}

/// Replays fixed bytes, in order; traps when they run out (a test that asks for more
/// randomness than it supplied is broken).
struct ReplayRandom: RandomByteSource {
    private var bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The 64 bytes that make `start` pick exactly `scalar` (32 bytes big-endian, below the
    /// group order): 32 zero bytes, then the scalar.
    init(scalarBigEndian scalar: [UInt8]) {
        self.init([UInt8](repeating: 0, count: 64 - scalar.count) + scalar)
    }

    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        precondition(bytes.count >= buffer.count, "ReplayRandom ran out of bytes")
        buffer.copyBytes(from: bytes.prefix(buffer.count))
        bytes.removeFirst(buffer.count)
    }
}

/// Non-negative integers as big-endian bytes, only as much arithmetic as the point-generation
/// tests need (reduction and addition), written independently of the module under test.
enum BigEndianMath {
    /// `value mod modulus`, as `modulus.count` big-endian bytes (byte-by-byte long division).
    static func reduce(_ value: [UInt8], modulo modulus: [UInt8]) -> [UInt8] {
        let m = limbs(modulus, count: 10)
        var r = [UInt32](repeating: 0, count: 10)
        for byte in value {
            // r = r·256 + byte, then subtract m while r ≥ m (at most 255 times).
            var carry = UInt64(byte)
            for index in r.indices {
                let wide = UInt64(r[index]) << 8 + carry
                r[index] = UInt32(truncatingIfNeeded: wide)
                carry = wide >> 32
            }
            while !lessThan(r, m) { r = subtract(r, m) }
        }
        return bytes(r, count: modulus.count)
    }

    /// `(a + small) mod modulus` for a below the modulus.
    static func add(_ a: [UInt8], _ small: UInt32, modulo modulus: [UInt8]) -> [UInt8] {
        let m = limbs(modulus, count: 10)
        var r = limbs(a, count: 10)
        var carry = UInt64(small)
        for index in r.indices {
            let wide = UInt64(r[index]) + carry
            r[index] = UInt32(truncatingIfNeeded: wide)
            carry = wide >> 32
        }
        while !lessThan(r, m) { r = subtract(r, m) }
        return bytes(r, count: modulus.count)
    }

    private static func limbs(_ bigEndian: [UInt8], count: Int) -> [UInt32] {
        var result = [UInt32](repeating: 0, count: count)
        for (offset, byte) in bigEndian.reversed().enumerated() {
            result[offset / 4] |= UInt32(byte) << (8 * UInt32(offset % 4))
        }
        return result
    }

    private static func bytes(_ limbs: [UInt32], count: Int) -> [UInt8] {
        (0..<count).reversed().map { offset in
            UInt8(truncatingIfNeeded: limbs[offset / 4] >> (8 * UInt32(offset % 4)))
        }
    }

    private static func lessThan(_ a: [UInt32], _ b: [UInt32]) -> Bool {
        for index in a.indices.reversed() where a[index] != b[index] { return a[index] < b[index] }
        return false
    }

    private static func subtract(_ a: [UInt32], _ b: [UInt32]) -> [UInt32] {
        var result = a
        var borrow: Int64 = 0
        for index in a.indices {
            var difference = Int64(a[index]) - Int64(b[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 1 << 32 }
            result[index] = UInt32(difference)
        }
        return result
    }
}

/// edwards25519 helpers built on libsodium's point addition alone (which accepts any point on
/// the curve, unlike its scalar multiplication), for building torsion points in tests.
enum Ed25519TestPoints {
    static let identity: [UInt8] = [1] + [UInt8](repeating: 0, count: 31)
    /// The group order L, big-endian.
    static let order = [UInt8](hex: "1000000000000000000000000000000014def9dea2f79cd65812631a5cf5d3ed")
    /// The field prime q = 2^255 − 19, big-endian.
    static let prime = [UInt8](hex: "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffed")

    /// p + q, or nil if either is not a point on the curve.
    static func add(_ p: [UInt8], _ q: [UInt8]) -> [UInt8]? {
        var r = [UInt8](repeating: 0, count: 32)
        let status = crypto_core_ed25519_add(&r, p, q)
        return status == 0 ? r : nil
    }

    /// n·p by double-and-add with a big-endian scalar (any point on the curve).
    static func multiply(_ p: [UInt8], byBigEndian scalar: [UInt8]) -> [UInt8]? {
        var result = identity
        for byte in scalar {
            for bit in (0..<8).reversed() {
                guard let doubled = add(result, result) else { return nil }
                result = doubled
                if (byte >> UInt8(bit)) & 1 == 1 {
                    guard let sum = add(result, p) else { return nil }
                    result = sum
                }
            }
        }
        return result
    }

    /// The encoding of the point with y (big-endian, below q) and even x, or nil if none exists.
    static func point(y bigEndian: [UInt8]) -> [UInt8]? {
        let encoding = Array(bigEndian.reversed())
        // libsodium decodes while adding: failure means y has no point on the curve.
        return add(encoding, identity) == nil ? nil : encoding
    }

    /// A point of order exactly 8: L·P for points P on the curve (not in the subgroup) until one
    /// has full torsion order.
    static let orderEight: [UInt8] = {
        var y: UInt32 = 2
        while true {
            defer { y += 1 }
            let yBytes = BigEndianMath.add([UInt8](repeating: 0, count: 32), y, modulo: prime)
            guard let p = point(y: yBytes), let torsion = multiply(p, byBigEndian: order),
                let four = multiply(torsion, byBigEndian: [4])
            else { continue }
            if four != identity { return torsion }
        }
    }()

    static func isValid(_ point: [UInt8]) -> Bool {
        crypto_core_ed25519_is_valid_point(point) == 1
    }
}

struct RFC9382Vector: Decodable, Sendable {
    let A: String
    let B: String
    let w: String
    let x: String
    let pA: String
    let y: String
    let pB: String
    let K: String
    let TT: String
    let hashTT: String
    let Ke: String
    let Ka: String
    let KcA: String
    let KcB: String
    let confirmationA: String
    let confirmationB: String

    enum CodingKeys: String, CodingKey {
        case A, B, w, x, pA, y, pB, K, TT, Ke, Ka, KcA, KcB
        case hashTT = "Hash(TT)"
        case confirmationA = "A conf"
        case confirmationB = "B conf"
    }
}

struct RFC9382File: Decodable, Sendable {
    struct Constants: Decodable, Sendable {
        let M_compressed: String
        let N_compressed: String
    }
    struct EdwardsConstants: Decodable, Sendable {
        let M: String
        let N: String
    }
    let suite: String
    let constants: Constants
    let edwards25519_constants: EdwardsConstants
    let vectors: [RFC9382Vector]

    static let shared: RFC9382File = try! JSONDecoder().decode(
        RFC9382File.self, from: Data(rfc9382P256VectorsJSON.utf8))
}

struct SymmetricFile: Decodable, Sendable {
    struct Constants: Decodable, Sendable {
        let L_dec: String
        let base_hex: String
        let M_hex: String
        let N_hex: String
        let S_hex: String
        let arbitrary_element_seed_S: String
        let hash_params_symmetric: String
    }
    struct Side: Decodable, Sendable {
        let entropy_hex: String
        let scalar_le32_hex: String
        let X_hex: String
        let msg_out_hex: String
    }
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let index: Int
        let password_text: String
        let password_hex: String
        let idSymmetric_text: String
        let idSymmetric_hex: String
        let pw_scalar_le32_hex: String
        let side1: Side
        let side2: Side
        let K_hex: String
        let transcript_hex: String
        let key_hex: String

        var testDescription: String { "vector \(index)" }
    }
    struct DerivedKey: Decodable, Sendable {
        let purpose: String
        let out_hex: String
    }
    struct PhaseKey: Decodable, Sendable {
        let side: String
        let phase: String
        let out_hex: String
    }
    struct SecretBox: Decodable, Sendable {
        let side: String
        let phase: String
        let phase_key_hex: String
        let nonce_hex: String
        let plaintext_hex: String
        let body: String

        enum CodingKeys: String, CodingKey {
            case side, phase, phase_key_hex, nonce_hex, plaintext_hex
            case body = "body_hex(nonce||tag||ciphertext)"
        }
    }
    struct KDFVectors: Decodable, Sendable {
        let master_key_hex: String
        let derive_key: [DerivedKey]
        let derive_phase_key: [PhaseKey]
        let secretbox: [SecretBox]
    }
    let constants: Constants
    let vectors: [Vector]
    let wormhole_kdf_vectors: KDFVectors

    static let shared: SymmetricFile = try! JSONDecoder().decode(
        SymmetricFile.self, from: Data(spake2SymmetricVectorsJSON.utf8))
}
