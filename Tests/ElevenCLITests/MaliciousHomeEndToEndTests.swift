import ClientCore
import Foundation
import SpaceModel
import TestSupport
import Testing

/// `eleven sync` against a real `eleven-server --home` whose database the attacker rewrites: the
/// person sees a clear error with a stable code and exit status, and nothing is uploaded.
@Suite(.serialized) struct MaliciousHomeEndToEndTests {
    /// One row of the home server's database, each column as hex.
    private static func select(_ database: String, _ sql: String) throws -> [String] {
        let script = """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1]); r = c.execute(sys.argv[2]).fetchone()
            print(" ".join(x.hex() if isinstance(x, bytes) else str(x) for x in r))
            """
        let result = try TestSupport.run(
            "/usr/bin/env", ["python3", "-c", script, database, sql], timeout: 30)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ").map(
            String.init)
    }

    private static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return out
    }

    private static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func syncRefusesTheServersOwnKeyAndSaysSo() async throws {
        try await TestSupport.offPool {
            let home = try HomeServerUnderTest()
            let spaces = try ElevenServerUnderTest()
            let a = try ElevenHome("a")
            #expect(
                try a.run(["space", "create", "Family", "--server", spaces.url, "--as", "Paul"]).status == 0)
            let signedIn = try a.run(["signin", "--server", home.url, "--label", "laptop"])
            #expect(signedIn.status == 0)
            #expect(
                signedIn.stdout.contains("Your 1 space is saved on your home server."), "\(signedIn.stdout)")

            // The server seals a key of its choice to the device's public key and stores an empty
            // vault under it.
            let row = try Self.select(
                home.databasePath,
                "SELECT n.id, n.encryption_key, n.signing_key, a.generation FROM home_anchors n "
                    + "JOIN home_accounts a ON a.id = n.account_id")
            let keys = AnchorKeys(
                kind: .device,
                publicKeys: MemberPublicKeys(
                    encryption: try EncryptionPublicKey(bytes: Self.bytes(hex: row[1])),
                    signing: try SigningPublicKey(bytes: Self.bytes(hex: row[2]))))
            let evil = VaultKey.random(generation: Int64(row[3]) ?? 1)
            let planted = evil.seal(VaultDocument().encoded())
            try TestSupport.runSQL(
                database: home.databasePath,
                "UPDATE home_anchors SET wrap = X'\(Self.hex(evil.wrap(for: keys)))' WHERE id = X'\(row[0])'")
            try TestSupport.runSQL(
                database: home.databasePath, "UPDATE home_accounts SET vault = X'\(Self.hex(planted))'")

            let refused = try a.run(["sync", "--json"])
            #expect(refused.status == 4, "\(refused.stdout) \(refused.stderr)")
            #expect(try errorCode(refused) == "vault_key_unauthenticated")
            let told = try a.run(["sync"])
            #expect(told.status == 4)
            #expect(told.stderr.contains("Nothing was uploaded"), "\(told.stderr)")
            print(
                "eleven sync → exit \(told.status): \(told.stderr.trimmingCharacters(in: .whitespacesAndNewlines))"
            )
            // A command that changes the saved spaces keeps the change on the device and says why
            // it did not reach the home server.
            let starred = try a.run(["star", "Family"])
            #expect(starred.status == 0)
            #expect(starred.stderr.contains("tampered"), "\(starred.stderr)")
            // Nothing reached the server: it holds exactly the vault it planted.
            #expect(
                try Self.select(home.databasePath, "SELECT vault FROM home_accounts") == [Self.hex(planted)])
            #expect(try a.json(["spaces", "--json"])["spaces"].map { ($0 as? [Any])?.count } == 1)
        }
    }
}
