import Foundation
import TestSupport
import Testing

/// `eleven demo`, the README's first command, run as a person would.
@Suite(.serialized) struct DemoTests {
    static let interop = !TestSupport.interopSkipped

    @Test(.enabled(if: interop)) func demoThroughTheReferenceMailboxServer() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let server = try TestSupport.startReferenceMailboxServer(in: dir)
            defer { server.stop() }
            let result = try TestSupport.run(
                TestSupport.productPath("eleven"), ["demo", "--relay", "ws://127.0.0.1:\(server.port)/v1"],
                timeout: 60)
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stdout.contains("Waiting for Paul to let you in…"))
            #expect(result.stdout.contains("Joined Family"))
            #expect(result.stdout.contains("That code didn't match. Codes work once: ask for a new one."))
            #expect(result.stdout.contains("Someone tried a wrong code for your invite "))
            // The typo Sam made was fixed locally, and said so.
            #expect(result.stdout.contains("reading '"))
        }
    }

    /// The README's first command on its embedded defaults: eleven-relay started by the demo.
    @Test func demoOnEmbeddedDefaults() async throws {
        try await TestSupport.offPool {
            let result = try TestSupport.run(TestSupport.productPath("eleven"), ["demo"], timeout: 60)
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stdout.contains("relay     ws://127.0.0.1:"))
            #expect(result.stdout.contains("Joined Family"))
            #expect(result.stdout.contains("That code didn't match. Codes work once: ask for a new one."))
            #expect(result.stdout.contains("Sam       Paul: Welcome to the family space!"))
            // The bot let Sam in and told Paul; the wrong guess was reported by the bot too.
            #expect(result.stdout.contains("Bot now attends short-code invites for Family"))
            #expect(result.stdout.contains("Paul      Sam joined Family with your invite "))
            #expect(result.stdout.contains("; it has been cancelled."))
            #expect(result.stdout.contains("Ann       Paul: First book: The Left Hand of Darkness"))
            // Both sides of Ann's join (Paul attending) show the same verification words.
            let words = result.stdout.split(separator: "\n").compactMap { line -> String? in
                guard line.contains("Ann"), let r = line.range(of: "erification words: ") else { return nil }
                return String(line[r.upperBound...].prefix { $0.isLetter || $0 == " " })
                    .trimmingCharacters(in: .whitespaces)
            }
            #expect(words.count == 2 && words[0] == words[1], "\(words)")
        }
    }

    @Test func demoHelpAndBadFlags() throws {
        let eleven = TestSupport.productPath("eleven")
        let help = try TestSupport.run(eleven, ["demo", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("usage: eleven demo [options]"))
        let bad = try TestSupport.run(eleven, ["demo", "--words", "9"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("'--words' must be a whole number from 2 to 8, not '9'"))
        let unreachable = try TestSupport.run(
            eleven, ["demo", "--relay", "ws://127.0.0.1:\(try TestSupport.freePort())/v1"])
        #expect(unreachable.status == 4)
        #expect(unreachable.stdout.contains("can't reach the relay"))
    }

    /// `eleven` found on PATH from another directory finds its programs next to itself, and
    /// Ctrl-C, SIGTERM or a closed output pipe leave no program running and no directory behind.
    /// Each run gets a TMPDIR of its own: the demo's directory is made there, and every program
    /// it starts inherits it, so any survivor is found by its environment.
    @Test(arguments: ["SIGINT", "SIGTERM", "closed pipe"])
    func demoCleansUpWhenStopped(how: String) async throws {
        try await TestSupport.offPool {
            let tmp = try TestSupport.temporaryDirectory()
            let elsewhere = try TestSupport.temporaryDirectory()
            defer {
                try? FileManager.default.removeItem(at: tmp)
                try? FileManager.default.removeItem(at: elsewhere)
            }
            let bin = URL(fileURLWithPath: TestSupport.productPath("eleven")).deletingLastPathComponent().path
            let environment = [
                "PATH": "\(bin):/usr/bin:/bin", "TMPDIR": tmp.path, "ELEVEN_HOME": elsewhere.path,
            ]
            // Found on PATH (argv[0] is then just "eleven") once; by its full path the other times.
            let full = "'\(TestSupport.productPath("eleven"))'"
            let command =
                switch how {
                case "SIGINT": "exec eleven demo"
                case "SIGTERM": "exec \(full) demo"
                default: "\(full) demo | head -n 4"
                }
            let demo = try ChildProcess(
                "/bin/sh", ["-c", command], environment: environment, directory: elsewhere)
            defer { demo.stop(signal: SIGKILL) }
            if how == "closed pipe" {
                let ended = demo.finish(timeout: 120)
                #expect(!ended.timedOut, "\(ended.stdout)\(ended.stderr)")
                #expect(ended.stdout.contains("relay     ws://127.0.0.1:"), "\(ended.stdout)\(ended.stderr)")
            } else {
                try demo.waitFor("  Paul ", in: .stdout, timeout: 120)
                #expect(!Self.processes(mentioning: tmp.path).isEmpty)
                let ended = demo.stop(signal: how == "SIGINT" ? SIGINT : SIGTERM, grace: 60)
                #expect(ended.status == 6 && !ended.signalled, "\(ended.status) \(ended.stderr)")
            }
            #expect(
                TestSupport.eventually(timeout: 30) { Self.processes(mentioning: tmp.path).isEmpty },
                "\(Self.processes(mentioning: tmp.path))")
            let left = try FileManager.default.contentsOfDirectory(atPath: tmp.path)
            #expect(!left.contains { $0.hasPrefix("eleven-demo-") }, "\(left)")
        }
    }

    /// The processes whose command line or environment holds `marker`.
    static func processes(mentioning marker: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            ["cmdline", "environ"].contains { file in
                let data = FileManager.default.contents(atPath: "/proc/\(pid)/\(file)") ?? Data()
                return String(decoding: data, as: UTF8.self).contains(marker)
            }
        }
    }
}
