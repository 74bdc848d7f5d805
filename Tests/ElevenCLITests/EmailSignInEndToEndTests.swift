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
            let child = try ChildProcess(
                eleven,
                ["signin", "--server", home.url, "--email", address.uppercased(), "--label", label],
                environment: ["ELEVEN_HOME": device.path, "ELEVEN_SPACE": ""], input: .open)
            try child.waitFor("We sent a 6-digit code to")
            let code = try mail.code(to: address, number: number)
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
        }
    }
}
