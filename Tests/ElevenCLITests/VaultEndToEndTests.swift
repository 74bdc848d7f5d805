import Foundation
import TestSupport
import Testing

/// `eleven-server --home` on a fixed port and database, so a test can stop it (the device is
/// offline) and start it again; its log is kept across restarts.
final class HomeServerUnderTest {
    let directory: URL
    let port: UInt16
    private var server: ChildProcess?
    private(set) var logs = ""
    /// More `eleven-server` arguments (`--smtp …`).
    let extra: [String]

    init(extra: [String] = []) throws {
        directory = try TestSupport.temporaryDirectory()
        port = try TestSupport.freePort()
        self.extra = extra
        try start()
    }

    var url: String { "http://127.0.0.1:\(port)" }
    var databasePath: String { directory.appendingPathComponent("home.sqlite").path }

    func start() throws {
        server = try ChildProcess(
            elevenServer, ["--listen", "127.0.0.1:\(port)", "--db", databasePath, "--home"] + extra,
            port: port)
    }

    func stop() {
        guard let server else { return }
        server.stop()
        logs += server.log
        self.server = nil
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Vault sync and device linking with the real programs: a relay, a space server, a home server,
/// and `eleven` as two devices of one person.
@Suite(.serialized) struct VaultEndToEndTests {
    struct World {
        let relay: ElevenRelayUnderTest
        let spaces: ElevenServerUnderTest
        let home: HomeServerUnderTest
        let a: ElevenHome
        let b: ElevenHome

        func run(_ device: ElevenHome, _ arguments: [String]) throws -> ProcessResult {
            try device.run(arguments, environment: ["ELEVEN_RELAY": relay.url])
        }

        func json(_ device: ElevenHome, _ arguments: [String]) throws -> [String: Any] {
            let result = try run(device, arguments + ["--json"])
            #expect(result.status == 0, "\(arguments): \(result.stdout) \(result.stderr)")
            let last = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
            return try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any] ?? [:]
        }

        /// `eleven device add` on A in the background; returns it and its code.
        func deviceAdd() throws -> (ChildProcess, String) {
            let add = try ChildProcess(
                eleven, ["device", "add", "--yes"],
                environment: ["ELEVEN_HOME": a.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": relay.url])
            return (add, try add.value(afterPrefix: "Device code:"))
        }

        func names(_ device: ElevenHome) throws -> [String] {
            let listed = try device.json(["spaces", "--json"])
            return (listed["spaces"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        }
    }

    static func world() throws -> World {
        World(
            relay: try ElevenRelayUnderTest(), spaces: try ElevenServerUnderTest(),
            home: try HomeServerUnderTest(),
            a: try ElevenHome("a"), b: try ElevenHome("b"))
    }

    @Test func linkSyncOfflineConcurrentRemoveAndNothingReadableOnTheServer() async throws {
        try await TestSupport.offPool {
            let w = try Self.world()
            defer { w.home.stop() }
            // Paul has three spaces; A (Sam's laptop) joins each with a short code.
            let paul = try ElevenHome("paul")
            for name in ["Family", "Work", "Club"] {
                #expect(
                    try w.run(paul, ["space", "create", name, "--server", w.spaces.url, "--as", "Paul"])
                        .status == 0)
                #expect(try w.run(paul, ["send", "--space", name, "hello", name]).status == 0)
                let invite = try ChildProcess(
                    eleven, ["invite", "--short", "--yes", "--space", name],
                    environment: ["ELEVEN_HOME": paul.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": w.relay.url])
                let code = try invite.value(afterPrefix: "Invite code:")
                let joined = try w.run(w.a, ["join", code, "--name", "Sam"])
                #expect(joined.status == 0, "\(joined.stderr)")
                #expect(invite.finish(timeout: 20).status == 0)
            }
            let signedIn = try w.json(w.a, ["signin", "--server", w.home.url, "--label", "laptop"])
            #expect(signedIn["spaces"] as? Int == 3)
            #expect(signedIn["new"] as? Bool == true)

            // B links with the code A shows, and reads all three spaces at once.
            let started = Date()
            let (add, code) = try w.deviceAdd()
            let linkRun = try w.run(w.b, ["device", "link", code, "--label", "phone", "--json"])
            #expect(linkRun.status == 0, "\(linkRun.stdout) \(linkRun.stderr)")
            let events = linkRun.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let linked = events.last ?? [:]
            #expect(linked["spaces"] as? [String] == ["Family", "Work", "Club"])
            // Both devices show the same verification words.
            let newDeviceWords =
                events.first { $0["event"] as? String == "code_accepted" }?["verification"] as? String
            for name in ["Family", "Work", "Club"] {
                let read = try w.run(w.b, ["read", "--space", name])
                #expect(read.stdout == "Paul: hello \(name)\n", "\(read.stderr)")
            }
            print("device link to all spaces readable: \(Date().timeIntervalSince(started)) s")
            let added = add.finish(timeout: 20)
            #expect(added.status == 0, "\(added.stderr)")
            #expect(added.stdout.contains("Linked phone."))
            #expect(
                newDeviceWords != nil
                    && added.stdout.contains("Verification words: \(newDeviceWords ?? "?") "),
                "\(added.stdout)")
            let devices = try w.json(w.a, ["devices"])["devices"] as? [[String: Any]] ?? []
            #expect(Set(devices.compactMap { $0["label"] as? String }) == ["laptop", "phone"])
            #expect(devices.allSatisfy { $0["genuine"] as? Bool == true })

            // Offline: both devices change things while the home server is down.
            w.home.stop()
            let starred = try w.run(w.a, ["star", "Family"])
            #expect(starred.status == 0)
            #expect(starred.stderr.contains("unreachable"))
            #expect(try w.run(w.b, ["reorder", "Club", "--to", "1"]).status == 0)
            #expect(
                try w.run(w.b, ["space", "create", "Books", "--server", w.spaces.url, "--as", "Paul"]).status
                    == 0)
            #expect(try w.run(w.b, ["send", "--space", "Books", "from", "the", "phone"]).status == 0)
            try w.home.start()
            // Both pushes meet on the server; neither loses the other's changes.
            #expect(try w.json(w.b, ["sync"])["pushed"] as? Bool == true)
            #expect(try w.json(w.a, ["sync"])["pushed"] as? Bool == true)
            #expect(try w.json(w.b, ["sync"])["spaces"] as? Int == 4)
            for device in [w.a, w.b] {
                #expect(try w.names(device) == ["Club", "Family", "Work", "Books"])
                let file = try String(contentsOfFile: device.path + "/spaces.json", encoding: .utf8)
                #expect(file.components(separatedBy: "\"starred\" : true").count == 2)
            }
            #expect(try w.run(w.a, ["read", "--space", "Books"]).stdout == "Paul: from the phone\n")
            // A change pushed at once reaches the other device with its next sync.
            #expect(try w.run(w.a, ["reorder", "Books", "--to", "1"]).status == 0)
            #expect(try w.json(w.b, ["sync"])["spaces"] as? Int == 4)
            #expect(try w.names(w.b).first == "Books")

            // Removing B rotates the vault key; B cannot pull any more.
            #expect(try w.json(w.a, ["sync"])["keyGeneration"] as? Int == 1)
            #expect(try w.run(w.a, ["device", "remove", "laptop"]).status == 2)
            let removed = try w.json(w.a, ["device", "remove", "phone"])
            #expect(removed["event"] as? String == "removed")
            #expect(try w.json(w.a, ["sync"])["keyGeneration"] as? Int == 2)
            let refused = try w.run(w.b, ["sync", "--json"])
            #expect(refused.status == 6)
            #expect(try errorCode(refused) == "device_revoked")
            #expect((try w.json(w.a, ["devices"])["devices"] as? [[String: Any]])?.count == 1)
            // The removed device can be linked again (as a new device of the account).
            let (again, againCode) = try w.deviceAdd()
            let relinked = try w.json(w.b, ["device", "link", againCode, "--label", "phone"])
            #expect((relinked["spaces"] as? [String])?.count == 4)
            #expect(again.finish(timeout: 20).status == 0)
            let secondRemoval = try w.run(w.a, ["device", "remove", "phone"])
            #expect(secondRemoval.status == 0, "\(secondRemoval.stderr)")
            #expect(try w.json(w.a, ["sync"])["keyGeneration"] as? Int == 3)
            // An owner cannot leave their own space; a member can, and the vault forgets it.
            let ownerLeave = try w.run(w.a, ["leave", "Books", "--json"])
            #expect(ownerLeave.status == 6)
            #expect(try errorCode(ownerLeave) == "owner_cannot_leave")
            #expect(try w.run(w.a, ["leave", "Work"]).status == 0)
            #expect(try w.names(w.a) == ["Books", "Club", "Family"])
            let members =
                try paul.json(["members", "--space", "Work", "--json"])["members"] as? [[String: Any]]
            #expect(members?.compactMap { $0["name"] as? String } == ["Paul"])
            // A's own changes still sync.
            #expect(try w.run(w.a, ["star", "Club"]).status == 0)
            #expect(try w.json(w.a, ["sync"])["pushed"] as? Bool == false)

            // Nothing readable on the home server: its database and log hold no space name,
            // credential or key of either device.
            w.home.stop()
            var stored: [UInt8] = []
            for suffix in ["", "-wal", "-shm"] {
                if let data = FileManager.default.contents(atPath: w.home.databasePath + suffix) {
                    stored += Array(data)
                }
            }
            #expect(stored.count > 1000)
            let haystack = stored + Array(w.home.logs.utf8)
            #expect(w.home.logs.contains("\"request\""))
            for secret in try Self.secrets(of: [w.a, w.b]) {
                #expect(
                    !Self.contains(haystack, secret), "found \(secret.count) secret bytes on the home server")
            }
        }
    }

    @Test func wrongLinkCodeBurnsAndJoinCodesCannotLink() async throws {
        try await TestSupport.offPool {
            let w = try Self.world()
            defer { w.home.stop() }
            #expect(try w.run(w.a, ["space", "create", "Family", "--server", w.spaces.url]).status == 0)
            #expect(try w.run(w.a, ["signin", "--server", w.home.url]).status == 0)
            let (add, code) = try w.deviceAdd()
            let parts = code.split(separator: "-")
            let wrong = (parts.first == "abacus" ? "abbey-abacus-" : "abacus-abbey-") + (parts.last ?? "")
            let guessed = try w.run(w.b, ["device", "link", wrong, "--json"])
            #expect(guessed.status == 3, "\(guessed.stdout) \(guessed.stderr)")
            #expect(try errorCode(guessed) == "code_mismatch")
            let burned = add.finish(timeout: 20)
            #expect(burned.status == 3)
            #expect(burned.stderr.contains("burned"))
            #expect(!FileManager.default.fileExists(atPath: w.b.path + "/home.json"))
            let late = try w.run(w.b, ["device", "link", code, "--timeout", "3s", "--json"])
            #expect(late.status == 3)
            #expect(try errorCode(late) == "unknown_code")

            // A join code is not a device code: its relay app and key binding differ.
            let invite = try ChildProcess(
                eleven, ["invite", "--short", "--yes", "--expires", "20s"],
                environment: ["ELEVEN_HOME": w.a.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": w.relay.url])
            let joinCode = try invite.value(afterPrefix: "Invite code:")
            let crossed = try w.run(w.b, ["device", "link", joinCode, "--timeout", "3s", "--json"])
            #expect(crossed.status == 3)
            #expect(try errorCode(crossed) == "unknown_code")
            #expect(!FileManager.default.fileExists(atPath: w.b.path + "/home.json"))
            kill(invite.pid, SIGKILL)
            _ = invite.finish(timeout: 10)
            // A device code typed into `eleven join` says where it belongs (it used to be blamed
            // on whatever invite last used that number: "used as many times as it allows").
            let (adding, deviceCode) = try w.deviceAdd()
            let misplaced = try w.run(
                w.b, ["join", deviceCode, "--name", "Bee", "--timeout", "3s", "--json"])
            #expect(misplaced.status == 3, "\(misplaced.stdout) \(misplaced.stderr)")
            #expect(misplaced.stdout.contains("eleven device link"), "\(misplaced.stdout)")
            kill(adding.pid, SIGKILL)
            _ = adding.finish(timeout: 10)
            // Not signed in: a clear error, nothing made.
            let notSignedIn = try w.run(w.b, ["device", "add", "--json"])
            #expect(notSignedIn.status == 5)
            #expect(try errorCode(notSignedIn) == "not_signed_in")
        }
    }

    /// `eleven device add` hands the account's keys only to a device its person says yes to,
    /// after both devices showed the same words; a "no" (or no answer) shares nothing.
    @Test func deviceAddAsksBeforeLinking() async throws {
        try await TestSupport.offPool {
            let w = try Self.world()
            defer { w.home.stop() }
            #expect(try w.run(w.a, ["space", "create", "Family", "--server", w.spaces.url]).status == 0)
            #expect(try w.run(w.a, ["signin", "--server", w.home.url]).status == 0)
            let add = try ChildProcess(
                eleven, ["device", "add"],
                environment: ["ELEVEN_HOME": w.a.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": w.relay.url],
                input: .open)
            let code = try add.value(afterPrefix: "Device code:")
            let link = try ChildProcess(
                eleven, ["device", "link", code, "--label", "phone"],
                environment: ["ELEVEN_HOME": w.b.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": w.relay.url])
            let words = try add.value(afterPrefix: "Code proven. Verification words:")
            try add.waitFor("Link phone? [y/N]", in: .stderr, timeout: 20)
            try add.send(Data("n\n".utf8))
            add.closeInput()
            let added = add.finish(timeout: 20)
            #expect(added.status == 6, "\(added.stdout) \(added.stderr)")
            #expect(added.stderr.contains("you said no"))
            let linked = link.finish(timeout: 20)
            #expect(linked.status == 6, "\(linked.stdout) \(linked.stderr)")
            // The new device showed the same words, and got nothing.
            #expect(
                linked.stdout.contains(words.components(separatedBy: " (").first ?? "?"), "\(linked.stdout)")
            #expect(!FileManager.default.fileExists(atPath: w.b.path + "/home.json"))
            #expect(try w.run(w.b, ["spaces"]).stdout.contains("Family") == false)
        }
    }

    @Test func badInputGetsClearErrorsAndChangesNothing() throws {
        let a = try ElevenHome("a")
        func expect(_ arguments: [String], status: Int32, code: String) throws {
            let result = try a.run(arguments + ["--json"])
            #expect(result.status == status, "\(arguments): \(result.stdout) \(result.stderr)")
            #expect(try errorCode(result) == code, "\(arguments)")
        }
        try expect(["sync"], status: 5, code: "not_signed_in")
        try expect(["devices"], status: 5, code: "not_signed_in")
        try expect(["device", "remove", "phone"], status: 5, code: "not_signed_in")
        try expect(["signin"], status: 2, code: "usage")
        try expect(["star", "Family"], status: 5, code: "no_spaces")
        try expect(["device", "link", "not a code"], status: 3, code: "missing_nameplate")
        let port = try TestSupport.freePort()
        try expect(["signin", "--server", "http://127.0.0.1:\(port)"], status: 4, code: "connection_refused")
        try expect(["signin", "--server", "ftp://x"], status: 2, code: "invalid_url")
        #expect(!FileManager.default.fileExists(atPath: a.path + "/home.json"))
    }

    /// Every credential and key in the devices' state: space names, tokens, the raw identity
    /// and device keys, and the account key.
    static func secrets(of devices: [ElevenHome]) throws -> [[UInt8]] {
        var secrets: [[UInt8]] = []
        for device in devices {
            let spaces =
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: URL(fileURLWithPath: device.path + "/spaces.json")))
                as? [String: Any]
            for space in spaces?["spaces"] as? [[String: Any]] ?? [] {
                for key in ["name", "deviceToken", "adminToken", "identityKey"] {
                    if let value = space[key] as? String { secrets.append(Array(value.utf8)) }
                }
            }
            for file in ["identity.key", "home-device.key"] {
                if let data = FileManager.default.contents(atPath: device.path + "/" + file) {
                    secrets.append(Array(data)[5..<37].map { $0 })
                    secrets.append(Array(data)[37..<69].map { $0 })
                }
            }
            if let data = FileManager.default.contents(atPath: device.path + "/home.json"),
                let home = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                let accountKey = home["accountKey"] as? String
            {
                secrets.append(Array(accountKey.utf8))
            }
        }
        #expect(secrets.count > 20)
        return secrets
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= haystack.count else { return false }
        let first = needle[0]
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == first && Array(haystack[index..<(index + needle.count)]) == needle {
                return true
            }
            index += 1
        }
        return false
    }
}
