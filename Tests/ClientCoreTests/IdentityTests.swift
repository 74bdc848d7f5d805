import Foundation
import PAKE
import Testing

@testable import ClientCore
@testable import SpaceModel

@Suite struct IdentityTests {
    @Test func storedFormRoundTrips() throws {
        let identity = DeviceIdentity.generate()
        let stored = identity.storedForm()
        #expect(stored.count == DeviceIdentity.storedByteCount)
        let loaded = try DeviceIdentity(storedForm: stored)
        #expect(loaded.publicKeys == identity.publicKeys)
        #expect(loaded.encryptionSecret == identity.encryptionSecret)
        #expect(loaded.signingSecret == identity.signingSecret)
        // The loaded identity signs and unseals like the original.
        var fixture = try SpaceFixture()
        let (member, record) = try fixture.addMember(name: "Sam")
        let key = ThreadKey.random()
        let reloadedMember = try DeviceIdentity(storedForm: member.storedForm())
        let wrap = fixture.owner.wrap(key, for: record, in: fixture.space, thread: .random())
        #expect(try wrap.open(with: reloadedMember, verifyingAgainst: fixture.roster) == key)
    }

    @Test func storedFormRejectsBadInput() {
        let stored = DeviceIdentity.generate().storedForm().unredactedBytes()
        var wrongMagic = stored
        wrongMagic[0] = UInt8(ascii: "X")
        var wrongVersion = stored
        wrongVersion[4] = 2
        let cases: [([UInt8], KeyModelError.Code)] = [
            ([], .invalidEncoding), (Array(stored.prefix(3)), .invalidEncoding),
            (wrongMagic, .invalidEncoding),
            (wrongVersion, .unsupportedVersion), (Array(stored.prefix(40)), .invalidLength),
            (stored + [0], .invalidLength),
        ]
        for (bytes, code) in cases {
            #expect(errorCode { _ = try DeviceIdentity(storedForm: SecretBytes(bytes)) } == code)
        }
    }

    @Test func descriptionsRedactSecrets() {
        let identity = DeviceIdentity.generate()
        let secret = identity.storedForm().unredactedBytes()
        let seed = Array(secret[37..<69])
        let encryptionSecret = Array(secret[5..<37])
        var dumped = ""
        dump(identity, to: &dumped)
        let key = ThreadKey.random()
        var keyDump = ""
        dump(key, to: &keyDump)
        let texts = [
            identity.description, String(describing: identity), String(reflecting: identity), dumped,
            key.description, String(reflecting: key), keyDump, "\(identity.storedForm())",
        ]
        for text in texts {
            for bytes in [seed, encryptionSecret, key.secretBytes.unredactedBytes()] {
                #expect(!text.contains(Base64URL.encode(bytes)))
                #expect(!text.contains(bytes.map { String(format: "%02x", $0) }.joined()))
                #expect(!text.contains(Data(bytes).base64EncodedString()))
                #expect(!text.contains(String(describing: bytes)))
            }
        }
        #expect(identity.description.contains(identity.publicKeys.text))
    }

    @Test func threadKeysCompareByValue() throws {
        let key = ThreadKey.random()
        let copy = try ThreadKey(secret: SecretBytes(key.secretBytes.unredactedBytes()))
        #expect(key == copy)
        #expect(key != ThreadKey.random())
        #expect(
            errorCode { _ = try ThreadKey(secret: SecretBytes([1, 2, 3])) } == .invalidLength)
    }
}

@Suite struct PublicKeyTests {
    @Test func memberKeyTextRoundTrips() throws {
        let keys = DeviceIdentity.generate().publicKeys
        #expect(try MemberPublicKeys(text: keys.text) == keys)
        #expect(errorCode { _ = try MemberPublicKeys(text: "abc") } == .invalidEncoding)
        #expect(errorCode { _ = try MemberPublicKeys(text: keys.text + ".x") } == .invalidEncoding)
    }

    @Test func smallOrderEncryptionKeysAreRejected() {
        var one = [UInt8](repeating: 0, count: 32)
        one[0] = 1
        for point in [[UInt8](repeating: 0, count: 32), one] {
            #expect(errorCode { _ = try EncryptionPublicKey(bytes: point) } == .invalidPublicKey)
        }
        #expect(errorCode { _ = try EncryptionPublicKey(bytes: [1]) } == .invalidLength)
    }

    @Test func invalidSigningKeysAreRejected() {
        // The identity point and an all-ones (non-canonical) encoding are not acceptable keys.
        var identityPoint = [UInt8](repeating: 0, count: 32)
        identityPoint[0] = 1
        for point in [identityPoint, [UInt8](repeating: 0xFF, count: 32), [UInt8](repeating: 0, count: 32)] {
            #expect(errorCode { _ = try SigningPublicKey(bytes: point) } == .invalidPublicKey)
        }
    }

    /// A generated identity's public keys are known valid at once, so reading them back (a
    /// joiner's own member record) costs no scalar multiplication; bad keys are still refused.
    @Test func generatedKeysAreKnownValid() throws {
        let identity = DeviceIdentity.generate()
        let keys = identity.publicKeys
        #expect(CheckedBytes.validEncryptionKeys.holds(keys.encryption.bytes))
        #expect(CheckedBytes.validSigningKeys.holds(keys.signing.bytes))
        #expect(try EncryptionPublicKey(bytes: keys.encryption.bytes) == keys.encryption)
        #expect(try SigningPublicKey(bytes: keys.signing.bytes) == keys.signing)
        // Keys from a stored form are checked as they are derived, and so known too.
        let loaded = try DeviceIdentity(storedForm: identity.storedForm())
        #expect(CheckedBytes.validSigningKeys.holds(loaded.publicKeys.signing.bytes))
        var identityPoint = [UInt8](repeating: 0, count: 32)
        identityPoint[0] = 1
        #expect(!CheckedBytes.validSigningKeys.holds(identityPoint))
        #expect(errorCode { _ = try SigningPublicKey(bytes: identityPoint) } == .invalidPublicKey)
        #expect(!CheckedBytes.validEncryptionKeys.holds([UInt8](repeating: 0, count: 32)))
    }

    @Test func jsonRejectsBadKeys() throws {
        let good = try JSONEncoder().encode(DeviceIdentity.generate().publicKeys)
        #expect(try JSONDecoder().decode(MemberPublicKeys.self, from: good).signing.bytes.count == 32)
        let bad = Data(#"{"encryption":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","signing":"AAAA"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MemberPublicKeys.self, from: bad) }
    }
}

@Suite struct SignInProofTests {
    @Test func verifiesOnlyForTheSigner() throws {
        let identity = DeviceIdentity.generate()
        let challenge = SecretBytes.randomBytes(32)
        let proof = try identity.signIn(to: .random(), as: .random(), challenge: challenge)
        try proof.verify(signingKey: identity.publicKeys.signing)
        #expect(
            errorCode { try proof.verify(signingKey: DeviceIdentity.generate().publicKeys.signing) }
                == .badSignature)
        let moved = try SignInProof(
            space: .random(), member: proof.member, challenge: challenge, signature: proof.signature)
        #expect(errorCode { try moved.verify(signingKey: identity.publicKeys.signing) } == .badSignature)
        #expect(
            errorCode { _ = try identity.signIn(to: .random(), as: .random(), challenge: [1]) }
                == .invalidLength)
    }
}
