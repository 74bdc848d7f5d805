import Foundation
import JoinProtocol
import PAKE
import SpaceModel
import Testing

@testable import ClientCore

@Suite struct Base64URLTests {
    @Test(arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy"),
    ])
    func rfc4648Vectors(plain: String, encoded: String) {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(plain.utf8))
    }

    @Test func urlAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
    }

    @Test(arguments: ["Zg==", "Zm9v\n", "Zm+v", "Zm/v", "Z", "Zh", "Zm9", "Zm 9v", "é", "Zm9=Yg"])
    func rejectsNonCanonicalText(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test func randomRoundTrips() {
        for length in 0..<70 {
            let bytes = SecretBytes.randomBytes(length)
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }
}

@Suite struct CanonicalEncodingTests {
    @Test func lengthPrefixesSeparateFields() {
        var a = CanonicalEncoder(domain: "d")
        a.append([1, 2])
        a.append([3])
        var b = CanonicalEncoder(domain: "d")
        b.append([1])
        b.append([2, 3])
        #expect(a.bytes != b.bytes)
        #expect(a.bytes == [0, 0, 0, 1, 0x64, 0, 0, 0, 2, 1, 2, 0, 0, 0, 1, 3])
    }

    @Test func domainsDiffer() {
        #expect(
            CanonicalEncoder(domain: Domain.keyWrap).bytes != CanonicalEncoder(domain: Domain.inboxNote).bytes
        )
    }
}

@Suite struct IdentifierTests {
    @Test func roundTripAndLength() throws {
        let id = SpaceID.random()
        #expect(id.base64URL.count == 22)
        #expect(try SpaceID(base64URL: id.base64URL) == id)
        #expect(errorCode { _ = try SpaceID(bytes: [1, 2, 3]) } == .invalidLength)
        #expect(errorCode { _ = try SpaceID(base64URL: "not base64!") } == .invalidEncoding)
        let json = try JSONEncoder().encode([id])
        #expect(try JSONDecoder().decode([SpaceID].self, from: json) == [id])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([SpaceID].self, from: Data("[\"AAAA\"]".utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([SpaceID].self, from: Data("[17]".utf8))
        }
    }
}

/// The mailbox bodies' hex (`Hex`, table-driven): every byte both ways, either case read, and
/// anything else refused.
@Suite struct HexTests {
    @Test func everyByteRoundTripsInLowercase() {
        let bytes = (0...255).map { UInt8($0) }
        let text = Hex.encode(bytes)
        #expect(
            text.count == 512 && text == text.lowercased() && text.hasPrefix("000102")
                && text.hasSuffix("feff"))
        #expect(Hex.decode(text) == bytes)
        #expect(Hex.decode(text.uppercased()) == bytes)
        #expect(Hex.encode([UInt8]()) == "" && Hex.decode("") == [])
        #expect(Hex.encode([0xAB, 0x0C][...]) == "ab0c")
        #expect(Hex.decode("aB0c") == [0xAB, 0x0C])
    }

    @Test(arguments: [
        "0", "abc", "0g", "g0", " 0", "0 ", "/0", ":0", "@0", "G0", "`0", "0x", "é0", "ab\u{0}0",
    ])
    func refusesWhatIsNotHex(_ text: String) {
        #expect(Hex.decode(text) == nil)
    }

    @Test func refusesEveryByteThatIsNotADigit() {
        let digits = Set("0123456789abcdefABCDEF".utf8)
        for byte in (0...127).map(UInt8.init) where !digits.contains(byte) {
            #expect(Hex.decode(String(decoding: [UInt8(ascii: "a"), byte], as: UTF8.self)) == nil)
            #expect(
                Hex.decode(String(decoding: [byte, UInt8(ascii: "0"), 0x31, 0x32], as: UTF8.self)) == nil)
        }
    }
}
