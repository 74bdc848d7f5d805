import COpenSSL
import Foundation
import Testing

@testable import PAKE

@Suite("Hashing, HMAC and HKDF")
struct PrimitiveTests {
    @Test func sha256KnownAnswers() {
        #expect(
            SHA256.hash(Array("abc".utf8)).hex
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hash([UInt8]()).hex
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        var hasher = SHA256()
        hasher.update(Array("a".utf8))
        hasher.update(Array("bc".utf8)[...])
        #expect(hasher.finalize() == SHA256.hash(Array("abc".utf8)))
    }

    /// RFC 4231 test cases 1, 2 and 6 (key longer than a block).
    @Test(arguments: [
        (
            "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", Array("Hi There".utf8).hex,
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        ),
        (
            Array("Jefe".utf8).hex, Array("what do ya want for nothing?".utf8).hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ),
        (
            String(repeating: "aa", count: 131),
            Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8).hex,
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
    ])
    func hmacSHA256(key: String, message: String, tag: String) {
        let key = [UInt8](hex: key)
        let message = [UInt8](hex: message)
        #expect(HMACSHA256.authenticationCode(for: message, key: key).hex == tag)
        #expect(HMACSHA256.isValid([UInt8](hex: tag), for: message, key: SecretBytes(key)))
        var wrong = [UInt8](hex: tag)
        wrong[31] ^= 1
        #expect(!HMACSHA256.isValid(wrong, for: message, key: key))
        #expect(!HMACSHA256.isValid(Array(wrong.prefix(16)), for: message, key: key))
    }

    struct HKDFCase: Sendable, CustomTestStringConvertible {
        let name: String
        let ikm: [UInt8]
        let salt: [UInt8]
        let info: [UInt8]
        let length: Int
        let prk: String
        let okm: String
        var testDescription: String { name }
    }

    /// RFC 5869 Appendix A, all SHA-256 cases (A.1–A.3).
    static let hkdfCases = [
        HKDFCase(
            name: "A.1", ikm: [UInt8](repeating: 0x0b, count: 22), salt: Array(0x00...0x0c),
            info: Array(0xf0...0xf9), length: 42,
            prk: "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
            okm: "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
        HKDFCase(
            name: "A.2", ikm: Array(0x00...0x4f), salt: Array(0x60...0xaf), info: Array(0xb0...0xff),
            length: 82, prk: "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244",
            okm: "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c"
                + "59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71"
                + "cc30c58179ec3e87c14c01d5c1f3434f1d87"),
        HKDFCase(
            name: "A.3", ikm: [UInt8](repeating: 0x0b, count: 22), salt: [], info: [], length: 42,
            prk: "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
            okm: "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"),
    ]

    @Test(arguments: hkdfCases)
    func hkdfRFC5869(_ c: HKDFCase) {
        let okm = HKDFSHA256.deriveKey(from: c.ikm, salt: c.salt, info: c.info, byteCount: c.length)
        #expect(okm.hex == c.okm)
        let prk = HKDFSHA256.extract(from: c.ikm, salt: c.salt)
        #expect(prk.hex == c.prk)
        #expect(HKDFSHA256.expand(pseudorandomKey: prk, info: c.info, byteCount: c.length).hex == c.okm)
        // The PRK is HMAC(salt, IKM) (RFC 5869 §2.2), an independent check through libsodium.
        let salt = c.salt.isEmpty ? [UInt8](repeating: 0, count: 32) : c.salt
        #expect(HMACSHA256.authenticationCode(for: c.ikm, key: salt).hex == c.prk)
    }

    @Test func hkdfEmptyInputsAndSaltEquivalence() {
        let empty = HKDFSHA256.deriveKey(from: [UInt8](), info: [UInt8](), byteCount: 32)
        #expect(empty.count == 32)
        let zeroSalt = HKDFSHA256.deriveKey(
            from: Array("k".utf8), salt: [UInt8](repeating: 0, count: 32), byteCount: 32)
        #expect(HKDFSHA256.deriveKey(from: Array("k".utf8), byteCount: 32) == zeroSalt)
        #expect(HKDFSHA256.deriveKey(from: [UInt8](), byteCount: HKDFSHA256.maximumByteCount).count == 8160)
    }

    /// The same bytes as OpenSSL 3's HKDF (which derived them before) for random keys, salts
    /// (empty, short, longer than an HMAC block), infos and lengths up to the maximum.
    @Test func hkdfMatchesOpenSSL() {
        var random = SystemRandomNumberGenerator()
        func bytes(_ count: Int) -> [UInt8] {
            (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
        }
        for round in 0..<300 {
            let ikm = bytes(Int.random(in: 0...100, using: &random))
            let salt = bytes([0, 16, 32, 64, 65, 200][round % 6])
            let info = bytes(Int.random(in: 0...80, using: &random))
            let length =
                round % 50 == 0 ? HKDFSHA256.maximumByteCount : Int.random(in: 1...300, using: &random)
            let ours = HKDFSHA256.deriveKey(from: ikm, salt: salt, info: info, byteCount: length)
            #expect(ours.unredactedBytes() == openSSLHKDF(ikm, salt: salt, info: info, length: length))
        }
    }

    /// HKDF by OpenSSL's `EVP_KDF` "HKDF" (extract and expand), as a reference.
    private func openSSLHKDF(_ ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        let kdf = EVP_KDF_fetch(nil, "HKDF", nil)!
        defer { EVP_KDF_free(kdf) }
        let context = EVP_KDF_CTX_new(kdf)!
        defer { EVP_KDF_CTX_free(context) }
        // OpenSSL wants a pointer even for an empty key.
        let ikmCount = ikm.count
        var ikm = ikm.isEmpty ? [0] : ikm
        var salt = salt
        var info = info
        var output = [UInt8](repeating: 0, count: length)
        let status = "digest".withCString { digestName in
            "SHA256".withCString { sha256 in
                "key".withCString { keyName in
                    "salt".withCString { saltName in
                        "info".withCString { infoName in
                            var parameters = [
                                OSSL_PARAM_construct_utf8_string(
                                    digestName, UnsafeMutablePointer(mutating: sha256), 0),
                                OSSL_PARAM_construct_octet_string(keyName, &ikm, ikmCount),
                            ]
                            if !salt.isEmpty {
                                parameters.append(
                                    OSSL_PARAM_construct_octet_string(saltName, &salt, salt.count))
                            }
                            if !info.isEmpty {
                                parameters.append(
                                    OSSL_PARAM_construct_octet_string(infoName, &info, info.count))
                            }
                            parameters.append(OSSL_PARAM_construct_end())
                            return EVP_KDF_derive(context, &output, length, &parameters)
                        }
                    }
                }
            }
        }
        #expect(status == 1)
        return output
    }
}

@Suite("SecretBytes and random sources")
struct SecretBytesTests {
    @Test func redactsEverywhere() {
        let secret = SecretBytes(Array("hunter2-secret".utf8))
        let marker = "hunter2"
        let hex = Array("hunter2".utf8).hex
        var dumped = ""
        dump(secret, to: &dumped)
        for text in ["\(secret)", String(reflecting: secret), String(describing: [secret]), dumped] {
            #expect(!text.contains(marker) && !text.contains(hex), "leaked in: \(text)")
            #expect(text.contains("redacted") || text.contains("SecretBytes"))
        }
        for suite in SPAKE2.Suite.allCases {
            let password = SPAKE2.Password(deriving: Array("coral".utf8), context: [UInt8](), suite: suite)
            var dumpedPassword = ""
            dump(password, to: &dumpedPassword)
            #expect("\(password)".contains("redacted"))
            for secret in [password.scalar, password.timesM, password.timesN] {
                let hex = secret.hex
                #expect(!dumpedPassword.contains(String(hex.prefix(8))) && !"\(password)".contains(hex))
            }
        }
    }

    @Test func equalityAndSlicing() {
        let a = SecretBytes([1, 2, 3, 4])
        #expect(a == SecretBytes([1, 2, 3, 4]))
        #expect(a != SecretBytes([1, 2, 3, 5]))
        #expect(a != SecretBytes([1, 2, 3]))
        #expect(SecretBytes([UInt8]()) == SecretBytes([UInt8]()))
        #expect(a.prefix(2).unredactedBytes() == [1, 2])
        #expect(a.slice(1..<4).unredactedBytes() == [2, 3, 4])
        #expect(a.isEqual(toBytes: [1, 2, 3, 4] as [UInt8]))
        #expect(!a.isEqual(toBytes: [1, 2, 3, 4, 5] as [UInt8]))
        #expect(a.count == 4)
    }

    @Test func randomSources() {
        var first = SeededRandom(seed: 7)
        var second = SeededRandom(seed: 7)
        var other = SeededRandom(seed: 8)
        let a = first.bytes(count: 40)
        #expect(a == second.bytes(count: 40))
        #expect(a != other.bytes(count: 40))
        #expect(first.bytes(count: 40) != a)
        var system = SystemRandom()
        let x = system.bytes(count: 32)
        let y = system.bytes(count: 32)
        #expect(x != y && x != [UInt8](repeating: 0, count: 32))
        #expect(SecretBytes(randomCount: 32, using: &system).count == 32)
    }
}
