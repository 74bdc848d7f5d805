import CLISupport
import Foundation
import TestSupport
import Testing

/// The README's promises about every program: `--help` on every command and group, `--version`
/// on every program (one version), usage errors in one line and a hint, the nearest command
/// suggested for a typo. Run as a person would, on the real programs.
@Suite struct CLIRulesTests {
    static let programs = ["eleven", "eleven-relay", "eleven-server", "eleven-bot", "eleven-bench"]

    @Test func everyProgramPrintsTheSameVersion() throws {
        for program in Self.programs {
            let result = try TestSupport.run(TestSupport.productPath(program), ["--version"], timeout: 30)
            #expect(result.status == 0, "\(program): \(result.stderr)")
            #expect(result.stdout == "\(program) \(ElevenVersion.current)\n", "\(program)")
        }
    }

    /// Every command and every group the top-level help lists answers `--help` with its usage.
    @Test func everyCommandAndGroupHasHelp() throws {
        let top = try TestSupport.run(eleven, ["--help"])
        #expect(top.status == 0)
        let commands = top.stdout.split(separator: "\n", omittingEmptySubsequences: false).drop {
            $0 != "commands:"
        }.dropFirst()
            .prefix { !$0.isEmpty }.map { line in
                line.split(separator: " ").prefix { $0.first?.isLowercase == true }.map(String.init)
            }
        #expect(commands.count > 30)
        let groups = Set(commands.filter { $0.count > 1 }.map { [$0[0]] })
        #expect(groups.isSuperset(of: [["space"], ["device"], ["bot"], ["recovery"], ["completion"]]))
        for command in commands + groups.sorted(by: { $0[0] < $1[0] }) {
            let result = try TestSupport.run(eleven, command + ["--help"])
            #expect(result.status == 0, "\(command): \(result.stderr)")
            #expect(result.stdout.hasPrefix("usage: eleven \(command.joined(separator: " "))"), "\(command)")
        }
        for program in Self.programs.dropFirst() {
            let result = try TestSupport.run(TestSupport.productPath(program), ["--help"])
            #expect(result.status == 0 && result.stdout.hasPrefix("usage: \(program)"), "\(program)")
        }
        // A group without its command: a usage error that names the commands it has.
        let bare = try TestSupport.run(eleven, ["space"])
        #expect(bare.status == 2)
        #expect(bare.stderr.contains("'eleven space' needs a command: create, join"), "\(bare.stderr)")
    }

    @Test(arguments: [
        (["jion"], "did you mean 'eleven join'?"),
        (["sapce", "create"], "did you mean 'eleven space'?"),
        (["space", "craete"], "did you mean 'eleven space create'?"),
        (["rec"], "did you mean 'eleven receive' or 'eleven recover' or 'eleven recovery'?"),
    ])
    func anUnknownCommandSuggestsTheNearest(arguments: [String], suggestion: String) throws {
        let result = try TestSupport.run(eleven, arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(suggestion), "\(result.stderr)")
    }

    @Test func nearestIsAnEditDistanceOrAPrefix() {
        let names: Set = ["join", "invite", "receive", "recovery", "send", "space", "spaces"]
        #expect(CommandGroup.nearest(to: "jion", in: names) == ["join"])
        #expect(CommandGroup.nearest(to: "spcae", in: names) == ["space"])
        #expect(CommandGroup.nearest(to: "rec", in: names) == ["receive", "recovery"])
        #expect(CommandGroup.nearest(to: "zebra", in: names).isEmpty)
        #expect(CommandGroup.nearest(to: "x", in: names).isEmpty)
    }

    /// A usage error is its message and one line pointing at the help, on every program.
    @Test func aUsageErrorIsOneLineAndAHint() throws {
        let cases: [(String, [String], String)] = [
            ("eleven", ["join", "--nope"], "`eleven join --help`"),
            ("eleven", ["space", "create"], "`eleven space create --help`"),
            ("eleven", ["nosuch"], "`eleven --help`"),
            ("eleven-relay", ["--nope"], "`eleven-relay --help`"),
            ("eleven-server", ["--nope"], "`eleven-server --help`"),
            ("eleven-bot", ["status", "--nope"], "`eleven-bot status --help`"),
            ("eleven-bench", ["nosuch"], "`eleven-bench --help`"),
            ("eleven-bench", ["pake", "--nope"], "`eleven-bench pake --help`"),
            ("eleven-bench", ["disk", "--seconds", "soon"], "`eleven-bench disk --help`"),
        ]
        for (program, arguments, hint) in cases {
            let result = try TestSupport.run(TestSupport.productPath(program), arguments)
            #expect(result.status == 2, "\(program) \(arguments)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 2, "\(program) \(arguments): \(result.stderr)")
            #expect(lines.first?.hasPrefix(program) == true, "\(result.stderr)")
            #expect(lines.last?.contains(hint) == true, "\(result.stderr)")
        }
    }

    /// What Tab offers, through the script `eleven completion bash` prints, in a real bash.
    @Test func bashCompletionCoversEveryCommandAndCodesOnlyWhereTheyGo() throws {
        func offered(_ words: [String]) throws -> [String] {
            let quoted = ([eleven] + words).map { "'\($0)'" }.joined(separator: " ")
            let script = """
                source <('\(eleven)' completion bash)
                COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count)
                _eleven
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            // `eleven` on PATH too, as for a person (the script of old called it by name).
            let path = URL(fileURLWithPath: eleven).deletingLastPathComponent().path + ":/usr/bin:/bin"
            let result = try TestSupport.run("/bin/bash", ["-c", script], environment: ["PATH": path])
            #expect(result.status == 0, "\(result.stderr)")
            return result.stdout.split(separator: "\n").map(String.init)
        }
        #expect(try offered(["rec"]) == ["receive", "recover", "recovery"])
        #expect(try offered(["space", ""]) == ["create", "join"])
        #expect(try offered(["join", "--na"]) == ["--name"])
        #expect(try offered(["join", "coral"]) == ["coral-"])
        #expect(try offered(["join", "coral-pia"]) == ["coral-piano-"])
        #expect(try offered(["device", "link", "coral-pia"]) == ["coral-piano-"])
        #expect(try offered(["receive", "7-guitar"]) == ["7-guitarist-"])
        #expect(try offered(["join", "coral-piano-42", ""]).isEmpty)
        #expect(try offered(["join", "coral-piano-42-"]).isEmpty)
        #expect(try offered(["join", "--name", ""]).isEmpty)
        #expect(try offered(["join", "--name", "Sam", "cor"]).count > 1)
        // Every command the help lists is offered from its first two letters.
        let top = try TestSupport.run(eleven, ["--help"]).stdout
        let names = Set(
            top.split(separator: "\n", omittingEmptySubsequences: false).drop { $0 != "commands:" }
                .dropFirst().prefix { !$0.isEmpty }
                .compactMap { $0.split(separator: " ").first.map(String.init) })
        for name in names {
            #expect(try offered([String(name.prefix(2))]).contains(name), "\(name)")
        }
    }
}
