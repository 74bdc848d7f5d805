import ClientCore
import PAKE
import SpaceModel
import Testing

/// Every link format, minting and hostile input: a precise error, never a crash or a guess.
@Suite struct InviteLinkParserTests {
    static let secretBytes: [UInt8] = Array(0x10...0x1F).map { UInt8($0) }
    static var secretText: String { Base58.encode(secretBytes) }
    static let brandingBytes: [UInt8] = (0..<32).map { UInt8(0xA0 &+ $0) }
    static var brandingText: String { Base58.encode(brandingBytes) }

    // MARK: Base58

    @Test func base58KnownVectors() throws {
        // Bitcoin base58 vectors.
        #expect(Base58.encode([UInt8]()) == "")
        #expect(Base58.encode([0]) == "1")
        #expect(Base58.encode([0, 0, 0x28, 0x7F, 0xB4, 0xCD]) == "11233QC4")
        #expect(Base58.encode(Array("Hello World!".utf8)) == "2NEpo7TZRRrLZSi2U")
        #expect(
            Base58.encode(Array("The quick brown fox jumps over the lazy dog.".utf8))
                == "USm3fpXnKG5EUBx2ndxBDMPVciP5hGey2Jh4NDv6gmeo1LkMeiKrLJUUBk6Z")
        #expect(
            Base58.encode([
                0x00, 0xEB, 0x15, 0x23, 0x1D, 0xFC, 0xEB, 0x60, 0x92, 0x58, 0x86, 0xB6, 0x7D,
                0x06, 0x52, 0x99, 0x92, 0x59, 0x15, 0xAE, 0xB1, 0x72, 0xC0, 0x66, 0x47,
            ]) == "1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L")
        #expect(try Base58.decode("2NEpo7TZRRrLZSi2U") == Array("Hello World!".utf8))
        #expect(try Base58.decode("11233QC4") == [0, 0, 0x28, 0x7F, 0xB4, 0xCD])
        #expect(try Base58.decode("") == [])
    }

    @Test func base58RoundTripsRandomBytes() throws {
        var random = SeededRandom(seed: 58)
        for length in 0..<40 {
            for _ in 0..<8 {
                var bytes = random.bytes(count: length)
                if length > 2 && bytes[0] & 1 == 0 { bytes[0] = 0 }  // leading zeros too
                let text = Base58.encode(bytes)
                #expect(try Base58.decode(text) == bytes)
                #expect(!text.contains { "0OIl".contains($0) })
            }
        }
    }

    @Test(arguments: ["0", "O", "I", "l", "+", "/", " ", "é", "\u{0}"])
    func base58RefusesOutsideAlphabet(_ bad: String) {
        #expect(throws: Base58.DecodeError.invalidCharacter(offset: 3)) {
            try Base58.decode("abc" + bad + "def")
        }
    }

    @Test func base58RefusesHugeInput() {
        #expect(throws: Base58.DecodeError.tooLong(length: 10_000)) {
            try Base58.decode(String(repeating: "z", count: 10_000))
        }
    }

    // MARK: Formats

    @Test func currentFormat() throws {
        let link = try InviteLink(parsing: "https://space.example/invite#Paul/\(Self.secretText)")
        #expect(link.server == "https://space.example")
        #expect(link.name == "Paul")
        #expect(link.format == .current)
        #expect(link.brandingKey == nil)
        #expect(link.secret == (try LinkSecret(secret: SecretBytes(Self.secretBytes))))
        #expect(link.text() == "https://space.example/invite#Paul/\(Self.secretText)")
    }

    @Test func sealedSpaceHasBrandingKey() throws {
        let link = try InviteLink(
            parsing: "http://127.0.0.1:8711/invite#Family/\(Self.secretText)/\(Self.brandingText)")
        #expect(link.server == "http://127.0.0.1:8711")
        #expect(link.brandingKey?.secret.unredactedBytes() == Self.brandingBytes)
        #expect(try InviteLink(parsing: link.text()) == link)
    }

    @Test func shortCodeInTheSlot() throws {
        let reference = try InviteReference(parsing: "https://space.example/invite#Paul/coral-piano-42")
        guard case .shortCode(let short) = reference else {
            Issue.record("expected a short code, got \(reference)")
            return
        }
        #expect(short.name == "Paul")
        #expect(short.code.description == "coral-piano-42")
        #expect(short.server == "https://space.example")
        let error = #expect(throws: InviteLinkError.self) {
            try InviteLink(parsing: "https://space.example/invite#Paul/coral-piano-42")
        }
        #expect(error?.code == .shortCodeLink)
        let bad = #expect(throws: InviteLinkError.self) {
            try InviteReference(parsing: "https://space.example/invite#Paul/coral-notaword-42")
        }
        #expect(bad?.code == .invalidShortCode)
        #expect(bad?.part == .shortCode)
        #expect(bad.map { !$0.message.contains("notaword") } == true)
        let extra = #expect(throws: InviteLinkError.self) {
            try InviteReference(parsing: "https://space.example/invite#Paul/coral-piano-42/x")
        }
        #expect(extra?.code == .extraSlot)
    }

    @Test func legacyE1() throws {
        let link = try InviteLink(
            parsing: "https://old.example/join/join#e1.\(Self.secretText)~Sam%20Smith~\(Self.brandingText)")
        #expect(link.format == .legacyE1)
        #expect(link.name == "Sam Smith")
        #expect(link.brandingKey != nil)
        let plain = try InviteLink(parsing: "https://old.example/join/join#e1.\(Self.secretText)~Sam")
        #expect(plain.brandingKey == nil)
        #expect(plain.secret == link.secret)
        // Re-minted in the current format, the same invite.
        #expect(try InviteLink(parsing: plain.text()).secret == plain.secret)
    }

    @Test func legacyRaw() throws {
        let link = try InviteLink(parsing: "https://old.example/join/join#\(Self.secretText)")
        #expect(link.format == .legacyRaw)
        #expect(link.name == nil)
        #expect(link.secret == (try LinkSecret(secret: SecretBytes(Self.secretBytes))))
        #expect(link.text(name: "Family").hasSuffix("/invite#Family/\(Self.secretText)"))
    }

    @Test func unicodeNamesRoundTrip() throws {
        let names = ["Zoë / Ümit", "a~b~c", "dots.and.more.", "家族/グループ", "%41 literal", "e1.x", "🙂/~."]
        for name in names {
            let secret = LinkSecret.random()
            let link = InviteLink(server: "https://s.example", name: name, secret: secret)
            let text = link.text()
            let fragment = text.split(separator: "#", maxSplits: 1)[1]
            #expect(fragment.split(separator: "/").count == 2, "\(name) must not add a slot")
            let parsed = try InviteLink(parsing: text)
            #expect(parsed.name == name)
            #expect(parsed.secret == secret)
            #expect(parsed.format == .current)
        }
    }

    @Test func mintedSecretsAre22Characters() {
        var random = SeededRandom(seed: 22)
        for _ in 0..<300 {
            let link = InviteLink(server: "https://s", name: "n", secret: LinkSecret.random(using: &random))
            #expect(link.text().count == "https://s/invite#n/".count + 22)
        }
    }

    @Test func descriptionsRedact() throws {
        let link = try InviteLink(
            parsing: "https://space.example/invite#Paul/\(Self.secretText)/\(Self.brandingText)")
        for text in ["\(link)", String(reflecting: link), "\(link.secret)", "\(link.secret.derive())"] {
            #expect(!text.contains(Self.secretText))
            #expect(!text.contains(Self.brandingText))
        }
    }

    @Test func derivationIsStableAndSeparated() throws {
        let secret = try LinkSecret(secret: SecretBytes(Self.secretBytes))
        let keys = secret.derive()
        let again = secret.derive()
        #expect(keys.id == again.id)
        #expect(keys.wrapKey == again.wrapKey)
        #expect(keys.claimSecret == again.claimSecret)
        #expect(keys.wrapKey != keys.claimSecret)
        #expect(!keys.wrapKey.unredactedBytes().starts(with: keys.id.bytes))
        #expect(!keys.claimSecret.unredactedBytes().starts(with: keys.id.bytes))
        #expect(keys.verifier != keys.claimSecret.unredactedBytes())
        let other = LinkSecret.random().derive()
        #expect(other.id != keys.id)
    }

    // MARK: Hostile input

    struct Bad: Sendable, CustomStringConvertible {
        let text: String
        let code: InviteLinkError.Code
        let part: InviteLinkError.Part
        var description: String { "\(code): \(text.prefix(80))" }
    }

    static let t = secretText
    static let bk = brandingText
    static let hostile: [Bad] = [
        Bad(text: "", code: .notALink, part: .link),
        Bad(text: "hello", code: .notALink, part: .link),
        Bad(text: "ftp://x/invite#a/\(t)", code: .notALink, part: .link),
        Bad(text: "space.example/invite#a/\(t)", code: .notALink, part: .link),
        Bad(text: "https://space.example/invite", code: .missingFragment, part: .fragment),
        Bad(text: "https://space.example/invite#", code: .missingFragment, part: .fragment),
        Bad(text: "https:///invite#a/\(t)", code: .invalidHost, part: .host),
        Bad(text: "https://ex ample/invite#a/\(t)", code: .invalidHost, part: .host),
        Bad(text: "https://user@example/invite#a/\(t)", code: .invalidHost, part: .host),
        Bad(text: "https://example:99999/invite#a/\(t)", code: .invalidHost, part: .host),
        Bad(text: "https://example:+80/invite#a/\(t)", code: .invalidHost, part: .host),
        Bad(text: "https://s/invite#/\(t)", code: .emptySlot, part: .name),
        Bad(text: "https://s/invite#%20%20/\(t)", code: .emptySlot, part: .name),
        Bad(text: "https://s/invite#a/", code: .emptySlot, part: .secret),
        Bad(text: "https://s/invite#a/\(t)/", code: .emptySlot, part: .brandingKey),
        Bad(text: "https://s/invite#a//\(bk)", code: .emptySlot, part: .secret),
        Bad(text: "https://s/invite#a/\(t)/\(bk)/x", code: .extraSlot, part: .fragment),
        Bad(text: "https://s/invite#a/b/c/d/e/f", code: .extraSlot, part: .fragment),
        Bad(text: "https://s/invite#a%2/\(t)", code: .invalidPercentEncoding, part: .name),
        Bad(text: "https://s/invite#a%zz/\(t)", code: .invalidPercentEncoding, part: .name),
        Bad(text: "https://s/invite#a%/\(t)", code: .invalidPercentEncoding, part: .name),
        Bad(text: "https://s/invite#%FF%FE/\(t)", code: .invalidName, part: .name),
        Bad(text: "https://s/invite#a%0Ab/\(t)", code: .invalidName, part: .name),
        Bad(text: "https://s/invite#a%00/\(t)", code: .invalidName, part: .name),
        Bad(
            text: "https://s/invite#\(String(repeating: "n", count: 129))/\(t)", code: .invalidName,
            part: .name),
        Bad(text: "https://s/invite#a/\(t.dropLast())0", code: .invalidBase58, part: .secret),
        Bad(text: "https://s/invite#a/\(t.dropLast())l", code: .invalidBase58, part: .secret),
        Bad(text: "https://s/invite#a/\(t.dropLast(2))", code: .invalidSecret, part: .secret),
        Bad(text: "https://s/invite#a/\(t)zz", code: .invalidSecret, part: .secret),
        Bad(text: "https://s/invite#a/1111111111111111111111", code: .invalidSecret, part: .secret),
        Bad(
            text: "https://s/invite#a/\(String(repeating: "z", count: 500))", code: .invalidBase58,
            part: .secret),
        Bad(text: "https://s/invite#a/\(t)/\(bk.dropLast(3))", code: .invalidBrandingKey, part: .brandingKey),
        Bad(text: "https://s/invite#a/\(t)/\(bk.dropLast())O", code: .invalidBase58, part: .brandingKey),
        Bad(text: "https://s/join/join#e1.\(t)", code: .missingSlot, part: .name),
        Bad(text: "https://s/join/join#e1.", code: .missingSlot, part: .name),
        Bad(text: "https://s/join/join#e1.~a", code: .emptySlot, part: .secret),
        Bad(text: "https://s/join/join#e1.\(t)~", code: .emptySlot, part: .name),
        Bad(text: "https://s/join/join#e1.\(t)~a~", code: .emptySlot, part: .brandingKey),
        Bad(text: "https://s/join/join#e1.\(t)~a~\(bk)~x", code: .extraSlot, part: .fragment),
        Bad(text: "https://s/join/join#e1.\(t)~a%g1", code: .invalidPercentEncoding, part: .name),
        Bad(text: "https://s/join/join#e2.\(t)", code: .invalidBase58, part: .secret),
        Bad(text: "https://s/join/join#\(t)~a", code: .invalidBase58, part: .secret),
        Bad(text: "https://s/join/join#abc", code: .invalidSecret, part: .secret),
        Bad(text: "https://s/invite#" + String(repeating: "a/", count: 5000), code: .tooLong, part: .link),
        Bad(
            text: "https://s/invite#" + String(repeating: "%", count: 1000) + "/\(t)",
            code: .invalidPercentEncoding, part: .name),
        // A `/` the minter forgot to encode is a slot boundary: a precise error, never a guess.
        Bad(text: "https://s/invite#Sam/Ann/\(t)", code: .invalidSecret, part: .secret),
        Bad(text: "https://s/invite#Sam/Ann/Lee/\(t)", code: .extraSlot, part: .fragment),
        // Overlong UTF-8 for "/" and a lone surrogate's bytes are not text.
        Bad(text: "https://s/invite#a%C0%AFb/\(t)", code: .invalidName, part: .name),
        Bad(text: "https://s/invite#%ED%A0%80/\(t)", code: .invalidName, part: .name),
        Bad(text: "https://s/invite#a/\(t)#x", code: .invalidBase58, part: .secret),
        Bad(text: "https://s/invite#a/\(t)%20", code: .invalidBase58, part: .secret),
        Bad(text: "https://s/invite#a/\(t)/\(bk)/\(bk)", code: .extraSlot, part: .fragment),
        Bad(
            text: "https://s/invite#a/\(t.prefix(11))\u{301}\(t.dropFirst(11))", code: .invalidBase58,
            part: .secret),
        Bad(text: "https://s/join/join#e1.\(t)~a~b~c~d", code: .extraSlot, part: .fragment),
        Bad(
            text: "https://s/join/join#e1.\(t)~\(String(repeating: "%41", count: 129))", code: .invalidName,
            part: .name),
        Bad(text: "https://s/invite#" + String(repeating: "z", count: 2100), code: .tooLong, part: .link),
    ]

    /// Edge cases that are valid: the length limit exactly, zero bytes in the secret (leading `1`s),
    /// lower-case percent escapes, `~` and `.` in legacy names, whitespace around a pasted link.
    @Test func edgeCasesThatParse() throws {
        let zeros = try InviteLink(parsing: "https://s/invite#a/1111111111111111")
        #expect(zeros.secret.secretBytes.unredactedBytes() == [UInt8](repeating: 0, count: 16))
        #expect(try InviteLink(parsing: zeros.text()).secret == zeros.secret)
        #expect(try InviteLink(parsing: "https://s/invite#Zo%c3%ab/\(Self.t)").name == "Zoë")
        #expect(try InviteLink(parsing: "https://s/join/join#e1.\(Self.t)~a%7Eb.c").name == "a~b.c")
        #expect(
            try InviteLink(parsing: "  https://S.Example/invite#a/\(Self.t)\n").server == "https://s.example")
        let base = "https://s/invite#a/\(Self.t)"
        let padded = base.replacingOccurrences(
            of: "#a/",
            with: "#" + String(repeating: "b", count: InviteReference.maximumLength - base.utf8.count + 1)
                + "/")
        #expect(padded.utf8.count == InviteReference.maximumLength)
        // Exactly at the limit the length is fine (the name is then too long, a different error).
        let error = #expect(throws: InviteLinkError.self) { try InviteReference(parsing: padded) }
        #expect(error?.code == .invalidName)
        let over = #expect(throws: InviteLinkError.self) { try InviteReference(parsing: padded + "b") }
        #expect(over?.code == .tooLong)
    }

    @Test(arguments: hostile)
    func hostileInputGetsPreciseError(_ bad: Bad) {
        let error = #expect(throws: InviteLinkError.self) { try InviteReference(parsing: bad.text) }
        #expect(error?.code == bad.code, "\(error?.message ?? "")")
        #expect(error?.part == bad.part, "\(error?.message ?? "")")
        // Messages never quote the secret.
        #expect(error.map { !$0.message.contains(Self.t) && !$0.message.contains(Self.t.prefix(12)) } == true)
    }

    @Test func mutatedLinksParseExactlyOrFailPrecisely() {
        var random = SeededRandom(seed: 11)
        let valid = "https://s.example/invite#Zo%C3%AB/\(Self.t)/\(Self.bk)"
        let original = try? InviteLink(parsing: valid)
        #expect(original != nil)
        let alphabet = Array("/~.%#-0Il1zA é:".unicodeScalars)
        for _ in 0..<400 {
            var scalars = Array(valid.unicodeScalars)
            let roll = random.bytes(count: 3)
            let position = Int(roll[0]) % scalars.count
            switch roll[1] % 3 {
            case 0: scalars[position] = alphabet[Int(roll[2]) % alphabet.count]
            case 1: scalars.remove(at: position)
            default: scalars.insert(alphabet[Int(roll[2]) % alphabet.count], at: position)
            }
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars)
            do {
                let parsed = try InviteReference(parsing: text)
                // Whatever still parses is a well-formed reference, never a silent guess at the old secret
                // from a changed secret slot.
                if case .link(let link) = parsed, link.secret == original?.secret {
                    #expect(text.contains(Self.t), "\(text)")
                }
            } catch {
                #expect(!error.message.isEmpty)
                #expect(!error.message.contains(Self.t))
            }
        }
    }

    @Test func randomGarbageNeverCrashes() {
        var random = SeededRandom(seed: 9)
        let pieces = [
            "https://", "http://", "s.example", ":80", "/invite", "#", "/", "~", "e1.", "%", "%2F", "-",
            "coral", "piano", "42", Self.t, "0", "é", "\u{0}", " ", Self.bk, "1", "zz",
        ]
        for _ in 0..<400 {
            let count = Int(random.bytes(count: 1)[0] % 12)
            let text = (0..<count).map { _ in pieces[Int(random.bytes(count: 1)[0]) % pieces.count] }.joined()
            _ = try? InviteReference(parsing: text)
        }
    }
}
