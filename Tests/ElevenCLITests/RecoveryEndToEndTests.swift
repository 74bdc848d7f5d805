import ClientCore
import Foundation
import PAKE
import SpaceModel
import TestSupport
import Testing

/// Account recovery with the real programs (a relay, a space server, a home server, `eleven` as
/// devices), one scenario per rung of the ladder, from "device lost" to "every space readable".
///
/// - Rung 1 (a surviving signed-in device): nothing to do; `sync` on it is the whole story (below).
/// - Rung 2 (approve from another device): `eleven device add` / `eleven device link`, covered by
///   `VaultEndToEndTests.linkSyncOfflineConcurrentRemoveAndNothingReadableOnTheServer`.
/// - Rung 3 (a recovery file): below.
@Suite(.serialized) struct RecoveryEndToEndTests {
    typealias World = VaultEndToEndTests.World

    /// Paul owns "Club"; Sam (device A) owns "Family" and joins Paul's "Club" by short code, then
    /// signs in.
    static func samWithTwoSpaces(_ w: World) throws -> ElevenHome {
        let paul = try ElevenHome("paul")
        #expect(
            try w.run(paul, ["space", "create", "Club", "--server", w.spaces.url, "--as", "Paul"]).status == 0
        )
        #expect(try w.run(paul, ["send", "--space", "Club", "hello", "club"]).status == 0)
        #expect(
            try w.run(w.a, ["space", "create", "Family", "--server", w.spaces.url, "--as", "Sam"]).status == 0
        )
        #expect(try w.run(w.a, ["send", "--space", "Family", "hello", "family"]).status == 0)
        let invite = try ChildProcess(
            eleven, ["invite", "--short", "--yes", "--space", "Club"],
            environment: ["ELEVEN_HOME": paul.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": w.relay.url])
        let code = try invite.value(afterPrefix: "Invite code:")
        let joined = try w.run(w.a, ["join", code, "--name", "Sam"])
        #expect(joined.status == 0, "\(joined.stderr)")
        #expect(invite.finish(timeout: 20).status == 0)
        #expect(try w.run(w.a, ["signin", "--server", w.home.url, "--label", "laptop"]).status == 0)
        return paul
    }

    func expectEverySpaceReadable(_ w: World, _ device: ElevenHome) throws {
        #expect(try w.names(device) == ["Family", "Club"])
        #expect(try w.run(device, ["read", "--space", "Family"]).stdout == "Sam: hello family\n")
        #expect(try w.run(device, ["read", "--space", "Club"]).stdout == "Paul: hello club\n")
    }

    @Test func rung1SurvivingDeviceNeedsNothing() async throws {
        try await TestSupport.offPool {
            let w = try VaultEndToEndTests.world()
            defer { w.home.stop() }
            _ = try Self.samWithTwoSpaces(w)
            // Another device was lost; the surviving one syncs and reads as before.
            #expect(try w.json(w.a, ["sync"])["spaces"] as? Int == 2)
            try expectEverySpaceReadable(w, w.a)
        }
    }

    @Test func rung3RecoveryFileRestoresEverySpaceOnANewDevice() async throws {
        try await TestSupport.offPool {
            let w = try VaultEndToEndTests.world()
            defer { w.home.stop() }
            _ = try Self.samWithTwoSpaces(w)
            let file = w.a.path + "-recovery.json"
            let added = try w.run(w.a, ["recovery", "add", "--file", file])
            #expect(added.status == 0, "\(added.stderr)")
            #expect(added.stdout.contains("Added a way back in"))
            for word in ["DEK", "escrow", "anchor", "wrap"] { #expect(!added.stdout.contains(word)) }
            var info = stat()
            #expect(stat(file, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600)
            let credential = try RecoveryFile(path: file)
            let secret = try Self.secretText(file)
            #expect(secret.count == 43)
            #expect(!added.stdout.contains(secret) && !added.stderr.contains(secret))
            // A second add never replaces the file.
            let again = try w.run(w.a, ["recovery", "add", "--file", file, "--json"])
            #expect(again.status == 2)
            #expect(try errorCode(again) == "file_exists")
            // No security key is plugged in on this machine: a clear error, no card written.
            let card = w.a.path + "-card.json"
            let noKey = try w.run(w.a, ["recovery", "add", "--security-key", "--file", card, "--json"])
            #expect(try errorCode(noKey) == "no_security_key", "\(noKey.stdout)")
            #expect(!FileManager.default.fileExists(atPath: card))
            let listed = try w.json(w.a, ["recovery", "list"])["credentials"] as? [[String: Any]] ?? []
            #expect(listed.count == 1)
            #expect(listed.first?["id"] as? String == credential.anchor.base64URL)

            // Every device is lost: B is brand new and has only the file.
            try FileManager.default.removeItem(atPath: w.a.path)
            let started = Date()
            let recovered = try w.run(w.b, ["recover", "--file", file, "--label", "new phone"])
            #expect(recovered.status == 0, "\(recovered.stderr)")
            #expect(recovered.stdout.contains("Your spaces are back: Family, Club."))
            try expectEverySpaceReadable(w, w.b)
            print("recover --file to every space readable: \(Date().timeIntervalSince(started)) s")
            // Sam still owns Family: the admin capability came back with the vault.
            let owned = try w.run(w.b, ["members", "--space", "Family"])
            #expect(owned.status == 0)
            let invite = try ChildProcess(
                eleven, ["invite", "--short", "--yes", "--space", "Family", "--expires", "20s"],
                environment: ["ELEVEN_HOME": w.b.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": w.relay.url])
            let code = try invite.value(afterPrefix: "Invite code:")
            let guest = try ElevenHome("guest")
            #expect(try w.run(guest, ["join", code, "--name", "Ann"]).status == 0)
            #expect(invite.finish(timeout: 20).status == 0)
            #expect(try w.run(guest, ["read", "--space", "Family"]).stdout == "Sam: hello family\n")
            // The new device is signed in and keeps syncing; the credential is still listed.
            let devices = try w.json(w.b, ["devices"])["devices"] as? [[String: Any]] ?? []
            #expect(Set(devices.compactMap { $0["label"] as? String }).contains("new phone"))
            #expect((try w.json(w.b, ["recovery", "list"])["credentials"] as? [[String: Any]])?.count == 1)
            // A signed-in device does not recover over itself.
            let twice = try w.run(w.b, ["recover", "--file", file, "--json"])
            #expect(try errorCode(twice) == "already_signed_in")
        }
    }

    /// The attacker holds the home server's whole database (and its log) after a recovery file
    /// was added: no secret of the file, no key derived from it, no vault key, no account key
    /// and no space credential is in there, and a credential made up for a stored anchor is
    /// refused.
    @Test func attackerWithTheHomeDatabaseDecryptsNothing() async throws {
        try await TestSupport.offPool {
            let w = try VaultEndToEndTests.world()
            defer { w.home.stop() }
            let paul = try Self.samWithTwoSpaces(w)
            for (device, name) in [(w.a, "Books"), (paul, "Work")] {
                #expect(try w.run(device, ["space", "create", name, "--server", w.spaces.url]).status == 0)
            }
            let file = w.a.path + "-recovery.json"
            #expect(try w.run(w.a, ["recovery", "add", "--file", file]).status == 0)
            let credential = try RecoveryFile(path: file)
            let identity = try RecoveryAnchor.identity(credential, salt: credential.salt)

            // The attacker makes up a credential for the anchor id it sees: refused.
            let forged = try Self.forge(credential, at: w.a.path + "-forged.json")
            let attempt = try w.run(w.b, ["recover", "--file", forged, "--json"])
            #expect(attempt.status != 0)
            #expect(try errorCode(attempt) == "signature_invalid")
            #expect(!FileManager.default.fileExists(atPath: w.b.path + "/home.json"))

            w.home.stop()
            let wraps = try Self.wraps(database: w.home.databasePath)
            #expect(wraps.count == 2)
            // The file opens exactly one stored wrap (its own); a key of the attacker's opens none.
            let opened = wraps.compactMap { try? identity.unwrapVaultKey($0) }
            #expect(opened.count == 1)
            let stranger = DeviceIdentity.generate()
            #expect(wraps.allSatisfy { (try? stranger.unwrapVaultKey($0)) == nil })
            var stored: [UInt8] = []
            for suffix in ["", "-wal", "-shm"] {
                if let data = FileManager.default.contents(atPath: w.home.databasePath + suffix) {
                    stored += Array(data)
                }
            }
            let haystack = stored + Array(w.home.logs.utf8)
            var secrets = try VaultEndToEndTests.secrets(of: [w.a, paul])
            let secretText = try Self.secretText(file)
            #expect(secretText.count == 43)
            secrets.append(Array(secretText.utf8))
            secrets.append(Base64URL.decode(String(secretText)) ?? [1])
            let derived = identity.storedForm().unredactedBytes()
            secrets.append(Array(derived[5..<37]))
            secrets.append(Array(derived[37..<69]))
            if let vaultKey = opened.first {
                secrets.append(Array(vaultKey.base64URL.utf8))
                secrets.append(Base64URL.decode(vaultKey.base64URL) ?? [1])
            }
            for secret in secrets {
                #expect(
                    !VaultEndToEndTests.contains(haystack, secret),
                    "found \(secret.count) secret bytes on the home server")
            }
        }
    }

    @Test func removedRecoveryFileCanNoLongerRecover() async throws {
        try await TestSupport.offPool {
            let w = try VaultEndToEndTests.world()
            defer { w.home.stop() }
            _ = try Self.samWithTwoSpaces(w)
            let lost = w.a.path + "-lost.json"
            let kept = w.a.path + "-kept.json"
            #expect(try w.run(w.a, ["recovery", "add", "--file", lost, "--label", "drawer"]).status == 0)
            #expect(try w.run(w.a, ["recovery", "add", "--file", kept, "--label", "safe"]).status == 0)
            #expect(try w.json(w.a, ["sync"])["keyGeneration"] as? Int == 1)
            let unknown = try w.run(w.a, ["recovery", "remove", "laptop", "--json"])
            #expect(unknown.status == 2)
            #expect(try errorCode(unknown) == "unknown_credential")
            let removed = try w.run(w.a, ["recovery", "remove", "drawer"])
            #expect(removed.status == 0, "\(removed.stderr)")
            #expect(try w.json(w.a, ["sync"])["keyGeneration"] as? Int == 2)
            let listed = try w.json(w.a, ["recovery", "list"])["credentials"] as? [[String: Any]] ?? []
            #expect(listed.compactMap { $0["label"] as? String } == ["safe"])
            // Its wrap is gone from the database and the vault key was rotated.
            let anchor = try RecoveryFile(path: lost).anchor
            let wrap = try TestSupport.run(
                "/usr/bin/env",
                [
                    "python3", "-c",
                    "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                        + "print(len(c.execute('SELECT wrap FROM home_anchors WHERE id=?', "
                        + "(bytes.fromhex(sys.argv[2]),)).fetchone()[0]))",
                    w.home.databasePath, anchor.bytes.map { String(format: "%02x", $0) }.joined(),
                ], timeout: 30)
            #expect(wrap.stdout == "0\n", "\(wrap.stderr)")
            let refused = try w.run(w.b, ["recover", "--file", lost, "--json"])
            #expect(refused.status != 0)
            #expect(try errorCode(refused) == "device_revoked")
            #expect(!FileManager.default.fileExists(atPath: w.b.path + "/home.json"))
            // The one kept still works, after the rotation.
            #expect(try w.run(w.b, ["recover", "--file", kept]).status == 0)
            try expectEverySpaceReadable(w, w.b)
        }
    }

    @Test func recoveryBadInputGetsClearErrors() throws {
        let a = try ElevenHome("a")
        func expect(_ arguments: [String], status: Int32, code: String) throws {
            let result = try a.run(arguments + ["--json"])
            #expect(result.status == status, "\(arguments): \(result.stdout) \(result.stderr)")
            #expect(try errorCode(result) == code, "\(arguments)")
        }
        try expect(["recovery", "add", "--file", a.path + "-r.json"], status: 5, code: "not_signed_in")
        try expect(["recovery", "list"], status: 5, code: "not_signed_in")
        try expect(["recover"], status: 2, code: "usage")
        try expect(["recover", "--security-key"], status: 2, code: "usage")
        try expect(["recover", "--file", a.path + "-missing.json"], status: 2, code: "no_recovery_file")
        let junk = a.path + "-junk.json"
        try Data("{\"format\": \"something else\"}".utf8).write(to: URL(fileURLWithPath: junk))
        try expect(["recover", "--file", junk], status: 2, code: "invalid_recovery_file")
        try expect(
            ["recover", "--file", junk, "--security-key"], status: 2, code: "invalid_security_key_card")
        #expect(!FileManager.default.fileExists(atPath: a.path + "/home.json"))
    }

    /// The secret in a recovery file (base64url, 43 characters).
    static func secretText(_ path: String) throws -> String {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return String(text.components(separatedBy: "\"secret\" : \"").last?.prefix(43) ?? "")
    }

    /// A credential file for `credential`'s anchor and server with a secret of the attacker's.
    static func forge(_ credential: RecoveryFile, at path: String) throws -> String {
        let text = String(decoding: credential.fileBytes().unredactedBytes(), as: UTF8.self)
        guard let range = text.range(of: "\"secret\" : \"") else { return path }
        let start = range.upperBound
        let end = text.index(start, offsetBy: 43)
        let forged = text.replacingCharacters(
            in: start..<end, with: Base64URL.encode([UInt8](repeating: 7, count: 32)))
        try Data(forged.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Every non-empty stored wrap in the home database.
    static func wraps(database: String) throws -> [[UInt8]] {
        let result = try TestSupport.run(
            "/usr/bin/env",
            [
                "python3", "-c",
                "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                    + "[print(w.hex()) for (w,) in c.execute('SELECT wrap FROM home_anchors') if w]",
                database,
            ], timeout: 30)
        return result.stdout.split(separator: "\n").map { line in
            stride(from: 0, to: line.count, by: 2).compactMap {
                let start = line.index(line.startIndex, offsetBy: $0)
                return UInt8(line[start..<line.index(start, offsetBy: 2)], radix: 16)
            }
        }
    }
}

/// Rung 4, the re-invite floor: with every device and credential gone, Sam gets a new identity
/// and Paul re-admits them in place of the old one.
@Suite(.serialized) struct ReadmitEndToEndTests {
    @Test func rung4ReadmitWithANewIdentityReadsTheHistory() async throws {
        try await TestSupport.offPool {
            let w = try VaultEndToEndTests.world()
            defer { w.home.stop() }
            let paul = try RecoveryEndToEndTests.samWithTwoSpaces(w)
            #expect(try w.run(w.a, ["send", "--space", "Club", "sam", "was", "here"]).status == 0)
            // Sam loses the laptop (A keeps its files here only to show they stop working).
            let invite = try ChildProcess(
                eleven, ["invite", "--short", "--yes", "--space", "Club", "--readmit", "Sam"],
                environment: ["ELEVEN_HOME": paul.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": w.relay.url])
            let code = try invite.value(afterPrefix: "Invite code:")
            let joined = try w.run(w.b, ["join", code, "--name", "Sam"])
            #expect(joined.status == 0, "\(joined.stderr)")
            #expect(invite.finish(timeout: 20).status == 0)
            // Every message, the old identity's included, reads on the new device.
            let read = try w.run(w.b, ["read", "--space", "Club"])
            #expect(
                read.stdout == "(Sam has a new identity.)\nPaul: hello club\nSam: sam was here\n",
                "\(read.stderr)")
            #expect(try w.run(w.b, ["send", "--space", "Club", "back", "again"]).status == 0)
            // Every member sees that Sam's keys changed.
            let members = try w.run(paul, ["members", "--space", "Club"])
            #expect(members.stdout.contains("Sam has a new identity."))
            let listed = try paul.json(["members", "--space", "Club", "--json"])
            let current = listed["members"] as? [[String: Any]] ?? []
            #expect(current.first { $0["name"] as? String == "Sam" }?["newIdentity"] as? Bool == true)
            #expect((listed["formerMembers"] as? [[String: Any]])?.count == 1)
            let paulReads = try w.run(paul, ["read", "--space", "Club"])
            #expect(paulReads.stdout.hasSuffix("Sam: sam was here\nSam: back again\n"))
            #expect(paulReads.stdout.hasPrefix("(Sam has a new identity.)\n"))
            // The old identity's device is out.
            let old = try w.run(w.a, ["read", "--space", "Club", "--json"])
            #expect(old.status != 0)

            // Bad input: nobody by that name, yourself, not with several uses.
            for (arguments, code) in [
                (["--readmit", "Nobody"], "unknown_member"), (["--readmit", "Paul"], "usage"),
                (["--readmit", "Sam", "--uses", "2"], "usage"),
            ] {
                let result = try paul.run(
                    ["invite", "--short", "--yes", "--space", "Club", "--json"] + arguments,
                    environment: ["ELEVEN_RELAY": w.relay.url])
                #expect(result.status == 2, "\(arguments) \(result.stdout)")
                #expect(try errorCode(result) == code)
            }
        }
    }
}
