import ClientCore
import Foundation
import PAKE
import SpaceModel
import TestSupport
import Testing

/// `Tests/Vectors/link-secret.json`: what `LinkSecret.derive()` makes of a secret, and the text
/// forms of the secret in current (base58) and legacy (base64url) links. The welcome page's script
/// is checked against the same file in Chromium (`WelcomePageTests`).
@Suite struct LinkSecretVectorTests {
    struct Vector: Decodable {
        let secret: String
        let base58: String
        let base64url: String
        let id: String
        let wrapKey: String
        let claimSecret: String
    }
    struct File: Decodable { let vectors: [Vector] }

    static func vectors() throws -> [Vector] {
        let url = TestSupport.packageRoot.appendingPathComponent("Tests/Vectors/link-secret.json")
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: url)).vectors
    }

    static func bytes(hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined()
    }

    @Test func derivationMatchesTheVectors() throws {
        let vectors = try Self.vectors()
        #expect(vectors.count >= 4)
        for vector in vectors {
            let secret = try LinkSecret(secret: SecretBytes(Self.bytes(hex: vector.secret)))
            let keys = secret.derive()
            #expect(keys.id.base64URL == vector.id)
            #expect(Self.hex(keys.wrapKey.unredactedBytes()) == vector.wrapKey)
            #expect(Self.hex(keys.claimSecret.unredactedBytes()) == vector.claimSecret)
            #expect(Base58.encode(Self.bytes(hex: vector.secret)) == vector.base58)
            #expect(Base64URL.encode(Self.bytes(hex: vector.secret)) == vector.base64url)
        }
    }

    /// Every form carries the same secret: current in base58, legacy in base64url (the legacy
    /// alphabet: `-`, `_`, `0`, `O`, `I`, `l`), and the app's custom scheme around any of them.
    @Test func everyFormParsesToTheSameSecret() throws {
        for vector in try Self.vectors() {
            let secret = try LinkSecret(secret: SecretBytes(Self.bytes(hex: vector.secret)))
            let current = "https://space.example/invite#Vee/\(vector.base58)"
            let forms = [
                current,
                "https://space.example/join/join#e1.\(vector.base64url)~Vee",
                "https://space.example/join/join#\(vector.base64url)",
                InviteReference.appLink(for: current),
                InviteReference.appLink(for: "https://space.example/join/join#e1.\(vector.base64url)~Vee"),
            ]
            for form in forms {
                let link = try InviteLink(parsing: form)
                #expect(link.secret == secret, "\(form)")
                #expect(link.server == "https://space.example")
            }
            // The legacy alphabet is for legacy forms only.
            if vector.base64url.contains(where: { "-_0OIl".contains($0) }) {
                #expect(throws: InviteLinkError.self) {
                    try InviteLink(parsing: "https://space.example/invite#Vee/\(vector.base64url)")
                }
            }
        }
    }

    /// A legacy secret in the legacy alphabet that is not 16 bytes of base64url says so, not that
    /// links never contain `0`, `O`, `I` or `l`.
    @Test func legacyAlphabetErrors() throws {
        let text = try Self.vectors()[4].base64url
        for bad in ["e1.\(text.dropLast())~Vee", "\(text)A", "e1.\(text.dropLast())B~Vee"] {
            do {
                _ = try InviteLink(parsing: "https://space.example/join/join#" + bad)
                Issue.record("parsed \(bad)")
            } catch {
                #expect(error.code == .invalidSecret, "\(bad)")
                #expect(!error.message.contains("never contain"))
            }
        }
    }

    @Test func appLinks() throws {
        let link = "https://space.example/invite#Sam%20Smith/\(try Self.vectors()[0].base58)"
        let app = InviteReference.appLink(for: link)
        #expect(
            app.hasPrefix("elevenmessenger://add?url=https%3A%2F%2Fspace.example%2Finvite%23Sam%2520Smith%2F")
        )
        #expect(try InviteLink(parsing: app).name == "Sam Smith")
        #expect(
            try InviteLink(parsing: "ELEVENMESSENGER://add?x=1&url=" + app.split(separator: "=")[1]).name
                == "Sam Smith")
        let code = InviteReference.appLink(for: "https://space.example/invite#Family/coral-piano-42")
        guard case .shortCode(let short) = try InviteReference(parsing: code) else {
            Issue.record("not a short code")
            return
        }
        #expect(short.name == "Family")
        for bad in [
            "elevenmessenger://add", "elevenmessenger://add?url=", "elevenmessenger://open?url=x",
            "elevenmessenger://add?url=%zz", InviteReference.appLink(for: app),
        ] {
            #expect(throws: InviteLinkError.self, "\(bad)") { try InviteReference(parsing: bad) }
        }
    }
}
