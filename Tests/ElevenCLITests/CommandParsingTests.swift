import CLISupport
import Testing

@Suite struct CommandParsingTests {
    let spec = CommandSpec(
        ["eleven", "join"], summary: "Join a space with a code.",
        options: [
            OptionSpec("relay", value: "URL", help: "relay", environment: "ELEVEN_RELAY", default: "ws://d"),
            OptionSpec("json", help: "json output"),
            OptionSpec("words", short: "w", value: "N", help: "words"),
        ],
        positionals: [PositionalSpec("CODE", help: "the code", optional: true)])

    @Test func parsesValuesFlagsAndPositionals() throws {
        let p = try spec.parse(["coral-piano-42", "--json", "--relay=ws://x", "-w", "3"], environment: [:])
        #expect(p.positional(0) == "coral-piano-42")
        #expect(p.flag("json"))
        #expect(p.value("relay") == "ws://x")
        #expect(try p.int("words", in: 2...8) == 3)
    }

    @Test func environmentThenDefault() throws {
        #expect(try spec.parse([], environment: ["ELEVEN_RELAY": "ws://env"]).value("relay") == "ws://env")
        #expect(try spec.parse([], environment: [:]).value("relay") == "ws://d")
        #expect(
            try spec.parse(["--relay", "ws://flag"], environment: ["ELEVEN_RELAY": "e"]).value("relay")
                == "ws://flag")
    }

    @Test(arguments: [
        (["--nope"], "unknown option '--nope'"),
        (["-x"], "unknown option '-x'"),
        (["--relay"], "'--relay' needs a value (URL)"),
        (["--json=1"], "'--json' takes no value"),
        (["a", "b"], "unexpected argument 'b'"),
        (["--relay", "a", "--relay", "b"], "'--relay' was given more than once"),
    ])
    func usageErrorsNameTheProblem(arguments: [String], message: String) {
        #expect(throws: CLIError.self) { try spec.parse(arguments, environment: [:]) }
        do {
            _ = try spec.parse(arguments, environment: [:])
        } catch {
            #expect(error.message == message)
            #expect(error.status == .usage)
            #expect(error.code == "usage")
        }
    }

    @Test func helpWinsAnywhere() {
        do {
            _ = try spec.parse(["--nope", "--help"], environment: [:])
            Issue.record("expected help")
        } catch {
            #expect(error.status == .success)
            #expect(error.help?.contains("usage: eleven join [options] [CODE]") == true)
            #expect(error.help?.contains("[env: ELEVEN_RELAY]") == true)
        }
    }

    @Test func intAndDurationBounds() throws {
        let p = try spec.parse(["-w", "99"], environment: [:])
        #expect(throws: CLIError.self) { try p.int("words", in: 2...8) }
        #expect(Duration.parse("15m") == 900)
        #expect(Duration.parse("2h") == 7200)
        #expect(Duration.parse("90") == 90)
        #expect(Duration.parse("x") == nil)
        #expect(Duration.parse("") == nil)
        #expect(Duration.parse("1e999s") == nil)
    }

    @Test func groupPicksLongestPath() throws {
        let hits = Hits()
        let group = CommandGroup(
            program: "eleven", summary: "s",
            entries: [
                .init(CommandSpec(["eleven", "space"], summary: "a")) { _ in hits.add("space") },
                .init(
                    CommandSpec(
                        ["eleven", "space", "create"], summary: "b",
                        positionals: [PositionalSpec("NAME", help: "n")])
                ) { p in
                    hits.add("create \(p.positional(0) ?? "")")
                },
            ])
        try group.run(["space", "create", "Family"])
        try group.run(["space"])
        #expect(hits.all == ["create Family", "space"])
        #expect(throws: CLIError.self) { try group.run(["spaces"]) }
        #expect(throws: CLIError.self) { try group.run([]) }
    }
}

@Suite struct MessageSafetyTests {
    /// No error message repeats a password written into an address, wherever it sits.
    @Test func passwordsInURLsAreNotRepeated() {
        #expect(
            withoutURLPasswords("can't reach https://lee:hunter2@host:1/x, nor ws://a@b/v1 or http://h/")
                == "can't reach https://…@host:1/x, nor ws://…@b/v1 or http://h/")
        #expect(withoutURLPasswords("mail lee@example.com") == "mail lee@example.com")
        #expect(withoutURLPasswords("http://host/path?to=a@b") == "http://host/path?to=a@b")
    }

    @Test func durationsAreDescribedInTheirLargestWholeUnit() {
        #expect(Duration.describe(3600) == "1h")
        #expect(Duration.describe(7 * 86_400) == "7d")
        #expect(Duration.describe(90) == "90s")
        #expect(Duration.describe(900) == "15m")
    }

    @Test func shellWordsPasteAsOne() {
        #expect(shellQuoted("/tmp/bot state") == "'/tmp/bot state'")
        #expect(shellQuoted("/tmp/bot.key") == "/tmp/bot.key")
        #expect(shellQuoted("it's") == "'it'\\''s'")
        #expect(shellQuoted("") == "''")
    }
}

final class Hits: @unchecked Sendable {
    private(set) var all: [String] = []
    func add(_ s: String) { all.append(s) }
}

@Suite struct GivenOptionTests {
    @Test func environmentAndDefaultsDoNotCountAsGiven() throws {
        let spec = CommandSpec(
            ["x"], summary: "s",
            options: [
                OptionSpec("a", value: "A", help: "a", environment: "X_A"),
                OptionSpec("b", value: "B", help: "b", default: "1"),
                OptionSpec("c", help: "c"),
            ])
        let p = try spec.parse(["--c"], environment: ["X_A": "env"])
        #expect(p.value("a") == "env" && p.value("b") == "1")
        #expect(!p.wasGiven("a") && !p.wasGiven("b") && p.wasGiven("c"))
        #expect(try spec.parse(["--b", "2"], environment: [:]).wasGiven("b"))
    }
}
