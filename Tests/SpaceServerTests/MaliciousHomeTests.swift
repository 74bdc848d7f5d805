import ClientCore
import Foundation
import JoinProtocol
import Net
import SQLite
import SpaceModel
import SpaceServer
import TestSupport
import Testing

/// A compromised home server (`eleven-server --home`) that edits its own database between a
/// device's steps: it substitutes wraps of keys it chose, rolls the vault back, bumps the key
/// generation, and serves another account's vault. In every case the device uploads nothing the
/// server can read, and says why (promise 3 of the design).
@Suite struct MaliciousHomeTests {
    /// The real home API on a loopback socket plus the attacker's own connection to its database.
    final class World {
        let root: URL
        let server: SpaceHTTPServer
        let db: SQLiteDatabase

        init() throws {
            root = try TestSupport.temporaryDirectory()
            let path = root.appendingPathComponent("home.sqlite").path
            var configuration = SpaceHTTPConfiguration(databasePath: path)
            configuration.listenAddresses = [SocketAddress(numericHost: "127.0.0.1", port: 0)!]
            configuration.api.homeEnabled = true
            server = try SpaceHTTPServer(configuration: configuration)
            try server.start()
            db = try SQLiteDatabase(path: path)
        }

        func close() {
            server.shutdown()
            try? FileManager.default.removeItem(at: root)
        }

        var url: String { server.baseURL }

        /// A device with `count` saved spaces, each carrying a device token and an admin token.
        func device(_ name: String, spaces count: Int, prefix: String = "S") throws -> HomeSync {
            let state = LocalState(directory: StateDirectory(path: root.path + "/" + name))
            _ = try state.identity(create: true)
            var saved = SavedSpaces()
            for index in 0..<count {
                saved.save(
                    SavedSpace(
                        space: .random(), name: "\(prefix)\(index)", server: "http://127.0.0.1:1",
                        member: .random(), ownerSigningKey: "k", deviceToken: "device-token-\(prefix)\(index)"
                    ))
            }
            try state.save(saved)
            return HomeSync(state: state)
        }

        /// The account row that holds `device`'s anchor.
        func account(of device: HomeSync) throws -> (
            id: [UInt8], version: Int64, generation: Int64, vault: [UInt8]
        ) {
            let anchor = try #require(try device.home()).anchor
            let row = try #require(
                try db.query(
                    """
                    SELECT a.id, a.version, a.generation, a.vault FROM home_accounts a
                    JOIN home_anchors n ON n.account_id = a.id WHERE n.id = ?
                    """, [.blob(anchor.bytes)]
                ).first)
            return (row[0].blob ?? [], row[1].integer ?? 0, row[2].integer ?? 0, row[3].blob ?? [])
        }

        func wrap(of device: HomeSync) throws -> [UInt8] {
            let anchor = try #require(try device.home()).anchor
            return try #require(
                try db.query("SELECT wrap FROM home_anchors WHERE id = ?", [.blob(anchor.bytes)]).first?[0]
                    .blob)
        }

        /// What the server can do with the public key it stores: seal a key of its choice to it.
        func plant(_ key: VaultKey, for device: HomeSync, vault document: VaultDocument = VaultDocument())
            throws
            -> [UInt8]
        {
            let home = try #require(try device.home())
            let keys = try device.deviceKey().anchor()
            let account = try account(of: device)
            let vault = key.seal(document.encoded())
            try db.query(
                "UPDATE home_anchors SET wrap = ? WHERE id = ?",
                [.blob(key.wrap(for: keys)), .blob(home.anchor.bytes)])
            try db.query(
                "UPDATE home_accounts SET vault = ?, generation = ? WHERE id = ?",
                [.blob(vault), .integer(key.generation), .blob(account.id)])
            return vault
        }

        /// What the server reads with its own key from the vault it now holds.
        func readable(under key: VaultKey, account: [UInt8]) throws -> VaultDocument? {
            let vault = try #require(
                try db.query("SELECT vault FROM home_accounts WHERE id = ?", [.blob(account)]).first?[0].blob)
            guard let plain = try? key.open(vault) else { return nil }
            return try? VaultDocument(decoding: plain)
        }
    }

    /// The error code a step failed with, or nil when it succeeded.
    private static func outcome(_ body: () throws -> Any) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as HomeError {
            return error.code.rawValue
        } catch {
            return "\(error)"
        }
    }

    /// What the attacker learnt, without printing any of it.
    private static func describe(_ document: VaultDocument?) -> String {
        guard let document else { return "nothing opens under the server's key but what it planted" }
        let tokens = document.spaces.filter { !$0.deviceToken.isEmpty }.count
        return
            "the server decrypts \(document.spaces.count) space(s), \(tokens) device token(s), "
            + "account key: \(document.accountKey != nil), identity keys: "
            + "\(document.spaces.filter { $0.identityKey != nil }.count)"
    }

    /// The issue's attack: the server replaces the device's wrap with a sealed box of its own key
    /// and stores an empty vault under it. The device must refuse the key and upload nothing.
    @Test func aSubstitutedWrapGetsTheServerNothing() async throws {
        try await TestSupport.offPool {
            let world = try World()
            defer { world.close() }
            let a = try world.device("a", spaces: 1)
            _ = try a.signIn(server: world.url, label: "a")
            let account = try world.account(of: a)
            let evil = VaultKey.random(generation: account.generation)
            let planted = try world.plant(evil, for: a)

            let code = Self.outcome { try a.sync() }
            let leaked = try world.readable(under: evil, account: account.id)
            print("substituted wrap: sync → \(code ?? "succeeded, no warning"); \(Self.describe(leaked))")
            #expect(code == "vault_key_unauthenticated")
            #expect(try world.account(of: a).vault == planted, "the device uploaded something")
            #expect(leaked?.spaces.isEmpty ?? true)
            let accountKeyLeaked = leaked?.accountKey != nil
            #expect(!accountKeyLeaked)
        }
    }

    /// The server bumps the generation and hands out a key of its own at the new generation, as
    /// if a device had been removed.
    @Test func aGenerationBumpWithTheServersKeyIsRefused() async throws {
        try await TestSupport.offPool {
            let world = try World()
            defer { world.close() }
            let a = try world.device("a", spaces: 2)
            _ = try a.signIn(server: world.url, label: "a")
            let account = try world.account(of: a)
            let evil = VaultKey.random(generation: account.generation + 1)
            let planted = try world.plant(evil, for: a)

            let code = Self.outcome { try a.sync() }
            let leaked = try world.readable(under: evil, account: account.id)
            print("generation bump: sync → \(code ?? "succeeded, no warning"); \(Self.describe(leaked))")
            #expect(code == "vault_key_unauthenticated")
            #expect(try world.account(of: a).vault == planted)
            #expect(leaked?.spaces.isEmpty ?? true)
        }
    }

    /// The server restores an older vault (and its older key generation after a rotation).
    @Test func aRolledBackVaultIsNoticed() async throws {
        try await TestSupport.offPool {
            let world = try World()
            defer { world.close() }
            let a = try world.device("a", spaces: 1)
            _ = try a.signIn(server: world.url, label: "a")
            let old = try world.account(of: a)
            // A second space is saved and pushed.
            var saved = try a.state.spaces()
            saved.save(
                SavedSpace(
                    space: .random(), name: "later", server: "http://127.0.0.1:1", member: .random(),
                    ownerSigningKey: "k", deviceToken: "device-token-later"))
            try a.state.save(saved)
            try a.recordLocalChanges()
            #expect(try a.sync().pushed)

            let current = try world.account(of: a)
            // Same key, older vault.
            try world.db.query(
                "UPDATE home_accounts SET version = ?, vault = ? WHERE id = ?",
                [.integer(old.version + 10), .blob(old.vault), .blob(old.id)])
            let code = Self.outcome { try a.sync() }
            print("rolled-back vault: sync → \(code ?? "succeeded, no warning")")
            #expect(code == "vault_rolled_back")
            #expect(try world.account(of: a).vault == old.vault)
            #expect(try a.state.spaces().spaces.count == 2, "the device dropped a space it had")
            try world.db.query(
                "UPDATE home_accounts SET vault = ? WHERE id = ?", [.blob(current.vault), .blob(old.id)])

            // After a rotation, the older generation's wrap and vault come back.
            let b = try world.device("b", spaces: 0)
            let grant = try a.approveLink(
                JoinRequest(
                    displayName: "", deviceLabel: "b", publicKeys: JoinerKeys(try b.deviceKey().publicKeys)))
            _ = try b.completeLink(grant: grant)
            _ = try a.sync()
            let beforeRotation = try world.account(of: a)
            let wrapBeforeRotation = try world.wrap(of: a)
            let removed = try #require(try b.home()).anchor
            #expect(try a.removeDevice(removed).generation == beforeRotation.generation + 1)
            let anchor = try #require(try a.home()).anchor
            try world.db.query(
                "UPDATE home_anchors SET wrap = ? WHERE id = ?",
                [.blob(wrapBeforeRotation), .blob(anchor.bytes)])
            try world.db.query(
                "UPDATE home_accounts SET vault = ?, generation = ? WHERE id = ?",
                [.blob(beforeRotation.vault), .integer(beforeRotation.generation), .blob(old.id)])
            let older = Self.outcome { try a.sync() }
            print("rolled-back generation: sync → \(older ?? "succeeded, no warning")")
            #expect(older == "vault_rolled_back")
            #expect(try world.account(of: a).vault == beforeRotation.vault)
        }
    }

    /// The server serves another account's vault, with that account's wrap for the same device
    /// key (one person's device key used in two accounts).
    @Test func anotherAccountsVaultIsRefused() async throws {
        try await TestSupport.offPool {
            let world = try World()
            defer { world.close() }
            let a = try world.device("a", spaces: 1)
            _ = try a.signIn(server: world.url, label: "a")
            let other = try world.device("other", spaces: 1, prefix: "O")
            try FileManager.default.createDirectory(
                atPath: world.root.path + "/other", withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: world.root.path + "/other/home-device.key")
            try FileManager.default.copyItem(
                atPath: world.root.path + "/a/home-device.key",
                toPath: world.root.path + "/other/home-device.key")
            _ = try other.signIn(server: world.url, label: "other")
            let mine = try world.account(of: a)
            let theirs = try world.account(of: other)
            #expect(mine.id != theirs.id)
            let anchor = try #require(try a.home()).anchor
            try world.db.query(
                "UPDATE home_anchors SET wrap = ? WHERE id = ?",
                [.blob(try world.wrap(of: other)), .blob(anchor.bytes)])
            try world.db.query(
                "UPDATE home_accounts SET vault = ?, generation = ? WHERE id = ?",
                [.blob(theirs.vault), .integer(theirs.generation), .blob(mine.id)])

            let code = Self.outcome { try a.sync() }
            print("another account's vault: sync → \(code ?? "succeeded, no warning")")
            #expect(code == "vault_key_unauthenticated")
            #expect(
                try world.account(of: a).vault == theirs.vault, "the device uploaded into the other account")
            #expect(try a.state.spaces().spaces.map(\.name) == ["S0"])
        }
    }

    /// Linking: after the old device granted the key, the server hands the new device a wrap of
    /// its own key at the next generation (today's code skipped its check then).
    @Test func linkingRefusesAServedKeyOtherThanTheGrantedOne() async throws {
        try await TestSupport.offPool {
            let world = try World()
            defer { world.close() }
            let a = try world.device("a", spaces: 1)
            _ = try a.signIn(server: world.url, label: "a")
            let b = try world.device("b", spaces: 0)
            let grant = try a.approveLink(
                JoinRequest(
                    displayName: "", deviceLabel: "b", publicKeys: JoinerKeys(try b.deviceKey().publicKeys)))
            _ = try a.sync()
            let account = try world.account(of: a)
            let evil = VaultKey.random(generation: account.generation + 1)
            let keys = try b.deviceKey().anchor()
            try world.db.query(
                "UPDATE home_anchors SET wrap = ? WHERE encryption_key = ?",
                [.blob(evil.wrap(for: keys)), .blob(keys.publicKeys.encryption.bytes)])
            let planted = evil.seal(VaultDocument().encoded())
            try world.db.query(
                "UPDATE home_accounts SET vault = ?, generation = ? WHERE id = ?",
                [.blob(planted), .integer(evil.generation), .blob(account.id)])

            let code = Self.outcome { try b.completeLink(grant: grant) }
            let leaked = try world.readable(under: evil, account: account.id)
            print(
                "link with a substituted key: completeLink → \(code ?? "succeeded, no warning"); \(Self.describe(leaked))"
            )
            #expect(code == "key_mismatch")
            #expect(try world.account(of: a).vault == planted)
            #expect(try b.home() == nil, "the new device stayed signed in to a server that lied")
        }
    }

    /// A vault written before keys were proven (no proof, no sequence) keeps working: with nothing
    /// pinned yet, it is accepted once because it names the account key (which the server never
    /// saw), the next upload proves it, and from then on the old copy is a rollback. A server key
    /// in its place is refused even then.
    @Test func aVaultFromBeforeProofsIsAcceptedOnceThenProven() async throws {
        try await TestSupport.offPool {
            let world = try World()
            defer { world.close() }
            let a = try world.device("a", spaces: 1)
            _ = try a.signIn(server: world.url, label: "a")
            let account = try world.account(of: a)
            let wrap = try world.wrap(of: a)
            let key = try a.deviceKey().unwrapVaultKey(wrap)
            // The vault and home.json as an earlier eleven wrote them.
            var fields = try #require(
                try JSONSerialization.jsonObject(with: Data(key.open(account.vault))) as? [String: Any])
            fields["keyProof"] = nil
            fields["sequence"] = nil
            fields["version"] = 1
            let legacy = key.seal(Array(try JSONSerialization.data(withJSONObject: fields)))
            let homeFile = world.root.path + "/a/home.json"
            func forgetPin() throws {
                var home = try #require(
                    try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: homeFile)))
                        as? [String: Any])
                home["pin"] = nil
                try JSONSerialization.data(withJSONObject: home).write(to: URL(fileURLWithPath: homeFile))
            }
            try forgetPin()
            #expect(try a.home()?.pin == nil)

            // Even with nothing pinned, a key of the server's own is refused.
            let evil = VaultKey.random(generation: account.generation)
            let planted = try world.plant(evil, for: a)
            #expect(Self.outcome { try a.sync() } == "vault_key_unauthenticated")
            #expect(try world.account(of: a).vault == planted)

            // The genuine old vault is accepted, and the upload proves it.
            let anchor = try #require(try a.home()).anchor
            try world.db.query(
                "UPDATE home_anchors SET wrap = ? WHERE id = ?", [.blob(wrap), .blob(anchor.bytes)])
            try world.db.query(
                "UPDATE home_accounts SET vault = ? WHERE id = ?", [.blob(legacy), .blob(account.id)])
            #expect(try a.sync().pushed)
            let migrated = try VaultDocument(decoding: key.open(try world.account(of: a).vault))
            #expect(migrated.keyProof != nil)
            #expect(migrated.sequence == 1)
            #expect(try a.home()?.pin?.sequence == 1)

            // Served again, the unproven copy is a rollback.
            try world.db.query(
                "UPDATE home_accounts SET vault = ? WHERE id = ?", [.blob(legacy), .blob(account.id)])
            #expect(Self.outcome { try a.sync() } == "vault_rolled_back")
        }
    }
}
