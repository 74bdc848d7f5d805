import Foundation
import TestSupport
import Testing

/// The smaller promises of issue #25: messages that say the right thing and next steps that work
/// when followed literally. Real programs, real files.
@Suite struct CLIMessagesTests {
    @Test func aDurationOutOfRangeSaysItsRange() throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bot = TestSupport.productPath("eleven-bot")
        let key = ["--state", directory.path + "/state", "--key-file", directory.path + "/bot.key"]
        #expect(try TestSupport.run(bot, ["init"] + key).status == 0)
        let zero = try TestSupport.run(bot, ["run", "--step-timeout", "0s"] + key)
        #expect(zero.status == 2)
        #expect(zero.stderr.contains("more than 0 and at most 1h, not '0s'"), "\(zero.stderr)")
        #expect(!zero.stderr.contains("days"), "\(zero.stderr)")
    }

    /// `eleven-bot init` prints the next command; run as printed (with the code filled in) it
    /// gets as far as the relay, not stopped for want of the key.
    @Test func theBotsNextStepWorksAsPrinted() throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bot = TestSupport.productPath("eleven-bot")
        let noKey = ["ELEVEN_BOT_KEY_FILE": "", "CREDENTIALS_DIRECTORY": ""]
        let initialized = try TestSupport.run(
            bot, ["init", "--state", directory.path + "/state", "--key-file", directory.path + "/bot.key"],
            environment: noKey)
        #expect(initialized.status == 0, "\(initialized.stderr)")
        let next = try #require(
            initialized.stdout.split(separator: "`").map(String.init).first {
                $0.hasPrefix("eleven-bot join")
            })
        let words = next.split(separator: " ").dropFirst().map {
            $0 == "CODE" ? "coral-piano-42" : String($0)
        }
        let relay = "ws://127.0.0.1:\(try TestSupport.freePort())/v1"
        let followed = try TestSupport.run(bot, words + ["--relay", relay], environment: noKey)
        #expect(followed.status == 4, "\(next): \(followed.stderr)")
    }

    @Test(arguments: [
        ("eleven-server", ["--public-url", "notaurl"], "'--public-url'"),
        ("eleven-server", ["--listen", ":4100"], "0.0.0.0:4100"),
        ("eleven-relay", ["--listen", ":4000"], "'--listen'"),
    ])
    func serverAddressesAreChecked(program: String, arguments: [String], says: String) throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try TestSupport.run(
            TestSupport.productPath(program), arguments + ["--db", directory.path + "/db.sqlite"], timeout: 30
        )
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(says), "\(result.stderr)")
    }

    /// `eleven invite show` uses nothing, not even a state directory, and prints the command to
    /// accept with the link itself in it.
    @Test func invitesShowMakesNothingAndPrintsTheRealCommand() async throws {
        try await TestSupport.offPool {
            let server = try ElevenServerUnderTest()
            defer { server.stop() }
            let paul = try ElevenHome("paul")
            #expect(
                try paul.run(["space", "create", "Family", "--server", server.url, "--as", "Paul"]).stdout
                    .contains(
                        "Invite people with: eleven invite"))
            let link = try LinkEndToEndTests.mint(paul, ["--name", "Lee"])
            let lee = try ElevenHome("lee")
            let shown = try lee.run(["invite", "show", link])
            #expect(shown.status == 0, "\(shown.stderr)")
            #expect(shown.stdout.contains("To accept, run: eleven join '\(link)'"), "\(shown.stdout)")
            #expect(!FileManager.default.fileExists(atPath: lee.path))
        }
    }

    /// A home this user may read but not write is reported as not writable. Run as `nobody`
    /// (the tests run as root, whom permissions do not stop) when possible.
    @Test func aReadOnlyHomeIsReportedAsSuch() throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let home = directory.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        chmod(home.path, 0o555)
        let result: ProcessResult
        if getuid() == 0 {
            result = try TestSupport.run(
                "/usr/bin/setpriv",
                ["--reuid=65534", "--regid=65534", "--clear-groups", eleven, "whoami"],
                environment: ["ELEVEN_HOME": home.path])
        } else {
            result = try TestSupport.run(eleven, ["whoami"], environment: ["ELEVEN_HOME": home.path])
        }
        #expect(result.status == 5)
        #expect(result.stderr.contains("can't write in \(home.path)"), "\(result.stderr)")
    }

    /// A write killed between its temporary file and the rename leaves the file behind; the next
    /// command removes it, and leaves a live writer's alone.
    @Test func aKilledWritersTemporaryFileIsRemoved() throws {
        let home = try ElevenHome("paul")
        #expect(try home.run(["whoami"]).status == 0)
        let dead = try ChildProcess("/bin/true", [])
        let deadPID = dead.finish().status == 0 ? dead.pid : 0
        let abandoned = "\(home.path)/.spaces.json.\(deadPID).AbCd-_01.tmp"
        let live = "\(home.path)/.spaces.json.\(getpid()).AbCd-_02.tmp"
        for file in [abandoned, live] {
            FileManager.default.createFile(atPath: file, contents: Data("{".utf8))
        }
        #expect(try home.run(["spaces"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: abandoned))
        #expect(FileManager.default.fileExists(atPath: live))
    }

    /// A damaged home device key says what to do next.
    @Test func aDamagedDeviceKeySaysWhatToDo() throws {
        let home = try ElevenHome("paul")
        #expect(try home.run(["whoami"]).status == 0)
        FileManager.default.createFile(atPath: home.path + "/home-device.key", contents: Data("garbage".utf8))
        let result = try home.run(["signin", "--server", "http://127.0.0.1:\(try TestSupport.freePort())"])
        #expect(result.status == 5)
        #expect(
            result.stderr.contains("home-device.key is damaged. Move it and home.json away"),
            "\(result.stderr)")
    }

    /// `eleven receive` without a code asks for it on the terminal, and Tab completes the words
    /// of a Wormhole code, as `eleven join` does for its codes. A real terminal (`script`), relay
    /// and sender.
    @Test func receiveAsksForTheCodeWithCompletion() async throws {
        try await TestSupport.offPool {
            let relay = try ElevenRelayUnderTest()
            defer { relay.stop() }
            let home = try ElevenHome("sam")
            let receiver = try Self.typeAtPrompt(
                ["receive", "--relay", relay.url, "--timeout", "120s"], home: home,
                prompt: "Enter the Wormhole code (Tab completes words): ",
                keys: [("7-guitar\t", "7-guitarist-"), ("reveng\t", "7-guitarist-revenge-")])
            defer { receiver.stop() }
            try receiver.send(Data([127, 13]))  // Backspace, Enter.
            let sent = try TestSupport.run(
                eleven, ["send", "--text", "hello", "--code", "7-guitarist-revenge", "--relay", relay.url],
                environment: ["ELEVEN_HOME": home.path + "-sender"], timeout: 120)
            #expect(sent.status == 0, "\(sent.stderr)")
            let received = receiver.finish(timeout: 60)
            #expect(received.status == 0, "\(received.stdout)")
            #expect(received.stdout.contains("hello"), "\(received.stdout)")
        }
    }

    /// `eleven device link` without a code asks for it as `eleven join` does, Tab completing its
    /// words; the code typed is then used (here: the relay is not there, exit 4). An empty code
    /// is a usage error, as for join.
    @Test func deviceLinkAsksForTheCode() throws {
        let home = try ElevenHome("phone")
        let relay = "ws://127.0.0.1:\(try TestSupport.freePort())/v1"
        let linker = try Self.typeAtPrompt(
            ["device", "link", "--relay", relay, "--timeout", "30s"], home: home,
            prompt: "Enter the invite code (Tab completes words): ", keys: [("coral-pia\t", "coral-piano-")])
        defer { linker.stop() }
        try linker.send(Data("42\r".utf8))
        let ended = linker.finish(timeout: 60)
        #expect(ended.status == 4, "\(ended.stdout)")
        let empty = try home.run(["device", "link", "", "--relay", relay])
        #expect(empty.status == 2 && empty.stderr.contains("no code was given"), "\(empty.stderr)")
    }

    /// `eleven ARGUMENTS` on a real terminal (`script`): waits for `prompt`, then types each of
    /// `keys` and waits for what the line shows after it. Keys typed before the prompt would be
    /// flushed as the terminal goes raw, hence the waits.
    static func typeAtPrompt(
        _ arguments: [String], home: ElevenHome, prompt: String, keys: [(typed: String, shows: String)]
    ) throws -> ChildProcess {
        let command = ([eleven] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let child = try ChildProcess(
            "/usr/bin/script", ["-qec", command, "/dev/null"], environment: ["ELEVEN_HOME": home.path],
            input: .open)
        try child.waitFor(prompt, timeout: 60)
        for (typed, shows) in keys {
            try child.send(Data(typed.utf8))
            try child.waitFor(shows, timeout: 30)
        }
        return child
    }
}
