import Foundation
import TestSupport
import Testing

/// Signing in with an email address on several devices, with the real programs: a space server,
/// a home server that mails codes through a real SMTP server (aiosmtpd), and `eleven` as the
/// devices of one person. Nobody types a device code.
@Suite(.serialized) struct EmailSignInEndToEndTests {
    struct World {
        let mail: MailServerUnderTest
        let spaces: ElevenServerUnderTest
        let home: HomeServerUnderTest
        let address = "paul@example.test"

        /// `eleven signin --email` on `device`, in the background; types `wrong` first if given,
        /// then the code from message `number` to the address.
        func signIn(_ device: ElevenHome, label: String, number: Int, wrong: String? = nil) throws
            -> ChildProcess
        {
            try withCode(
                device, ["signin", "--server", home.url, "--email", address.uppercased(), "--label", label],
                to: address, number: number, wrong: wrong)
        }

        /// Runs `eleven ARGUMENTS` on `device` in the background and, once it says it sent a code,
        /// types `wrong` first if given, then the code from message `number` to `recipient`.
        func withCode(
            _ device: ElevenHome, _ arguments: [String], to recipient: String, number: Int,
            wrong: String? = nil
        ) throws -> ChildProcess {
            let child = try ChildProcess(
                eleven, arguments, environment: ["ELEVEN_HOME": device.path, "ELEVEN_SPACE": ""], input: .open
            )
            try child.waitFor("We sent a 6-digit code to")
            let code = try mail.code(to: recipient, number: number)
            if let wrong {
                try child.send(line: wrong)
                try child.waitFor("That code is not right; 4 more tries", in: .stderr)
            }
            try child.send(line: code)
            return child
        }

        /// `eleven devices approve` on `device`, answering `answer` once it asks; returns the
        /// words it showed and the result.
        func approve(_ device: ElevenHome, _ answer: String) throws -> (String, ProcessResult) {
            let child = try ChildProcess(
                eleven, ["devices", "approve"],
                environment: ["ELEVEN_HOME": device.path, "ELEVEN_SPACE": ""],
                input: .open)
            let words = try child.value(afterPrefix: "Verification words:")
            try child.waitFor("? [y/N]", in: .stderr)
            try child.send(line: answer)
            return (words, child.finish(timeout: 60))
        }

        func names(_ device: ElevenHome) throws -> [String] {
            let listed = try device.json(["spaces", "--json"])
            return (listed["spaces"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        }
    }

    static func world() throws -> World {
        let mail = try MailServerUnderTest()
        return World(
            mail: mail, spaces: try ElevenServerUnderTest(),
            home: try HomeServerUnderTest(extra: ["--smtp", mail.address, "--smtp-security", "none"]))
    }

    /// The three words of a "Verification words: …" line (before the parenthesis).
    static func words(_ line: some StringProtocol) -> String {
        String(line.prefix { $0 != "(" }).replacingOccurrences(of: "Verification words:", with: "")
            .trimmingCharacters(in: .whitespaces)
    }

    @Test func anotherDeviceFindsTheAccountAndIsApprovedWithoutACode() async throws {
        try await TestSupport.offPool {
            let w = try Self.world()
            defer { w.home.stop() }
            let a = try ElevenHome("a")
            for name in ["Family", "Work"] {
                #expect(
                    try a.run(["space", "create", name, "--server", w.spaces.url, "--as", "Paul"]).status == 0
                )
                #expect(try a.run(["send", "--space", name, "hello", name]).status == 0)
            }
            // A: the first sign-in with the address makes the account (a wrong code first).
            var codes: [String] = []
            let first = try w.signIn(a, label: "laptop", number: 1, wrong: "000000")
            let signedIn = first.finish(timeout: 60)
            #expect(signedIn.status == 0, "\(signedIn.stdout) \(signedIn.stderr)")
            #expect(signedIn.stdout.contains("Signed in. Your 2 spaces are saved"))
            codes.append(try w.mail.code(to: w.address, number: 1))

            // B: the same address finds that account; A approves after both show the same words.
            let b = try ElevenHome("b")
            let waiting = try w.signIn(b, label: "phone", number: 2)
            try waiting.waitFor("run `eleven devices approve`")
            codes.append(try w.mail.code(to: w.address, number: 2))
            let listed = try a.json(["devices", "--json"])
            #expect((listed["waiting"] as? [Any])?.count == 1, "\(listed)")
            let (approverWords, approved) = try w.approve(a, "y")
            #expect(approved.status == 0, "\(approved.stdout) \(approved.stderr)")
            #expect(approved.stdout.contains("Approved phone."))
            let joined = waiting.finish(timeout: 60)
            #expect(joined.status == 0, "\(joined.stdout) \(joined.stderr)")
            #expect(joined.stdout.contains("This device is signed in. Your 2 spaces: Family, Work."))
            let newWords = joined.stdout.split(separator: "\n").first { $0.hasPrefix("Verification words:") }
            #expect(Self.words(approverWords).split(separator: " ").count == 3)
            #expect(
                newWords.map(Self.words) == Self.words(approverWords), "\(approverWords) vs \(joined.stdout)")
            for name in ["Family", "Work"] {
                #expect(try b.run(["read", "--space", name]).stdout == "Paul: hello \(name)\n")
            }

            // A is gone; B alone lets C in the same way.
            try FileManager.default.removeItem(atPath: a.path)
            let c = try ElevenHome("c")
            let third = try w.signIn(c, label: "slate-pc", number: 3)
            try third.waitFor("run `eleven devices approve`")
            codes.append(try w.mail.code(to: w.address, number: 3))
            #expect(try w.approve(b, "y").1.status == 0)
            #expect(third.finish(timeout: 60).status == 0)
            #expect(try w.names(c) == ["Family", "Work"])
            #expect(try c.run(["read", "--space", "Work"]).stdout == "Paul: hello Work\n")

            // D is declined: it gets nothing and is not signed in.
            let d = try ElevenHome("d")
            let fourth = try w.signIn(d, label: "stranger", number: 4)
            try fourth.waitFor("run `eleven devices approve`")
            codes.append(try w.mail.code(to: w.address, number: 4))
            let (_, declined) = try w.approve(c, "n")
            #expect(declined.status == 6, "\(declined.stdout) \(declined.stderr)")
            let refused = fourth.finish(timeout: 60)
            #expect(refused.status == 6, "\(refused.stdout) \(refused.stderr)")
            #expect(refused.stderr.contains("said no"))
            #expect(try w.names(d).isEmpty)
            #expect(try d.run(["sync"]).status == 5)
            let devices = try c.json(["devices", "--json"])["devices"] as? [[String: Any]] ?? []
            #expect(Set(devices.compactMap { $0["label"] as? String }) == ["laptop", "phone", "slate-pc"])

            // The home server's database and log hold no address, no name (names that no SQL
            // keyword contains: "tablet" is in "CREATE TABLE threads"); the log no code (the
            // database has no place for one: codes live in the server's memory only).
            w.home.stop()
            var stored = Data()
            for suffix in ["", "-wal", "-shm"] {
                stored += FileManager.default.contents(atPath: w.home.databasePath + suffix) ?? Data()
            }
            let text = (String(decoding: stored, as: UTF8.self) + w.home.logs).lowercased()
            #expect(w.home.logs.contains("email_code_sent"))
            let kept = ["paul@", "example.test", "laptop", "phone", "slate-pc", "stranger"].filter(
                text.contains)
            #expect(kept.isEmpty, "the server kept \(kept)")
            #expect(codes.filter(w.home.logs.contains).isEmpty, "the log has a code")
        }
    }

    /// Creating a space suggests signing in with an address, once; joining never does, nor does
    /// creating on a device that is signed in.
    @Test func creatingASpaceNudgesOnceAndJoiningNever() async throws {
        try await TestSupport.offPool {
            let w = try Self.world()
            defer { w.home.stop() }
            let nudge = "Keep this space safe: save it to Eleven"
            let paul = try ElevenHome("paul")
            let first = try paul.run(["space", "create", "Family", "--server", w.spaces.url, "--as", "Paul"])
            #expect(first.status == 0 && first.stderr.contains(nudge), "\(first.stderr)")
            #expect(!first.stdout.contains(nudge))
            let second = try paul.run(["space", "create", "Work", "--server", w.spaces.url, "--as", "Paul"])
            #expect(second.status == 0 && !second.stderr.contains(nudge), "\(second.stderr)")

            let minted = try paul.run(["invite", "--json", "--name", "Lee", "--space", "Family"])
            let object = try JSONSerialization.jsonObject(with: Data(minted.stdout.utf8)) as? [String: Any]
            let lee = try ElevenHome("lee")
            let joined = try LinkEndToEndTests.join(lee, try #require(object?["link"] as? String), ["--yes"])
            #expect(joined.status == 0 && !joined.stderr.contains(nudge), "\(joined.stderr)")

            let sam = try ElevenHome("sam")
            let signedIn = try sam.run(["signin", "--server", w.home.url])
            #expect(signedIn.status == 0, "\(signedIn.stderr)")
            let created = try sam.run(["space", "create", "Club", "--server", w.spaces.url, "--as", "Sam"])
            #expect(created.status == 0 && !created.stderr.contains(nudge), "\(created.stderr)")

            // Signed in without a way back in: creating a space offers a recovery file, once, as a
            // line (nothing is asked; the command needs no answer and succeeds).
            let offer = "Keep this space safe if you lose every device: `eleven recovery add --file PATH`"
            #expect(created.stderr.contains(offer), "\(created.stderr)")
            let again = try sam.run(["space", "create", "Chess", "--server", w.spaces.url, "--as", "Sam"])
            #expect(again.status == 0 && !again.stderr.contains(offer), "\(again.stderr)")

            // Joining on a signed-in device offers it too, once; never in --json output; never on
            // a device whose account already has a way back in.
            let kim = try ElevenHome("kim")
            #expect(try kim.run(["signin", "--server", w.home.url]).status == 0)
            func link(_ space: String) throws -> String {
                let minted = try paul.run(["invite", "--json", "--name", "Kim", "--space", space])
                let object =
                    try JSONSerialization.jsonObject(with: Data(minted.stdout.utf8)) as? [String: Any]
                return try #require(object?["link"] as? String)
            }
            let quiet = try LinkEndToEndTests.join(kim, try link("Family"), ["--yes", "--json"])
            #expect(quiet.status == 0 && !quiet.stderr.contains(offer), "\(quiet.stderr)")
            let kimJoined = try LinkEndToEndTests.join(kim, try link("Work"), ["--yes"])
            #expect(kimJoined.status == 0 && kimJoined.stderr.contains(offer), "\(kimJoined.stderr)")

            let ann = try ElevenHome("ann")
            #expect(try ann.run(["signin", "--server", w.home.url]).status == 0)
            let file = ann.path + "-way-back.json"
            let added = try ann.run(["recovery", "add", "--file", file])
            let plainly = "Anyone holding this file can open your spaces, with no password."
            #expect(added.status == 0 && added.stdout.contains(plainly), "\(added.stdout)")
            #expect(added.stdout.contains("eleven recovery remove"))
            let annCreated = try ann.run([
                "space", "create", "Books", "--server", w.spaces.url, "--as", "Ann",
            ])
            #expect(annCreated.status == 0 && !annCreated.stderr.contains(offer), "\(annCreated.stderr)")
        }
    }

    /// A running `eleven sync --watch` on a signed-in device notices a new device that signed in
    /// with the address: on a terminal it shows the words and asks; with no terminal (a script, a
    /// service) it says how to approve and asks nothing.
    @Test func aWatchingSyncAsksAboutANewDeviceOnATerminal() async throws {
        try await TestSupport.offPool {
            let w = try Self.world()
            defer { w.home.stop() }
            let a = try ElevenHome("a")
            #expect(
                try a.run(["space", "create", "Family", "--server", w.spaces.url, "--as", "Paul"]).status == 0
            )
            #expect(try a.run(["send", "--space", "Family", "hello"]).status == 0)
            #expect(try w.signIn(a, label: "laptop", number: 1).finish(timeout: 60).status == 0)

            let (program, arguments) = TestSupport.onTerminal(eleven, ["sync", "--watch"])
            let watch = try ChildProcess(
                program, arguments, environment: ["ELEVEN_HOME": a.path, "ELEVEN_SPACE": ""], input: .open)
            defer { _ = watch.stop() }
            try watch.waitFor("Watching for changes and new devices")
            let b = try ElevenHome("b")
            let waiting = try w.signIn(b, label: "phone", number: 2)
            try watch.waitFor("Approve phone? [y/N]", timeout: 60)
            let shown = watch.stdout.split(whereSeparator: \.isNewline).first {
                $0.hasPrefix("Verification words:")
            }
            try watch.send(line: "y")
            try watch.waitFor("Approved phone. It has your spaces now.", timeout: 60)
            let joined = waiting.finish(timeout: 60)
            #expect(joined.status == 0, "\(joined.stdout) \(joined.stderr)")
            let newWords = joined.stdout.split(separator: "\n").first { $0.hasPrefix("Verification words:") }
            #expect(
                shown.map(Self.words) != nil && shown.map(Self.words) == newWords.map(Self.words),
                "\(watch.stdout)")
            #expect(try b.run(["read", "--space", "Family"]).stdout == "Paul: hello\n")
            // The watch keeps running after an approval.
            #expect(watch.isRunning)

            // No terminal: the watch says how to approve and leaves the new device waiting.
            let plain = try ChildProcess(
                eleven, ["sync", "--watch"], environment: ["ELEVEN_HOME": a.path, "ELEVEN_SPACE": ""],
                input: .open)
            defer { _ = plain.stop() }
            try plain.waitFor("Watching for changes and new devices")
            _ = watch.stop()
            let c = try ElevenHome("c")
            let third = try w.signIn(c, label: "slate-pc", number: 3)
            defer { _ = third.stop() }
            try plain.waitFor("To approve it, run `eleven devices approve", timeout: 60)
            #expect(!plain.log.contains("[y/N]"))
            #expect(plain.isRunning && third.isRunning)
            #expect(try w.names(c).isEmpty)
        }
    }

    /// On a terminal, `eleven signin` without --email asks for the address; a signed-in person
    /// adds a second address (another device then finds the account with it) and removes it again
    /// (then it finds nothing).
    @Test func aPersonIsAskedForTheAddressAndAddsAndRemovesAddresses() async throws {
        try await TestSupport.offPool {
            let w = try Self.world()
            defer { w.home.stop() }
            let a = try ElevenHome("a")
            let (program, arguments) = TestSupport.onTerminal(
                eleven, ["signin", "--server", w.home.url, "--label", "laptop"])
            let asked = try ChildProcess(
                program, arguments, environment: ["ELEVEN_HOME": a.path, "ELEVEN_SPACE": ""], input: .open)
            try asked.waitFor("Your email address")
            try asked.send(line: w.address)
            try asked.waitFor("We sent a 6-digit code to \(w.address)")
            try asked.send(line: try w.mail.code(to: w.address, number: 1))
            let first = asked.finish(timeout: 60)
            #expect(first.status == 0 && first.stdout.contains("Signed in."), "\(first.stdout)")

            // Without a terminal nothing is asked: the account is made without an address.
            let quiet = try ElevenHome("quiet")
            let plain = try quiet.run(["signin", "--server", w.home.url])
            #expect(plain.status == 0 && !plain.stdout.contains("email address"), "\(plain.stdout)")

            let second = "paul.work@example.test"
            let added = try w.withCode(a, ["signin", "--email", second], to: second, number: 1).finish(
                timeout: 60)
            #expect(added.status == 0, "\(added.stdout) \(added.stderr)")
            #expect(added.stdout.contains("You can now sign in with \(second) on your other devices."))

            // Another device with the second address finds the account (it waits for approval).
            let b = try ElevenHome("b")
            let found = try w.withCode(
                b, ["signin", "--server", w.home.url, "--email", second, "--label", "phone"], to: second,
                number: 2)
            try found.waitFor("This address already has an account", timeout: 60)
            _ = found.stop()

            let removed = try a.run(["signin", "--remove-email", second])
            #expect(removed.status == 0 && removed.stdout.contains("You no longer sign in with \(second)."))
            let again = try a.run(["signin", "--remove-email", second])
            #expect(again.status == 0 && again.stdout.contains("nothing changed"), "\(again.stdout)")

            // Now the address finds nothing: a device signing in with it makes a new account.
            let c = try ElevenHome("c")
            let made = try w.withCode(
                c, ["signin", "--server", w.home.url, "--email", second, "--label", "other"], to: second,
                number: 3
            ).finish(timeout: 60)
            #expect(made.status == 0 && made.stdout.contains("Signed in."), "\(made.stdout) \(made.stderr)")
            // The first address still finds Paul's account.
            let d = try ElevenHome("d")
            let still = try w.signIn(d, label: "tablet", number: 2)
            defer { _ = still.stop() }
            try still.waitFor("This address already has an account", timeout: 60)
        }
    }
}
