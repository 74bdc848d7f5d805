import Foundation
import TestSupport
import Testing

/// Drives the real `eleven` binary against a real `eleven-server` on a loopback port, with a
/// separate `ELEVEN_HOME` per person.
@Suite(.serialized) struct SpacesEndToEndTests {
    @Test func twoMembersCreateAddSendReadRemove() throws {
        let server = try ElevenServerUnderTest()
        defer { server.stop() }
        let paul = try ElevenHome("paul")
        let sam = try ElevenHome("sam")

        let created = try paul.json([
            "space", "create", "Family", "--server", server.url, "--as", "Paul", "--json",
        ])
        #expect(created["name"] as? String == "Family")
        let samKey = try sam.run(["whoami"])
        #expect(samKey.status == 0)
        let key = samKey.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.contains("."))

        // Paul writes before Sam joins; Sam reads the history once added.
        #expect(try paul.run(["send", "Welcome", "to", "Family"]).status == 0)
        let added = try paul.json(["members", "add", "--key", key, "--name", "Sam", "--json"])
        let space = try #require(added["space"] as? String)
        let member = try #require(added["member"] as? String)
        let joined = try sam.run([
            "space", "join", "--server", server.url, "--space", space, "--member", member,
        ])
        #expect(joined.status == 0, "\(joined.stderr)")
        #expect(try sam.run(["read"]).stdout == "Paul: Welcome to Family\n")
        #expect(try sam.run(["send", "--thread", "general", "Thanks Paul"]).status == 0)
        let paulRead = try paul.jsonLines(["read", "--json"])
        #expect(paulRead.map { $0["text"] as? String } == ["Welcome to Family", "Thanks Paul"])
        #expect(paulRead.map { $0["authorName"] as? String } == ["Paul", "Sam"])

        let members = try sam.json(["members", "--json"])
        #expect((members["members"] as? [[String: Any]])?.count == 2)

        // A thread made before the removal is readable by Sam.
        #expect(try paul.run(["thread", "create", "plans"]).status == 0)
        #expect(try paul.run(["send", "--thread", "plans", "picnic"]).status == 0)
        #expect(try sam.run(["read", "--thread", "plans"]).stdout == "Paul: picnic\n")

        // Remove Sam; a thread created afterwards stays closed to him.
        let removed = try paul.run(["members", "remove", "Sam"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(try paul.run(["thread", "create", "after"]).status == 0)
        #expect(try paul.run(["send", "--thread", "after", "not for Sam"]).status == 0)
        let refused = try sam.run(["read", "--thread", "after", "--json"])
        #expect(refused.status == 6)
        #expect(try errorCode(refused) == "token_revoked")
        #expect(!refused.stdout.contains("not for Sam"))
        let listed = try paul.json(["members", "--json"])
        #expect((listed["formerMembers"] as? [[String: Any]])?.first?["name"] as? String == "Sam")
        #expect(try paul.run(["read", "--thread", "after"]).stdout == "Paul: not for Sam\n")
    }

    @Test func followDeliversNewMessages() throws {
        let server = try ElevenServerUnderTest()
        defer { server.stop() }
        let paul = try ElevenHome("paul")
        #expect(try paul.run(["space", "create", "Family", "--server", server.url]).status == 0)
        let follower = try ChildProcess(
            eleven, ["read", "--follow", "--json"], environment: ["ELEVEN_HOME": paul.path], input: .open)
        defer { follower.stop() }
        // Give the follower time to reach its long-poll, then send.
        usleep(500_000)
        #expect(try paul.run(["send", "live"]).status == 0)
        let line = try follower.readLine(timeout: 10)
        #expect(line.contains(#""text":"live""#))
    }

    @Test func badInputGetsExactExitCodes() throws {
        let paul = try ElevenHome("paul")
        // No spaces yet.
        let none = try paul.run(["send", "hello", "--json"])
        #expect(none.status == 5)
        #expect(try errorCode(none) == "no_spaces")

        // An unreachable server: nothing listens on a free port.
        let port = try TestSupport.freePort()
        let unreachable = try paul.run(["space", "create", "X", "--server", "http://127.0.0.1:\(port)"])
        #expect(unreachable.status == 4)
        #expect(unreachable.stderr.contains("can't reach http://127.0.0.1:\(port): connection refused"))
        #expect(try paul.run(["space", "create", "X", "--server", "ftp://x"]).status == 2)
        #expect(try paul.run(["space", "create", "X"], environment: ["ELEVEN_SERVER": ""]).status == 2)

        let server = try ElevenServerUnderTest()
        defer { server.stop() }
        #expect(try paul.run(["space", "create", "Family", "--server", server.url]).status == 0)
        // Unknown space.
        let unknown = try paul.run(["read", "--space", "Nope", "--json"])
        #expect(unknown.status == 2)
        #expect(try errorCode(unknown) == "unknown_space")
        // Unknown thread, bad key, unknown member.
        #expect(try paul.run(["read", "--thread", "nope"]).status == 2)
        let badKey = try paul.run(["members", "add", "--key", "not-a-key", "--json"])
        #expect(badKey.status == 2)
        #expect(try errorCode(badKey) == "invalid_key")
        #expect(try paul.run(["members", "remove", "Nobody"]).status == 2)
        // The server going away mid-use.
        server.stop()
        let gone = try paul.run(["read"])
        #expect(gone.status == 4)
        #expect(gone.stderr.contains("connection refused"))

        // Corrupt state files.
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: paul.path + "/spaces.json"))
        let corrupt = try paul.run(["spaces", "--json"])
        #expect(corrupt.status == 5)
        #expect(try errorCode(corrupt) == "state_corrupt")
        try Data(#"{"version": 99, "spaces": []}"#.utf8).write(
            to: URL(fileURLWithPath: paul.path + "/spaces.json"))
        #expect(try errorCode(paul.run(["spaces", "--json"])) == "state_too_new")
        try Data("short".utf8).write(to: URL(fileURLWithPath: paul.path + "/identity.key"))
        let badIdentity = try paul.run(["whoami", "--json"])
        #expect(badIdentity.status == 5)
        #expect(try errorCode(badIdentity) == "state_corrupt")
        // A state "directory" that is a file.
        let file = paul.path + "/not-a-dir"
        try Data().write(to: URL(fileURLWithPath: file))
        let notDirectory = try TestSupport.run(
            eleven, ["whoami", "--json"], environment: ["ELEVEN_HOME": file])
        #expect(notDirectory.status == 5)
        #expect(try errorCode(notDirectory) == "state_unreadable")
    }

    @Test func stateDirectoryIsPrivate() throws {
        let home = try ElevenHome("private")
        #expect(try home.run(["whoami"]).status == 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: home.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        let key = try FileManager.default.attributesOfItem(atPath: home.path + "/identity.key")
        #expect((key[.posixPermissions] as? Int) == 0o600)
        // The same key on every run; no temporary files left behind.
        #expect(try home.run(["whoami"]).stdout == home.run(["whoami"]).stdout)
        let names = try FileManager.default.contentsOfDirectory(atPath: home.path).sorted()
        #expect(names == ["identity.key", "state.lock"])
        // The lock file (kept: removing a lock file races with its next holder) holds nothing.
        let lock = try FileManager.default.attributesOfItem(atPath: home.path + "/state.lock")
        #expect((lock[.posixPermissions] as? Int) == 0o600)
        #expect((lock[.size] as? Int) == 0)
    }

    @Test(arguments: [
        ["whoami"], ["space", "create"], ["space", "join"], ["spaces"], ["members"], ["members", "add"],
        ["members", "remove"], ["thread", "create"], ["threads"], ["send"], ["read"],
    ])
    func helpWorksEverywhere(command: [String]) throws {
        let result = try TestSupport.run(eleven, command + ["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("usage: eleven \(command.joined(separator: " "))"))
        #expect(!result.stdout.contains("DEK") && !result.stdout.contains("wrap"))
    }

    @Test func serverHelpAndBadFlags() throws {
        #expect(try TestSupport.run(elevenServer, ["--help"]).status == 0)
        #expect(try TestSupport.run(elevenServer, ["--listen", "nowhere"]).status == 2)
        #expect(try TestSupport.run(elevenServer, ["--tls-cert", "/x.pem"]).status == 2)
    }
}

// MARK: Helpers

let eleven = TestSupport.productPath("eleven")
let elevenServer = TestSupport.productPath("eleven-server")

/// `{"error": code}` from a `--json` run.
func errorCode(_ result: ProcessResult) throws -> String? {
    let line = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    return object?["error"] as? String
}

/// A private `ELEVEN_HOME` in a fresh temporary directory.
struct ElevenHome {
    let path: String

    init(_ name: String) throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "eleven-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        path = base.appendingPathComponent(name).path
    }

    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
        try TestSupport.run(
            eleven, arguments,
            environment: ["ELEVEN_HOME": path, "ELEVEN_SPACE": ""].merging(environment) { $1 },
            timeout: 30)
    }

    func json(_ arguments: [String]) throws -> [String: Any] {
        let result = try run(arguments)
        #expect(result.status == 0, "\(arguments): \(result.stderr) \(result.stdout)")
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] ?? [:]
    }

    func jsonLines(_ arguments: [String]) throws -> [[String: Any]] {
        let result = try run(arguments)
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return try result.stdout.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
        }
    }
}

/// A real `eleven-server` on a free loopback port with its database in a temporary directory,
/// stopped with SIGTERM by process id (and killed if it does not stop).
final class ElevenServerUnderTest {
    let child: ChildProcess
    let url: String
    /// `ELEVEN_SERVER_HOME`: the server's database files.
    let directory: URL
    /// The server's SQLite database (in `directory`).
    var database: String { directory.appendingPathComponent("eleven-server.sqlite").path }
    private var stopped = false

    /// `quiet`: without request logs (`--quiet`); a test that inspects the logs turns it off.
    init(arguments extra: [String] = [], scheme: String = "http", quiet: Bool = true) throws {
        let port = try TestSupport.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "eleven-server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        url = "\(scheme)://127.0.0.1:\(port)"
        child = try ChildProcess(
            elevenServer, ["--listen", "127.0.0.1:\(port)"] + (quiet ? ["--quiet"] : []) + extra,
            environment: ["ELEVEN_SERVER_HOME": directory.path], port: port, timeout: 20)
    }

    var pid: Int32 { child.pid }

    /// SIGTERM, then the exit status must be 0 (graceful), within 10 seconds.
    func stop() {
        guard !stopped else { return }
        stopped = true
        guard child.isRunning else { return }
        let ended = child.stop(grace: 10)
        if ended.timedOut {
            Issue.record(
                "eleven-server did not stop on SIGTERM (status \(ended.status)): \(ended.stderr.suffix(500))")
        }
        #expect(ended.status == 0)
    }

    deinit { stop() }
}
