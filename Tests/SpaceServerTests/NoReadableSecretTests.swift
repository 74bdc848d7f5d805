import ClientCore
import Foundation
import SpaceModel
import SpaceServer
import Testing

/// Promise 3: no server holds a readable key. After a realistic session, nothing in the database
/// (every table, and the raw database and WAL files) contains a plaintext message, a thread key, a
/// private key or a bearer token, raw or as hex or base64.
@Suite struct NoReadableSecretTests {
    @Test func databaseHoldsNoReadableSecret() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let lee = try space.add("Lee", rights: .invite)
        var secrets: [(String, [UInt8])] = []
        var plaintexts: [String] = []

        var threadKeys: [ThreadKey] = []
        for round in 0..<3 {
            let (thread, key) = try space.createThread(by: space.owner, for: [space.owner, sam, lee])
            threadKeys.append(key)
            for (index, author) in [space.owner, sam, lee].enumerated() {
                let text = "secret plan \(round)-\(index): the spare key is under the blue flowerpot"
                plaintexts.append(text)
                try space.post(text, by: author, thread: thread, key: key)
            }
        }
        let note = try sam.identity.note(
            Array("note text: meet by the old oak".utf8), to: lee.record, in: space.space, from: sam.id)
        #expect(
            try harness.send("POST", "\(space.base)/inbox", token: sam.token, json: ["note": note]).status
                == 201)
        plaintexts.append("note text: meet by the old oak")
        try space.remove(lee)

        for (index, key) in threadKeys.enumerated() {
            secrets.append(("thread key \(index)", key.secretBytes.unredactedBytes()))
        }
        for member in [space.owner, sam, lee] {
            let stored = member.identity.storedForm().unredactedBytes()
            secrets.append(("\(member.name) X25519 secret", Array(stored[5..<37])))
            secrets.append(("\(member.name) Ed25519 seed", Array(stored[37..<69])))
            secrets.append(("\(member.name) token", try #require(Base64URL.decode(member.token))))
        }
        secrets.append(("admin token", try #require(Base64URL.decode(space.adminToken))))
        for text in plaintexts {
            secrets.append(("plaintext", Array(text.utf8)))
        }

        // Every value of every table, as raw bytes and as text, and the raw files.
        let dump = try harness.dump()
        #expect(dump["messages"]?.count == 9)
        #expect(dump["wraps"]?.count == 9)
        var haystacks: [[UInt8]] = [try harness.rawFiles()]
        for rows in dump.values {
            for row in rows {
                for value in row {
                    switch value {
                    case .blob(let bytes): haystacks.append(bytes)
                    case .text(let text): haystacks.append(Array(text.utf8))
                    case .integer, .null: break
                    }
                }
            }
        }
        #expect(haystacks[0].count > 10_000)

        for (label, secret) in secrets {
            let forms: [[UInt8]] = [
                secret,
                Array(secret.map { String(format: "%02x", $0) }.joined().utf8),
                Array(secret.map { String(format: "%02X", $0) }.joined().utf8),
                Array(Data(secret).base64EncodedString().utf8),
                Array(Base64URL.encode(secret).utf8),
            ]
            for form in forms {
                // A 16-byte window of the form is enough to count as leaked.
                let probe = Array(form.prefix(max(16, min(form.count, 24))))
                for haystack in haystacks {
                    #expect(!contains(haystack, probe), "\(label) appears in the database")
                }
            }
        }

        // The check itself can fail: public keys and ciphertexts are found the same way.
        let publicKey = sam.identity.publicKeys.signing.bytes
        #expect(haystacks.contains { contains($0, publicKey) })
        #expect(haystacks.contains { contains($0, Array(Base64URL.encode(publicKey).utf8)) })
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return false }
        return Data(haystack).range(of: Data(needle)) != nil
    }
}
