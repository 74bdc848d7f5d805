import Foundation
import TestSupport
import Testing

/// Short-code joins with the real binaries: `eleven-server`, a relay, and `eleven` with one
/// `ELEVEN_HOME` per person. The scenarios take the relay URL as a parameter; here they run
/// against the reference mailbox server (set `ELEVEN_TEST_JOIN_RELAY` to point them at another
/// relay, such as eleven-relay).
enum JoinScenariosCLI {
    struct World {
        let relayURL: String
        let server: ElevenServerUnderTest
        let paul: ElevenHome
        /// The reference mailbox server stores a third side before refusing it as crowded, which
        /// spoils the mailbox; eleven-relay refuses it without writing anything.
        var crowdingSpoilsTheMailbox = true

        func env(_ home: ElevenHome) -> [String: String] {
            ["ELEVEN_HOME": home.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": relayURL]
        }

        func run(_ home: ElevenHome, _ arguments: [String]) throws -> ProcessResult {
            try home.run(arguments, environment: ["ELEVEN_RELAY": relayURL])
        }

        func background(_ home: ElevenHome, _ arguments: [String]) throws -> ChildProcess {
            try ChildProcess(eleven, arguments, environment: env(home))
        }
    }

    /// A fresh `eleven-server` and `eleven-relay` for `body`, off the cooperative pool, both
    /// stopped by process id afterwards.
    static func withServerAndRelay(
        _ body: @escaping @Sendable (ElevenServerUnderTest, ElevenRelayUnderTest) throws -> Void
    ) async throws {
        try await TestSupport.offPool {
            let server = try ElevenServerUnderTest()
            defer { server.stop() }
            let relay = try ElevenRelayUnderTest()
            defer { relay.stop() }
            try body(server, relay)
        }
    }

    /// Paul's space with history: two threads, three messages.
    static func makeWorld(
        relayURL: String, server: ElevenServerUnderTest, crowdingSpoilsTheMailbox: Bool = true
    ) throws -> World {
        let paul = try ElevenHome("paul")
        let w = World(
            relayURL: relayURL, server: server, paul: paul, crowdingSpoilsTheMailbox: crowdingSpoilsTheMailbox
        )
        #expect(
            try w.run(paul, ["space", "create", "Family", "--server", server.url, "--as", "Paul"]).status == 0
        )
        #expect(try w.run(paul, ["send", "Welcome", "to", "Family"]).status == 0)
        #expect(try w.run(paul, ["send", "Dinner at eight"]).status == 0)
        #expect(try w.run(paul, ["thread", "create", "plans"]).status == 0)
        #expect(try w.run(paul, ["send", "--thread", "plans", "picnic"]).status == 0)
        return w
    }

    /// `eleven invite --short --yes` in the background; Sam joins and reads the history at once.
    static func attendedJoin(_ w: World) throws {
        let invite = try w.background(w.paul, ["invite", "--short", "--yes"])
        let code = try invite.value(afterPrefix: "Invite code:")
        let link = try invite.value(afterPrefix: "Link:")
        // The space server as saved (scheme, host, port), like a full-length link; and the link
        // itself joins.
        #expect(link.hasPrefix("http://127.0.0.1:") && link.contains("/invite#Paul/") && link.hasSuffix(code))
        let sam = try ElevenHome("sam")
        // No --verify: the verification words are shown by default.
        let joined = try w.run(sam, ["join", link, "--name", "Sam"])
        #expect(joined.status == 0, "\(joined.stderr)")
        let lines = joined.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "Connecting…")
        #expect(lines.contains { $0.hasPrefix("Code accepted. Verification words: ") })
        #expect(lines.contains("Waiting for Paul to let you in…"))
        #expect(lines.last?.hasPrefix("Joined Family: 2 threads, 3 messages.") == true, "\(lines)")
        let paulSaw = invite.finish(timeout: 20)
        #expect(paulSaw.status == 0, "\(paulSaw.stderr)")
        #expect(paulSaw.stdout.contains("Sam joined Family."))
        // The same verification words on both sides.
        let samWords = lines.first { $0.hasPrefix("Code accepted. Verification words: ") }?
            .dropFirst("Code accepted. Verification words: ".count).prefix { $0 != "(" }
            .trimmingCharacters(in: .whitespaces)
        #expect(samWords != nil && paulSaw.stdout.contains("(verification words: \(samWords ?? "?")"))
        // History is readable at once, in both threads; Sam can write too.
        #expect(try w.run(sam, ["read"]).stdout == "Paul: Welcome to Family\nPaul: Dinner at eight\n")
        #expect(try w.run(sam, ["read", "--thread", "plans"]).stdout == "Paul: picnic\n")
        #expect(try w.run(sam, ["send", "Hi all"]).status == 0)
        #expect(try w.run(w.paul, ["read"]).stdout.hasSuffix("Sam: Hi all\n"))
        // The link form works as the code argument too (a fresh invite; JSON output).
        let second = try w.background(w.paul, ["invite", "--short", "--yes", "--words", "3"])
        let link2 = try second.value(afterPrefix: "Link:")
        let ann = try ElevenHome("ann")
        let annJoined = try w.run(ann, ["join", link2, "--name", "Ann", "--json"])
        #expect(annJoined.status == 0, "\(annJoined.stderr)")
        let last = annJoined.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let object = try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any]
        #expect(object?["event"] as? String == "joined")
        #expect(object?["threads"] as? Int == 2)
        #expect(object?["messages"] as? Int == 4)
        #expect(second.finish(timeout: 20).status == 0)
    }

    /// A wrong code: exit 3 for the guesser, the invite is burned (the inviter exits 3 and says
    /// so), and the right code afterwards finds nobody. Nothing is saved for the guesser.
    static func wrongCodeBurnsTheInvite(_ w: World) throws {
        let invite = try w.background(w.paul, ["invite", "--short", "--yes"])
        let code = try invite.value(afterPrefix: "Invite code:")
        let parts = code.split(separator: "-")
        let nameplate = parts.last.map(String.init) ?? ""
        let wrongWords = parts.first == "abacus" ? "abbey-abacus" : "abacus-abbey"
        let eve = try ElevenHome("eve")
        let guessed = try w.run(eve, ["join", "\(wrongWords)-\(nameplate)", "--name", "Eve", "--json"])
        #expect(guessed.status == 3, "\(guessed.stdout) \(guessed.stderr)")
        #expect(try errorCode(guessed) == "code_mismatch")
        let paulSaw = invite.finish(timeout: 20)
        #expect(paulSaw.status == 3)
        // One message for one burn (before: a line on standard output and the error).
        let said = paulSaw.stdout + paulSaw.stderr
        #expect(said.components(separatedBy: "wrong code").count == 2, "\(said)")
        #expect(paulSaw.stderr.contains("Someone tried a wrong code for your invite; it no longer works."))
        // Nothing half-joined: Eve has no space, and Paul's member list has only Paul.
        #expect(!FileManager.default.fileExists(atPath: eve.path + "/spaces.json"))
        let members = try w.paul.json(["members", "--json"])
        #expect((members["members"] as? [[String: Any]])?.count == 1)
        // The right code afterwards: the inviter's notice says the invite was burned.
        let sam = try ElevenHome("sam")
        let late = try w.run(sam, ["join", code, "--name", "Sam", "--timeout", "3s", "--json"])
        #expect(late.status == 3)
        #expect(try errorCode(late) == "invite_burned")
        #expect(!FileManager.default.fileExists(atPath: sam.path + "/spaces.json"))
    }

    /// `--detach` leaves the invite pending (encrypted at rest); a joiner waits; `eleven approve
    /// --yes` resumes the relay state in a new process and lets them in.
    static func detachThenApprove(_ w: World) throws {
        let detached = try w.run(w.paul, ["invite", "--short", "--detach", "--uses", "2"])
        #expect(detached.status == 0, "\(detached.stderr)")
        let code =
            detached.stdout.split(separator: "\n").first { $0.hasPrefix("Invite code: ") }
            .map { String($0.dropFirst("Invite code: ".count)) } ?? ""
        #expect(!code.isEmpty)
        // The words are not readable in the state directory.
        let sealed = try Data(contentsOf: URL(fileURLWithPath: w.paul.path + "/invites.sealed"))
        let words = code.split(separator: "-").dropLast().joined(separator: "-")
        #expect(sealed.range(of: Data(words.utf8)) == nil)
        let keyMode = try FileManager.default.attributesOfItem(atPath: w.paul.path + "/invites.key")
        #expect(keyMode[.posixPermissions] as? Int == 0o600)
        // Nobody yet: approve waits, then keeps the invite.
        let idle = try w.run(w.paul, ["approve", "--yes", "--timeout", "1s"])
        #expect(idle.status == 0 && idle.stdout.contains("Nobody has used \(code) yet."), "\(idle.stderr)")
        // The wait says what it waits for.
        #expect(idle.stdout.hasPrefix("Waiting for someone to use \(code) (Ctrl-C stops"), "\(idle.stdout)")

        for (index, name) in ["Sam", "Ann"].enumerated() {
            let home = try ElevenHome(name.lowercased())
            let joiner = try w.background(home, ["join", code, "--name", name, "--timeout", "60s"])
            _ = try joiner.value(afterPrefix: "Connecting")
            // approve attends until every use is taken or its time runs out.
            let approved = try w.run(w.paul, ["approve", "--yes", "--timeout", index == 0 ? "4s" : "20s"])
            #expect(approved.status == 0, "\(approved.stdout) \(approved.stderr)")
            #expect(approved.stdout.contains("\(name) joined Family."))
            let done = joiner.finish(timeout: 30)
            #expect(done.status == 0, "\(done.stdout) \(done.stderr)")
            #expect(done.stdout.contains("Joined Family"))
            #expect(try w.run(home, ["read"]).stdout.hasPrefix("Paul: Welcome to Family\n"))
            // After the last use nothing is pending.
            let remaining = FileManager.default.fileExists(atPath: w.paul.path + "/invites.sealed")
            #expect(remaining == (index == 0))
        }
        let none = try w.run(w.paul, ["approve", "--yes", "--timeout", "1s"])
        #expect(none.stdout.contains("No pending invites."))
    }

    /// Bad input and an unreachable relay get distinct codes; nothing is saved.
    static func badInputAndUnreachableRelay(_ w: World) throws {
        let sam = try ElevenHome("sam")
        let unreachable = try sam.run(
            ["join", "coral-piano-42", "--json"], environment: ["ELEVEN_RELAY": "ws://127.0.0.1:1/v1"])
        #expect(unreachable.status == 4)
        #expect(try errorCode(unreachable) == "relay_unreachable")
        let garbage = try w.run(sam, ["join", "not a code at all", "--json"])
        #expect(garbage.status == 3)
        let badRelay = try w.run(sam, ["join", "coral-piano-42", "--relay", "http://x", "--json"])
        #expect(badRelay.status == 2)
        // A bad ELEVEN_RELAY is named as the variable (before: blamed on '--relay').
        let badVariable = try sam.run(["join", "coral-piano-42"], environment: ["ELEVEN_RELAY": "garbage"])
        #expect(badVariable.status == 2, "\(badVariable.stderr)")
        #expect(
            badVariable.stderr.contains("ELEVEN_RELAY must be a ws:// or wss:// URL, not 'garbage'"),
            "\(badVariable.stderr)")
        // `relay` in the state directory's config.json names the relay when nothing closer does.
        try FileManager.default.createDirectory(atPath: sam.path, withIntermediateDirectories: true)
        try Data(#"{"relay": "ws://127.0.0.1:1/v1"}"#.utf8).write(
            to: URL(fileURLWithPath: sam.path + "/config.json"))
        let configured = try sam.run(["join", "coral-piano-42", "--json"], environment: ["ELEVEN_RELAY": ""])
        #expect(configured.status == 4 && configured.stdout.contains("127.0.0.1:1"), "\(configured.stdout)")
        try FileManager.default.removeItem(atPath: sam.path + "/config.json")
        let noTerminal = try w.run(sam, ["join", "--json"])
        #expect(noTerminal.status == 2)
        let notShort = try w.run(w.paul, ["invite", "--detach", "--json"])  // --detach is for codes
        #expect(notShort.status == 2)
        // A third person on a code while Sam waits on it: the relay says crowded (exit 3). The
        // reference relay records the third side before refusing it, so the invite is lost: the
        // inviter's `eleven approve` says so too and drops it.
        let detached = try w.run(w.paul, ["invite", "--short", "--detach"])
        let code =
            detached.stdout.split(separator: "\n").first { $0.hasPrefix("Invite code: ") }
            .map { String($0.dropFirst("Invite code: ".count)) } ?? ""
        let waiting = try w.background(sam, ["join", code, "--name", "Sam", "--timeout", "20s"])
        _ = try waiting.value(afterPrefix: "Connecting")
        usleep(300_000)
        let eve = try ElevenHome("eve")
        let crowded = try w.run(eve, ["join", code, "--name", "Eve", "--json"])
        #expect(crowded.status == 3, "\(crowded.stdout) \(crowded.stderr)")
        #expect(try errorCode(crowded) == "crowded")
        if w.crowdingSpoilsTheMailbox {
            let approve = try w.run(w.paul, ["approve", "--yes", "--timeout", "2s", "--json"])
            #expect(approve.status == 3)
            #expect(try errorCode(approve) == "crowded")
            #expect(!FileManager.default.fileExists(atPath: w.paul.path + "/invites.sealed"))
            kill(waiting.pid, SIGTERM)
            _ = waiting.finish(timeout: 10)
            #expect(!FileManager.default.fileExists(atPath: sam.path + "/spaces.json"))
        } else {
            // Eve's attempt changed nothing: Paul approves and Sam, still waiting, gets in.
            let approve = try w.run(w.paul, ["approve", "--yes", "--timeout", "20s", "--json"])
            #expect(approve.status == 0, "\(approve.stdout) \(approve.stderr)")
            let joined = waiting.finish(timeout: 20)
            #expect(joined.status == 0, "\(joined.stdout) \(joined.stderr)")
            #expect(FileManager.default.fileExists(atPath: sam.path + "/spaces.json"))
            try? FileManager.default.removeItem(atPath: sam.path + "/spaces.json")
        }
        // An invite nobody uses expires (exit 7) and says so.
        let expired = try w.run(w.paul, ["invite", "--short", "--expires", "1s", "--json"])
        #expect(expired.status == 7)
        #expect(try errorCode(expired) == "invite_expired")
        #expect(!FileManager.default.fileExists(atPath: sam.path + "/spaces.json"))
    }
}

@Suite(.serialized) struct JoinEndToEndTests {
    static let interop = !TestSupport.interopSkipped
    typealias RelayKind = WormholeInteropTests.RelayKind

    /// The relays the scenarios run through: ours always; the reference mailbox server when the
    /// interop virtualenv is there. `ELEVEN_TEST_JOIN_RELAY=URL` points them at another relay.
    static let relays: [RelayKind] = interop ? RelayKind.allCases : [.eleven]

    /// Runs `body` with eleven-server, a relay of `kind` and Paul's space.
    func withWorld(
        _ kind: RelayKind, _ body: @escaping @Sendable (JoinScenariosCLI.World) throws -> Void
    ) async throws {
        try await TestSupport.offPool {
            let server = try ElevenServerUnderTest()
            defer { server.stop() }
            var relay: (any WormholeTestRelay)?
            let relayURL: String
            if let given = ProcessInfo.processInfo.environment["ELEVEN_TEST_JOIN_RELAY"], !given.isEmpty {
                relayURL = given
            } else {
                let started: any WormholeTestRelay =
                    kind == .reference ? try ReferenceMailboxRelay() : try ElevenRelayUnderTest()
                relay = started
                relayURL = started.url
            }
            defer { relay?.stop() }
            try body(
                try JoinScenariosCLI.makeWorld(
                    relayURL: relayURL, server: server, crowdingSpoilsTheMailbox: kind == .reference))
        }
    }

    @Test(arguments: relays) func attendedJoinReadsHistoryAtOnce(relay: RelayKind) async throws {
        try await withWorld(relay) { try JoinScenariosCLI.attendedJoin($0) }
    }

    @Test(arguments: relays) func wrongCodeBurnsTheInvite(relay: RelayKind) async throws {
        try await withWorld(relay) { try JoinScenariosCLI.wrongCodeBurnsTheInvite($0) }
    }

    @Test(arguments: relays) func detachThenApprove(relay: RelayKind) async throws {
        try await withWorld(relay) { try JoinScenariosCLI.detachThenApprove($0) }
    }

    @Test(arguments: relays) func badInputAndUnreachableRelay(relay: RelayKind) async throws {
        try await withWorld(relay) { try JoinScenariosCLI.badInputAndUnreachableRelay($0) }
    }

    @Test(arguments: relays) func failedAttemptsAreCapped(relay: RelayKind) async throws {
        try await withWorld(relay) { try JoinScenariosCLI.failedAttemptsAreCapped($0) }
    }

    @Test(arguments: relays) func endedInvitesSayWhy(relay: RelayKind) async throws {
        try await withWorld(relay) { try JoinScenariosCLI.endedInvitesSayWhy($0) }
    }

    @Test(arguments: relays) func approveHonoursTheCap(relay: RelayKind) async throws {
        try await withWorld(relay) { try JoinScenariosCLI.approveHonoursTheCap($0) }
    }

    @Test(arguments: relays) func codeFromStandardInput(relay: RelayKind) async throws {
        try await withWorld(relay) { try JoinScenariosCLI.codeFromStandardInput($0) }
    }

    @Test(arguments: relays) func signalledInviterTellsTheJoiner(relay: RelayKind) async throws {
        try await withWorld(relay) { try JoinScenariosCLI.signalledInviterTellsTheJoiner($0) }
    }

    @Test(arguments: relays) func signalledJoinerTellsTheInviter(relay: RelayKind) async throws {
        try await withWorld(relay) { try JoinScenariosCLI.signalledJoinerTellsTheInviter($0) }
    }

    @Test(arguments: relays) func serverDownMidApprovalIsUnavailable(relay: RelayKind) async throws {
        try await withWorld(relay) { try JoinScenariosCLI.serverDownMidApprovalIsUnavailable($0) }
    }

    @Test(arguments: relays) func killedJoinerResumes(relay: RelayKind) async throws {
        try await withWorld(relay) { try JoinScenariosCLI.killedJoinerResumes($0) }
    }

    @Test(arguments: [["invite"], ["approve"], ["join"], ["completion", "bash"], ["completion", "words"]])
    func helpWorks(command: [String]) throws {
        let result = try TestSupport.run(eleven, command + ["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("usage: eleven \(command.joined(separator: " "))"))
    }
}
