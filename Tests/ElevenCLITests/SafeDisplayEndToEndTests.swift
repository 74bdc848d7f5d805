import Foundation
import TestSupport
import Testing

/// What a terminal shows is what was sent: text from others (messages, names, thread names)
/// cannot act on the terminal or pose as another sender, and two members called Paul are told
/// apart. `--json` keeps the text as sent.
@Suite(.serialized) struct SafeDisplayEndToEndTests {
    static let hostile =
        "\u{1B}]0;owned\u{07}\u{1B}[31mred\u{1B}[0m\rover\nPaul: please send me your recovery file\u{202E}cba"

    /// Bytes a terminal acts on: ESC, BEL, CR, and U+202E (E2 80 AE).
    static func expectInert(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let bytes = Array(text.utf8)
        #expect(
            !bytes.contains(0x1B) && !bytes.contains(0x07) && !bytes.contains(0x0D),
            sourceLocation: sourceLocation)
        #expect(!text.contains("\u{202E}"), sourceLocation: sourceLocation)
    }

    @Test func othersTextCannotActOnTheTerminalOrPoseAsPaul() async throws {
        try await TestSupport.offPool {
            let server = try LinkEndToEndTests.LoggedServer()
            defer { server.stop() }
            let paul = try LinkEndToEndTests.paul(server)
            let link = try LinkEndToEndTests.mint(paul, [])
            let other = try ElevenHome("other")
            let joined = try LinkEndToEndTests.join(other, link, ["--yes", "--name", "Paul"])
            #expect(joined.status == 0, "\(joined.stderr)")
            #expect(try other.run(["send", Self.hostile]).status == 0)
            #expect(try other.run(["thread", "create", "\u{1B}[2Jwiped\nPaul: x"]).status == 0)

            let read = try paul.run(["read"])
            #expect(read.status == 0, "\(read.stderr)")
            Self.expectInert(read.stdout)
            let lines = read.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(lines.first == "Paul (owner): Welcome to Family", "\(lines)")
            #expect(lines.count == 4, "\(lines)")
            // The other Paul: a mark from the key, escapes shown, the second line indented.
            let label = lines.count > 1 ? String(lines[1].prefix { $0 != ":" }) : ""
            #expect(
                label.hasPrefix("Paul (") && label.hasSuffix(")") && label.count == "Paul (3f9a)".count,
                "\(lines)")
            #expect(
                lines.count > 2
                    && lines[1] == "\(label): \\x1B]0;owned\\x07\\x1B[31mred\\x1B[0m\\x0Dover"
                    && lines[2] == String(repeating: " ", count: label.count + 2)
                        + "Paul: please send me your recovery file\\u{202E}cba",
                "\(lines)")
            #expect(!lines.contains { $0.hasPrefix("Paul:") })

            // The other Paul reads the same names.
            let theirs = try other.run(["read"]).stdout
            Self.expectInert(theirs)
            #expect(theirs.hasPrefix("Paul (owner): Welcome to Family\n\(label): "), "\(theirs)")

            let members = try paul.run(["members"]).stdout
            Self.expectInert(members)
            #expect(members.contains("  Paul (owner) (you)  "), "\(members)")
            #expect(members.contains("  \(label)  "), "\(members)")

            let threads = try paul.run(["threads"]).stdout
            Self.expectInert(threads)
            #expect(threads.contains("  \\x1B[2Jwiped\\x0APaul: x\n"), "\(threads)")
            #expect(!threads.split(separator: "\n").contains { $0.hasPrefix("Paul:") })

            // JSON keeps the text exactly as sent.
            let json = try paul.jsonLines(["read", "--json"])
            #expect(json.last?["text"] as? String == Self.hostile)
        }
    }

    /// A joiner's name with a newline and an escape, as the inviter attending the join sees it
    /// (the space refuses such a member name, but the inviter sees it first, from the joiner).
    @Test func joinersNameStaysOnItsLine() async throws {
        try await JoinScenariosCLI.withServerAndRelay { server, relay in
            let w = try JoinScenariosCLI.makeWorld(relayURL: relay.url, server: server)
            let invite = try w.background(w.paul, ["invite", "--short", "--yes"])
            let code = try invite.value(afterPrefix: "Invite code:")
            let eve = try ElevenHome("eve")
            // Unchanged by the capitalising of a name taken from the environment.
            let name = "Eve\nPaul: Send Me Your Recovery File\u{1B}"
            // `eleven join --name` refuses such a name before any traffic (ExitStatusWalkTests); the
            // name taken from the environment when none is given still reaches the inviter, as a
            // hostile client's would.
            let joined = try eve.run(["join", code], environment: ["ELEVEN_RELAY": relay.url, "USER": name])
            #expect(
                joined.stderr.contains("A member name cannot contain control characters."), "\(joined.stderr)"
            )
            let paulSaw = invite.finish(timeout: 20)
            Self.expectInert(paulSaw.stdout + paulSaw.stderr)
            #expect(
                paulSaw.stdout.contains("Eve\\x0APaul: Send Me Your Recovery File\\x1B proved the code"),
                "\(paulSaw.stdout)")
            #expect(!paulSaw.stdout.split(separator: "\n").contains { $0.hasPrefix("Paul:") })
        }
    }
}
