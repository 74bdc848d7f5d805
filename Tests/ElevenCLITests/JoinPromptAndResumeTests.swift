import Foundation
import TestSupport
import Testing

/// The code prompt without a terminal, shell completion, and `eleven join --resume` after the
/// joiner was killed (run from `JoinEndToEndTests` against each relay).
extension JoinScenariosCLI {
    /// Standard input is not a terminal: the code is read as one plain line.
    static func codeFromStandardInput(_ w: World) throws {
        let invite = try w.background(w.paul, ["invite", "--short", "--yes"])
        let code = try invite.value(afterPrefix: "Invite code:")
        let ann = try ElevenHome("ann")
        let joined = try TestSupport.run(
            eleven, ["join", "--name", "Ann"], stdin: Data("\(code)\n".utf8), environment: w.env(ann),
            timeout: 30)
        #expect(joined.status == 0, "\(joined.stdout) \(joined.stderr)")
        #expect(joined.stdout.contains("Joined Family"))
        // No prompt and no terminal modes when the code is piped in.
        #expect(!joined.stderr.contains("Enter the invite code"))
        #expect(invite.finish(timeout: 20).status == 0)
        let empty = try TestSupport.run(
            eleven, ["join", "--json"], stdin: Data("\n".utf8), environment: w.env(ann), timeout: 30)
        #expect(empty.status == 2)
    }

    /// SIGTERM (or Ctrl-C) to Paul's `eleven invite --short` while it asks "Let Sam join
    /// Family?": Sam hears at once that Paul stopped attending (before: Sam waited its whole
    /// --timeout), and Paul exits 1, `interrupted`.
    static func signalledInviterTellsTheJoiner(_ w: World) throws {
        let invite = try ChildProcess(
            eleven, ["invite", "--short"], environment: w.env(w.paul), input: .open)
        let code = try invite.value(afterPrefix: "Invite code:")
        let sam = try ElevenHome("sam")
        let joining = try w.background(sam, ["join", code, "--name", "Sam", "--timeout", "240s"])
        _ = try joining.value(afterPrefix: "Waiting for Paul")
        try invite.waitFor("Let Sam join Family? [y/N]", in: .stderr, timeout: 60)
        kill(invite.pid, SIGTERM)
        let paulSaw = invite.finish(timeout: 60)
        #expect(paulSaw.status == 1 && paulSaw.stderr.contains("Interrupted."), "\(paulSaw.stderr)")
        let samSaw = joining.finish(timeout: 120)
        #expect(!samSaw.timedOut && samSaw.status == 3, "\(samSaw.stdout) \(samSaw.stderr)")
        #expect(samSaw.stderr.contains("Paul stopped attending this invite."), "\(samSaw.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sam.path + "/spaces.json"))
    }

    /// Paul's `eleven invite --short` asking "Let Sam join Family?" while Sam's `eleven join`
    /// waits for the answer.
    static func samAwaitsPaulsAnswer(_ w: World) throws -> (
        invite: ChildProcess, joining: ChildProcess, sam: ElevenHome
    ) {
        let invite = try ChildProcess(
            eleven, ["invite", "--short"], environment: w.env(w.paul), input: .open)
        let code = try invite.value(afterPrefix: "Invite code:")
        let sam = try ElevenHome("sam")
        let joining = try w.background(sam, ["join", code, "--name", "Sam", "--timeout", "240s"])
        try invite.waitFor("Let Sam join Family? [y/N]", in: .stderr, timeout: 60)
        return (invite, joining, sam)
    }

    /// SIGTERM to Sam's `eleven join` while Paul is asked: Sam exits 1 `interrupted`, Paul's
    /// question notices at once ("Sam stopped waiting."), and the invite goes on attending.
    static func signalledJoinerTellsTheInviter(_ w: World) throws {
        let (invite, joining, _) = try samAwaitsPaulsAnswer(w)
        kill(joining.pid, SIGTERM)
        let samSaw = joining.finish(timeout: 60)
        #expect(samSaw.status == 1 && samSaw.stderr.contains("Interrupted."), "\(samSaw.stderr)")
        try invite.waitFor("Sam stopped waiting.", in: .stdout, timeout: 60)
        #expect(invite.isRunning, "still attending: the use was not spent")
        kill(invite.pid, SIGTERM)
        #expect(invite.finish(timeout: 60).status == 1)
    }

    /// The space server goes down while Paul is asked: his yes cannot add Sam. Both sides exit 4,
    /// a server unavailable (before: Sam exited 6, as if Paul had said no).
    static func serverDownMidApprovalIsUnavailable(_ w: World) throws {
        let (invite, joining, sam) = try samAwaitsPaulsAnswer(w)
        // Down hard, as a crash or a lost network would take it.
        kill(w.server.pid, SIGKILL)
        #expect(TestSupport.eventually(timeout: 60) { !w.server.child.isRunning })
        try invite.send(line: "y")
        let paulSaw = invite.finish(timeout: 120)
        #expect(paulSaw.status == 4, "\(paulSaw.stdout) \(paulSaw.stderr)")
        let samSaw = joining.finish(timeout: 120)
        #expect(samSaw.status == 4, "\(samSaw.stdout) \(samSaw.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sam.path + "/spaces.json"))
    }

    /// Sam is killed while waiting for Paul's answer; `eleven join --resume` finishes the join.
    static func killedJoinerResumes(_ w: World) throws {
        let detached = try w.run(w.paul, ["invite", "--short", "--detach"])
        let code =
            detached.stdout.split(separator: "\n").first { $0.hasPrefix("Invite code: ") }
            .map { String($0.dropFirst("Invite code: ".count)) } ?? ""
        let sam = try ElevenHome("sam")
        let first = try w.background(sam, ["join", code, "--name", "Sam", "--verify"])
        _ = try first.value(afterPrefix: "Connecting")
        // Paul attends and asks (no --yes): Sam's request waits for his answer.
        let approve = try ChildProcess(
            eleven, ["approve", "--timeout", "60s"], environment: w.env(w.paul), input: .open)
        let words = try first.value(afterPrefix: "Code accepted. Verification words:")
        _ = try first.value(afterPrefix: "Waiting for Paul")
        kill(first.pid, SIGKILL)
        _ = first.finish(timeout: 10)
        // The interrupted join is saved sealed: the code's words are not readable.
        let sealed = try Data(contentsOf: URL(fileURLWithPath: sam.path + "/joins.sealed"))
        let secret = code.split(separator: "-").dropLast().joined(separator: "-")
        #expect(sealed.range(of: Data(secret.utf8)) == nil)
        let mode = try FileManager.default.attributesOfItem(atPath: sam.path + "/joins.key")
        #expect(mode[.posixPermissions] as? Int == 0o600)
        try approve.send(Data("y\n".utf8))
        approve.closeInput()
        let paulSaw = approve.finish(timeout: 30)
        #expect(paulSaw.status == 0, "\(paulSaw.stdout) \(paulSaw.stderr)")
        #expect(paulSaw.stdout.contains("Sam joined Family."))
        let resumed = try w.run(sam, ["join", "--resume", "--verify"])
        #expect(resumed.status == 0, "\(resumed.stdout) \(resumed.stderr)")
        #expect(resumed.stdout.hasPrefix("Resuming the join…"))
        // The same key as before the kill: the same verification words.
        #expect(resumed.stdout.contains("Verification words: \(words.prefix { $0 != "(" })"))
        #expect(resumed.stdout.contains("Joined Family: 2 threads, 3 messages."))
        #expect(try w.run(sam, ["read"]).stdout.hasPrefix("Paul: Welcome to Family\n"))
        #expect(!FileManager.default.fileExists(atPath: sam.path + "/joins.sealed"))
        let nothing = try w.run(sam, ["join", "--resume", "--json"])
        #expect(nothing.status == 1)
        #expect(try errorCode(nothing) == "no_pending_join")
    }
}

/// `eleven completion`: candidates for a partly typed code, and the bash script using them.
@Suite struct CompletionCommandTests {
    @Test func wordsCompleteTheLastWord() throws {
        let result = try TestSupport.run(eleven, ["completion", "words", "coral-pi"])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("coral-piano") && lines.allSatisfy { $0.hasPrefix("coral-pi") })
        #expect(try TestSupport.run(eleven, ["completion", "words", "coral-42"]).stdout.isEmpty)
    }

    @Test func theBashScriptCompletesCodeWords() throws {
        let bin = URL(fileURLWithPath: eleven).deletingLastPathComponent().path
        let script = """
            source <(eleven completion bash)
            COMP_WORDS=(eleven join coral-pian); COMP_CWORD=2; _eleven; echo "${COMPREPLY[@]}"
            COMP_WORDS=(eleven app); COMP_CWORD=1; _eleven; echo "${COMPREPLY[@]}"
            """
        let result = try TestSupport.run(
            "/bin/bash", ["-c", script],
            environment: ["PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "")])
        #expect(result.status == 0, "\(result.stderr)")
        // A word completed alone gets its dash, as at the `eleven join` prompt.
        #expect(result.stdout == "coral-piano-\napprove\n")
    }
}

/// The code prompt on a real terminal (a pseudo-terminal from util-linux `script`, part of every
/// Debian system): Ctrl-C there is an interruption, exit status 1 `interrupted` (before: 6, as if
/// someone had refused).
@Suite struct CodePromptTerminalTests {
    @Test func ctrlCAtTheCodePromptIsAnInterruption() throws {
        let home = try ElevenHome("sam")
        let prompt = try ChildProcess(
            "/usr/bin/script", ["-qec", "\(eleven) join", "/dev/null"],
            environment: ["ELEVEN_HOME": home.path, "ELEVEN_SPACE": ""], input: .open)
        try prompt.waitFor("Enter the invite code", timeout: 60)
        try prompt.send(Data([3]))
        let ended = prompt.finish(timeout: 60)
        #expect(!ended.timedOut && ended.status == 1, "\(ended.stdout) \(ended.stderr)")
        #expect((ended.stdout + ended.stderr).contains("Interrupted."))
    }
}
