import CSodium
import Foundation
import Testing

@testable import PAKE

@Suite("RFC 9382 SPAKE2: vectors and constants")
struct RFC9382Tests {
    /// Runs both roles of one Appendix B vector with x and y replayed, checking every
    /// intermediate value byte for byte.
    @Test(arguments: RFC9382File.shared.vectors.indices)
    func appendixBVector(_ index: Int) throws {
        let v = RFC9382File.shared.vectors[index]
        let password = try SPAKE2.Password(scalar: [UInt8](hex: v.w), suite: .p256)
        let idA = Array(v.A.utf8)
        let idB = Array(v.B.utf8)
        var randomA = ReplayRandom(scalarBigEndian: [UInt8](hex: v.x))
        var randomB = ReplayRandom(scalarBigEndian: [UInt8](hex: v.y))
        let a = SPAKE2(role: .a, password: password, identityA: idA, identityB: idB).start(using: &randomA)
        let b = SPAKE2(role: .b, password: password, identityA: idA, identityB: idB).start(using: &randomB)
        #expect(a.message.hex == v.pA)
        #expect(b.message.hex == v.pB)

        let aConfirming = try a.receive([UInt8](hex: v.pB))
        let bConfirming = try b.receive([UInt8](hex: v.pA))
        for schedule in [aConfirming.schedule, bConfirming.schedule] {
            #expect(schedule.sharedElement.hex == v.K)
            #expect(schedule.transcript.hex == v.TT)
            #expect(schedule.sessionKey.hex + schedule.confirmationKey.hex == v.hashTT)
            #expect(schedule.sessionKey.hex == v.Ke)
            #expect(schedule.confirmationKey.hex == v.Ka)
            #expect(schedule.confirmationKeyA.hex == v.KcA)
            #expect(schedule.confirmationKeyB.hex == v.KcB)
        }
        #expect(aConfirming.confirmation.hex == v.confirmationA)
        #expect(bConfirming.confirmation.hex == v.confirmationB)

        let keyA = try aConfirming.finish(peerConfirmation: [UInt8](hex: v.confirmationB))
        let keyB = try bConfirming.finish(peerConfirmation: [UInt8](hex: v.confirmationA))
        #expect(keyA.hex == v.Ke)
        #expect(keyA == keyB)
    }

    @Test func suiteNamesAndSizes() {
        #expect(SPAKE2.Suite.edwards25519.name == "SPAKE2-edwards25519-SHA256-HKDF-HMAC")
        #expect(SPAKE2.Suite.p256.name == RFC9382File.shared.suite)
        #expect(SPAKE2.Suite.edwards25519.messageByteCount == 32)
        #expect(SPAKE2.Suite.p256.messageByteCount == 65)
        #expect(SPAKE2.Suite.p256.confirmationByteCount == 32)
        #expect(SPAKE2.Suite.p256.sessionKeyByteCount == 16)
    }

    /// RFC 9382 Appendix A: iterated SHA-256 of the seed; the first block string that decodes
    /// (after formatting) to a point of prime order is the constant.
    static func generatePoint(seed: String, length: Int, accept: ([UInt8]) -> Bool) -> ([UInt8], Int)? {
        var blocks: [[UInt8]] = [Array(seed.utf8)]
        for start in 1..<1000 {
            while blocks.count < start + 2 { blocks.append(SHA256.hash(blocks.last!)) }
            let candidate = Array(blocks[start...].joined().prefix(length))
            if accept(candidate) { return (candidate, start) }
        }
        return nil
    }

    @Test func edwards25519ConstantsFromAppendixA() throws {
        for (name, constant, expected) in [
            ("M", Edwards25519Group.constantM, RFC9382File.shared.edwards25519_constants.M),
            ("N", Edwards25519Group.constantN, RFC9382File.shared.edwards25519_constants.N),
        ] {
            let (point, block) = try #require(
                Self.generatePoint(seed: "edwards25519 point generation seed (\(name))", length: 32) {
                    Ed25519TestPoints.isValid($0)
                })
            #expect(point == constant, "\(name) from block \(block)")
            #expect(point.hex == expected)
        }
    }

    @Test func p256ConstantsFromAppendixA() throws {
        for (name, constant, expected) in [
            ("M", P256Group.compressedM, RFC9382File.shared.constants.M_compressed),
            ("N", P256Group.compressedN, RFC9382File.shared.constants.N_compressed),
        ] {
            let (point, block) = try #require(
                Self.generatePoint(seed: "1.2.840.10045.3.1.7 point generation seed (\(name))", length: 33) {
                    var formatted = $0
                    formatted[0] = 0x02 | (formatted[0] & 1)
                    return P256Group.curve.uncompressed(compressed: formatted) != nil
                })
            var formatted = point
            formatted[0] = 0x02 | (formatted[0] & 1)
            #expect(formatted == constant, "\(name) from block \(block)")
            #expect(formatted.hex == expected)
        }
        #expect(P256Group.constantM.count == 65 && P256Group.constantN.count == 65)
    }

    /// w = OS2IP(HKDF-SHA256(password, info = context, 64 bytes)) mod order, checked against an
    /// independent reduction.
    @Test(arguments: SPAKE2.Suite.allCases)
    func passwordDerivation(_ suite: SPAKE2.Suite) throws {
        let code = Array("coral-piano-42".utf8)
        let context = Array("eleven.example/join/v1".utf8)
        let wide = HKDFSHA256.deriveKey(from: code, info: context, byteCount: 64).unredactedBytes()
        let order =
            suite == .edwards25519
            ? Ed25519TestPoints.order
            : [UInt8](hex: "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
        let expected = BigEndianMath.reduce(wide, modulo: order)
        let derived = SPAKE2.Password(deriving: code, context: context, suite: suite)
        #expect(suite.group.bigEndianBytes(of: derived.scalar).unredactedBytes() == expected)
        let raw = try SPAKE2.Password(scalar: expected, suite: suite)
        #expect(raw.scalar == derived.scalar && raw.timesM == derived.timesM)
        let otherContext = SPAKE2.Password(deriving: code, context: Array("other".utf8), suite: suite)
        #expect(otherContext.scalar != derived.scalar)
    }

    @Test(arguments: SPAKE2.Suite.allCases)
    func rawScalarMustBeCanonical(_ suite: SPAKE2.Suite) {
        let order =
            suite == .edwards25519
            ? Ed25519TestPoints.order
            : [UInt8](hex: "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
        for bad in [order, [UInt8](repeating: 0, count: 32), [UInt8](repeating: 0xff, count: 32), [1]] {
            #expect(throws: SPAKE2Error.invalidPasswordScalar) {
                try SPAKE2.Password(scalar: bad, suite: suite)
            }
        }
        #expect(throws: Never.self) {
            try SPAKE2.Password(scalar: [UInt8](repeating: 0, count: 31) + [1], suite: suite)
        }
    }
}
