import CSodium
import Foundation
import Testing

@testable import PAKE

@Suite("Magic Wormhole SPAKE2 (python-spake2 SPAKE2_Symmetric)")
struct WormholeSPAKE2Tests {
    static let file = SymmetricFile.shared

    @Test(arguments: file.vectors)
    func vector(_ v: SymmetricFile.Vector) throws {
        let password = [UInt8](hex: v.password_hex)
        let identity = [UInt8](hex: v.idSymmetric_hex)
        #expect(Array(v.password_text.precomposedStringWithCanonicalMapping.utf8) == password)
        #expect(Array(v.idSymmetric_text.precomposedStringWithCanonicalMapping.utf8) == identity)
        let w = WormholeSPAKE2.passwordScalar(password)
        #expect(w.hex == v.pw_scalar_le32_hex)

        var scalars: [SecretBytes] = []
        for side in [v.side1, v.side2] {
            let entropy = [UInt8](hex: side.entropy_hex)
            let scalar = entropy.withUnsafeBytes { Edwards25519Group.scalar(reducingBigEndian: $0) }
            #expect(scalar.hex == side.scalar_le32_hex)
            #expect(Edwards25519Group.baseMultiple(scalar).hex == side.X_hex)
            scalars.append(scalar)
        }

        var random1 = ReplayRandom([UInt8](hex: v.side1.entropy_hex))
        var random2 = ReplayRandom([UInt8](hex: v.side2.entropy_hex))
        let side1 = WormholeSPAKE2(password: password, identity: identity).start(using: &random1)
        let side2 = WormholeSPAKE2(password: password, identity: identity).start(using: &random2)
        #expect(side1.message.hex == v.side1.msg_out_hex)
        #expect(side2.message.hex == v.side2.msg_out_hex)

        // K and the transcript, recomputed from the parts.
        let exchange = WormholeSPAKE2(password: password, identity: identity)
        let element1 = Array(side1.message.dropFirst())
        let element2 = Array(side2.message.dropFirst())
        let k = try Edwards25519Group.sharedElement(
            peer: element2, unblinding: exchange.passwordTimesS, scalar: scalars[0], cofactor: false)
        #expect(k.hex == v.K_hex)
        let sorted = [element1, element2].sorted { $0.lexicographicallyPrecedes($1) }
        let transcript =
            SHA256.hash(password) + SHA256.hash(identity) + sorted[0] + sorted[1] + k.unredactedBytes()
        #expect(transcript.hex == v.transcript_hex)

        let key1 = try side1.finish([UInt8](hex: v.side2.msg_out_hex))
        let key2 = try side2.finish([UInt8](hex: v.side1.msg_out_hex))
        #expect(key1.hex == v.key_hex)
        #expect(key2.hex == v.key_hex)
        #expect(SHA256.hash(transcript).hex == v.key_hex)
    }

    /// python-spake2's `arbitrary_element(seed)` (spake2-math.md A.6), implemented here from the
    /// description: HKDF, y search upwards from y0, even x, cofactor cleared.
    static func arbitraryElement(seed: [UInt8]) -> [UInt8]? {
        let h = HKDFSHA256.deriveKey(
            from: seed, info: Array("SPAKE2 arbitrary element".utf8), byteCount: 48
        ).unredactedBytes()
        let y0 = BigEndianMath.reduce(h, modulo: Ed25519TestPoints.prime)
        for k in 0..<100 {
            let y = BigEndianMath.add(y0, UInt32(k), modulo: Ed25519TestPoints.prime)
            guard let p = Ed25519TestPoints.point(y: y),
                let p8 = Ed25519TestPoints.multiply(p, byBigEndian: [8]),
                p8 != Ed25519TestPoints.identity
            else { continue }
            return p8
        }
        return nil
    }

    @Test func constantsFromArbitraryElement() throws {
        let c = Self.file.constants
        #expect(
            try #require(Self.arbitraryElement(seed: Array(c.arbitrary_element_seed_S.utf8))).hex == c.S_hex)
        #expect(WormholeSPAKE2.constantS.hex == c.S_hex)
        #expect(try #require(Self.arbitraryElement(seed: Array("M".utf8))).hex == c.M_hex)
        #expect(try #require(Self.arbitraryElement(seed: Array("N".utf8))).hex == c.N_hex)
        // Upstream test-suite values (spake2-math.md A.9).
        #expect(
            Self.arbitraryElement(seed: [0x41])?.hex
                == "4637592ae2914247de5804be805867266ccac99c635df8077dcdc1d72becf354")
        #expect(
            Self.arbitraryElement(seed: [0x42])?.hex
                == "88228ee4046ba5d5fa2f23a0480a99efb1a9554ce50153d69330928215d50775")
        #expect(Ed25519TestPoints.isValid(WormholeSPAKE2.constantS))
        #expect(
            Edwards25519Group.baseMultiple(SecretBytes([1] + [UInt8](repeating: 0, count: 31))).hex
                == c.base_hex)
        #expect(
            Ed25519TestPoints.order
                == [UInt8](hex: "1000000000000000000000000000000014def9dea2f79cd65812631a5cf5d3ed"))
        #expect(c.L_dec == "7237005577332262213973186563042994240857116359379907606001950938285454250989")
    }

    /// `hash_params()` of the symmetric mode: SHA256(arbitrary_element("") ‖
    /// password_to_scalar("") as LE32 ‖ S).
    @Test func hashParams() throws {
        let empty = try #require(Self.arbitraryElement(seed: []))
        let scalar = WormholeSPAKE2.passwordScalar([UInt8]()).unredactedBytes()
        let digest = SHA256.hash(empty + scalar + WormholeSPAKE2.constantS)
        #expect(digest.hex == Self.file.constants.hash_params_symmetric)
    }

    @Test func upstreamPasswordScalars() {
        #expect(
            WormholeSPAKE2.passwordScalar(Array("pw".utf8)).hex
                == "cf090b60384cb818b12c8d972dfbaf910c0c7295c5cfe560e508f5f062f3960f")
        #expect(
            WormholeSPAKE2.passwordScalar([0x00, 0x01, 0xfe, 0xff] as [UInt8]).hex
                == "e86622bb57ea0f6f9f963354f2973a43a9e981901a478e6478682374441b0c04")
    }

    /// python-spake2's test-suite generator: SHA256("prng-" ‖ counter ‖ "-" ‖ seed) blocks.
    struct UpstreamPRNG: RandomByteSource {
        let seed: String
        var counter = 0
        var pending: [UInt8] = []
        mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
            while pending.count < buffer.count {
                pending += SHA256.hash(Array("prng-\(counter)-\(seed)".utf8))
                counter += 1
            }
            buffer.copyBytes(from: pending.prefix(buffer.count))
            pending.removeFirst(buffer.count)
        }
    }

    @Test func upstreamDeterministicRun() throws {
        var random1 = UpstreamPRNG(seed: "1")
        var random2 = UpstreamPRNG(seed: "2")
        let password = Array("password".utf8)
        let side1 = WormholeSPAKE2(password: password, identity: [UInt8]()).start(using: &random1)
        let side2 = WormholeSPAKE2(password: password, identity: [UInt8]()).start(using: &random2)
        #expect(side1.message.hex == "5308f692d38c4034ad6e2e1054c469ca1dbe990bcaec4bbd3ad78c7d968eadd0b3")
        #expect(side2.message.hex == "5329e2d5f9b7a53e609204115c6458921b0bb27419ce82a27679fc5961002897df")
        let m1 = side1.message
        let key2 = try side2.finish(m1)
        #expect(key2.hex == "9c4fccaa3f0740615cee6fd10ed5d3a311b91b5bdc65f53e4ea7cb2fe8aa96eb")
    }

    @Test func wormholeKeyDerivations() {
        let kdf = Self.file.wormhole_kdf_vectors
        let master = SecretBytes([UInt8](hex: kdf.master_key_hex))
        #expect(!kdf.derive_key.isEmpty && !kdf.derive_phase_key.isEmpty && !kdf.secretbox.isEmpty)
        for vector in kdf.derive_key {
            #expect(
                WormholeKeys.deriveKey(from: master, purpose: Array(vector.purpose.utf8)).hex
                    == vector.out_hex)
            if vector.purpose == "wormhole:verifier" {
                #expect(WormholeKeys.verifier(from: master).hex == vector.out_hex)
            }
        }
        for vector in kdf.derive_phase_key {
            #expect(
                WormholeKeys.phaseKey(from: master, side: vector.side, phase: vector.phase).hex
                    == vector.out_hex, "\(vector.side)/\(vector.phase)")
        }
        for vector in kdf.secretbox {
            let key = WormholeKeys.phaseKey(from: master, side: vector.side, phase: vector.phase)
            #expect(key.hex == vector.phase_key_hex)
            let nonce = [UInt8](hex: vector.nonce_hex)
            let plaintext = [UInt8](hex: vector.plaintext_hex)
            var boxed = [UInt8](repeating: 0, count: plaintext.count + Int(crypto_secretbox_MACBYTES))
            let sealed = key.withUnsafeBytes { k in
                crypto_secretbox_easy(
                    &boxed, plaintext, UInt64(plaintext.count), nonce,
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            #expect(sealed == 0)
            #expect((nonce + boxed).hex == vector.body)
            var opened = [UInt8](repeating: 0, count: plaintext.count)
            let body = [UInt8](hex: vector.body)
            let ciphertext = Array(body.dropFirst(24))
            let status = key.withUnsafeBytes { k in
                crypto_secretbox_open_easy(
                    &opened, ciphertext, UInt64(ciphertext.count), Array(body.prefix(24)),
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            #expect(status == 0 && opened == plaintext)
        }
    }

    @Test(arguments: 0..<40)
    func samePasswordAgreesDifferentDisagrees(_ seed: Int) throws {
        var random = SeededRandom(seed: UInt64(seed) &+ 0x5157)
        let password = random.bytes(count: seed % 20)
        let identity = random.bytes(count: seed % 7)
        let other = password + [UInt8(seed % 256)]
        let side1 = WormholeSPAKE2(password: password, identity: identity).start(using: &random)
        let side2 = WormholeSPAKE2(password: password, identity: identity).start(using: &random)
        let side3 = WormholeSPAKE2(password: other, identity: identity).start(using: &random)
        let side4 = WormholeSPAKE2(password: password, identity: identity + [1]).start(using: &random)
        let m1 = side1.message
        let m2 = side2.message
        let key1 = try side1.finish(m2)
        let key2 = try side2.finish(m1)
        #expect(key1 == key2)
        #expect(key1.count == 32)
        // A different password or identity gives a different key (nothing fails: the
        // protocol has no confirmation; Magic Wormhole notices when decryption fails).
        let key3 = try side3.finish(m1)
        let key4 = try side4.finish(m1)
        #expect(key3 != key1)
        #expect(key4 != key1)
    }
}
