import ClientCore
import Foundation
import JoinProtocol
import PAKE
import Testing

@Suite struct WormholeCodeTests {
    @Test func wordListMatchesTheAppendixDigest() {
        #expect(WormholeWordList.even.count == 256)
        #expect(WormholeWordList.odd.count == 256)
        // wormhole-protocol.md Appendix A: "HH even odd" lines, uppercase hex, joined by "\n".
        let lines = (0..<256).map { byte in
            String(format: "%02X", byte) + " \(WormholeWordList.even[byte]) \(WormholeWordList.odd[byte])"
        }
        let digest = SHA256.hash(Array(lines.joined(separator: "\n").utf8))
        #expect(Hex.encode(digest) == "63e4decde66753d461d31e419087ad6b1f4718c77cecbdc2cb6d79cc21080440")
        #expect(Set(WormholeWordList.even).isDisjoint(with: WormholeWordList.odd))
        #expect(WormholeWordList.even.first == "aardvark" && WormholeWordList.odd.last == "yucatan")
    }

    @Test func generatedCodesAlternateOddAndEvenWords() {
        var random = SeededRandom(seed: 7)
        var seen = Set<String>()
        for count in 1...6 {
            for _ in 0..<50 {
                let code = WormholeCode(
                    nameplate: Rendezvous.Nameplate("42"), wordCount: count, using: &random)
                #expect(code.nameplate.value == "42")
                #expect(code.text.hasPrefix("42-"))
                let words = code.words
                #expect(words.count == count)
                for (i, word) in words.enumerated() {
                    #expect((i % 2 == 0 ? WormholeWordList.odd : WormholeWordList.even).contains(word))
                }
                // A generated code parses back to itself.
                #expect((try? WormholeCode(parsing: code.text))?.text == code.text)
                seen.insert(code.text)
            }
        }
        // Random, not constant: 300 codes with at least 8 bits each are mostly distinct.
        #expect(seen.count > 250)
    }

    @Test func generatedWordsFollowTheRandomBytes() {
        struct Fixed: RandomByteSource {
            var bytes: [UInt8]
            mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
                for i in 0..<buffer.count { buffer[i] = bytes.removeFirst() }
            }
        }
        var random = Fixed(bytes: [0x69, 0xa9, 0x00])
        let code = WormholeCode(nameplate: Rendezvous.Nameplate("7"), wordCount: 3, using: &random)
        #expect(code.text == "7-guitarist-revenge-adroitness")
    }

    @Test(arguments: [
        ("7-guitarist-revenge", "7"),
        ("  42-coral-piano\n", "42"),
        ("31-Aztec-Brazilian", "31"),
        ("1-x", "1"),
        ("0123-a-b-c-d", "0123"),
    ])
    func parsesCodes(input: String, nameplate: String) throws {
        let code = try WormholeCode(parsing: input)
        #expect(code.nameplate.value == nameplate)
        #expect(code.text == input.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(code.password == Array(code.text.utf8))
    }

    @Test(arguments: [
        "", "   ", "guitarist-revenge", "7", "7-", "-7-a", "7--a", "7-a-", "7 -a", "7-a b", "x7-a",
        "٣-a", "7-a\u{0}b", String(repeating: "1", count: 41) + "-a",
        "7-" + String(repeating: "a", count: 600),
    ])
    func refusesMalformedCodes(input: String) {
        #expect(throws: WormholeError.self) { try WormholeCode(parsing: input) }
        do {
            _ = try WormholeCode(parsing: input)
        } catch {
            #expect(error.code == "invalid_code")
            #expect(error.description.hasPrefix("that is not a Wormhole code"))
        }
    }

    @Test func passwordIsTheNFCCode() throws {
        // "e" + combining acute (NFD) and the precomposed é must give the same password.
        let decomposed = try WormholeCode(parsing: "5-cafe\u{301}-x")
        let composed = try WormholeCode(parsing: "5-caf\u{e9}-x")
        #expect(decomposed.password == composed.password)
        #expect(decomposed.password == Array("5-caf\u{e9}-x".utf8))
        // Case is kept: other clients treat it as a different password.
        #expect(try WormholeCode(parsing: "5-A-b").password != WormholeCode(parsing: "5-a-b").password)
    }

    @Test func descriptionHidesTheWords() throws {
        let code = try WormholeCode(parsing: "7-guitarist-revenge")
        for shown in [
            "\(code)", String(reflecting: code),
            {
                var s = ""
                dump(code, to: &s)
                return s
            }(),
        ] {
            #expect(!shown.contains("guitarist"))
            #expect(shown.contains("7"))
        }
    }

    @Test func secretBoxFraming() throws {
        var random = SeededRandom(seed: 1)
        let key = SecretBytes(randomCount: 32, using: &random)
        let plaintext = Array("hello".utf8)
        let body = WormholeSecretBox.seal(plaintext, key: key, using: &random)
        #expect(body.count == 24 + 16 + plaintext.count)
        #expect(WormholeSecretBox.open(body, key: key) == plaintext)
        // Random nonces: the same plaintext never gives the same body.
        #expect(WormholeSecretBox.seal(plaintext, key: key, using: &random) != body)
        #expect(WormholeSecretBox.open(WormholeSecretBox.seal([], key: key, using: &random), key: key) == [])
        var tampered = body
        tampered[30] ^= 1
        #expect(WormholeSecretBox.open(tampered, key: key) == nil)
        #expect(WormholeSecretBox.open(Array(body.prefix(39)), key: key) == nil)
        #expect(WormholeSecretBox.open([], key: key) == nil)
        let other = SecretBytes(randomCount: 32, using: &random)
        #expect(WormholeSecretBox.open(body, key: other) == nil)
    }

    @Test func applicationMessages() throws {
        #expect(
            try WormholeMessage.parseApplication(WormholeMessage.offer(text: "hi ✓")) == .offerText("hi ✓"))
        #expect(
            try WormholeMessage.parseApplication(WormholeMessage.textAcknowledgement) == .textAcknowledged)
        #expect(try WormholeMessage.parseApplication(WormholeMessage.error("no")) == .error("no"))
        let cases: [(String, WormholeMessage.Application)] = [
            (#"{"offer": {"file": {"filename": "a", "filesize": 3}}}"#, .offerOther("a file")),
            (#"{"offer": {"directory": {}}}"#, .offerOther("a directory")),
            (#"{"offer": {"thing": 1}}"#, .offerOther("something unknown")),
            (#"{"transit": {"abilities-v1": []}}"#, .ignored),
            (#"{"answer": {"file_ack": "ok"}}"#, .otherAnswer("an answer without message_ack")),
            (#"{"answer": {"message_ack": "no"}}"#, .otherAnswer("message_ack no")),
            (#"{"error": 3, "offer": {"message": "x"}}"#, .error("an unspecified error")),
            (#"{"unknown": true}"#, .ignored),
        ]
        for (json, expected) in cases {
            #expect(try WormholeMessage.parseApplication(Array(json.utf8)) == expected)
        }
        for bad in [
            "", "[]", "\"x\"", "{", #"{"offer": 3}"#, #"{"offer": {"message": 3}}"#, #"{"answer": []}"#,
        ] {
            #expect(throws: WormholeError.self) { try WormholeMessage.parseApplication(Array(bad.utf8)) }
        }
        #expect(throws: WormholeError.self) { try WormholeMessage.parseApplication([0xff, 0xfe]) }
        #expect(WormholeMessage.isValidVersion(WormholeMessage.versionPlaintext))
        #expect(
            String(decoding: WormholeMessage.versionPlaintext, as: UTF8.self).replacingOccurrences(
                of: " ", with: "")
                == #"{"app_versions":{}}"#)
    }
}
