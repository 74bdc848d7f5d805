import Foundation
import TestSupport
import Testing

/// `eleven send` / `eleven receive` against the stock Python `wormhole` CLI (PyPI magic-wormhole)
/// through a real relay. The scenarios take the relay as a parameter; here they run against the
/// reference mailbox server.
enum WormholeScenarios {
    static let unicodeText = "héllo wörld — 日本語 🎉 Ωμέγα café"
    /// ~100 KiB of printable ASCII (Python's receiver prints text through `repr`, so the
    /// eleven → Python direction avoids characters it would escape).
    static func largeText(seed: Int) -> String {
        var generator = SplitMix64(seed: UInt64(seed))
        let letters = Array("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?-")
        return String((0..<(100 * 1024)).map { _ in letters[Int(generator.next() % UInt64(letters.count))] })
    }

    static func randomCode() -> String {
        let words = ["coral", "piano", "aztec", "revenge", "guitarist", "ribcage", "tissue", "yucatan"]
        return "\(Int.random(in: 100...999))-"
            + (0..<3).map { _ in words.randomElement()! }.joined(separator: "-")
    }

    /// eleven sends (allocated codes and a given one, --text and stdin); Python receives.
    static func elevenSendsToWormhole(_ h: WormholeHarness) throws {
        var cases: [(arguments: [String], stdin: Data?, text: String)] = [
            (["--text", "hello from eleven"], nil, "hello from eleven"),
            (["--text", unicodeText, "--code-length", "3"], nil, unicodeText),
            (["--text", largeText(seed: 1)], nil, largeText(seed: 1)),
            ([], Data("piped into eleven send".utf8), "piped into eleven send"),
        ]
        let given = randomCode()
        cases.append((["--text", "with a chosen code", "--code", given], nil, "with a chosen code"))
        var codes = Set<String>()
        for c in cases {
            let (sender, code) = try h.startElevenSend(c.arguments, stdin: c.stdin)
            codes.insert(code)
            let received = try h.wormholeReceive(code)
            let sent = sender.finish()
            #expect(received.status == 0, "wormhole receive: \(received.stderr)")
            #expect(received.stdout == c.text + "\n", "text of \(c.text.utf8.count) bytes")
            #expect(sent.status == 0, "eleven send: \(sent.stderr)")
            #expect(sent.stderr.contains("text message sent"))
            let words = code.split(separator: "-")
            #expect(words.count >= 3 && words[0].allSatisfy(\.isNumber), "code \(code)")
        }
        #expect(codes.contains(given))
        #expect(codes.count == cases.count)
    }

    /// Python sends; eleven prints the text byte for byte (quotes, backslashes, newlines,
    /// combining characters, 100 KiB through `--text -`).
    static func wormholeSendsToEleven(_ h: WormholeHarness) throws {
        let tricky = "line one\nline 'two' \"three\" \\ four\n\ttabbed, cafe\u{301}, 🎉\n"
        let large = largeText(seed: 2) + "\nand a last line"
        let cases: [(arguments: [String], stdin: Data?, text: String)] = [
            (["--text", tricky], nil, tricky),
            (["--text", unicodeText, "--code-length", "4"], nil, unicodeText),
            (["--text", "-"], Data(large.utf8), large),
        ]
        for c in cases {
            let (sender, code) = try h.startWormholeSend(c.arguments, stdin: c.stdin)
            let received = try h.elevenReceive([code])
            let sent = sender.finish()
            #expect(received.status == 0, "eleven receive: \(received.stderr)")
            #expect(Array(received.stdout.utf8) == Array(c.text.utf8), "text of \(c.text.utf8.count) bytes")
            #expect(sent.status == 0, "wormhole send: \(sent.stderr)")
            #expect(sent.stderr.contains("text message sent"))
        }
    }

    /// A wrong code on each side: eleven exits with codeRejected (3) and says so; Python fails too.
    static func wrongCodes(_ h: WormholeHarness) throws {
        let (sender, code) = try h.startElevenSend(["--text", "never shown"])
        let pythonWrong = try h.wormholeReceive(code + "x")
        let elevenSide = sender.finish()
        #expect(pythonWrong.status != 0)
        #expect(!pythonWrong.stdout.contains("never shown"))
        #expect(pythonWrong.stderr.contains("Key confirmation failed"), "\(pythonWrong.stderr)")
        #expect(elevenSide.status == 3, "\(elevenSide.stderr)")
        #expect(elevenSide.stderr.contains("the code didn't match (or someone interfered); nothing was sent"))

        let (pySender, pyCode) = try h.startWormholeSend(["--text", "never shown either"])
        let elevenWrong = try h.elevenReceive([pyCode + "x", "--json"])
        let pySide = pySender.finish()
        #expect(elevenWrong.status == 3, "\(elevenWrong.stderr)")
        #expect(elevenWrong.stdout.contains(#""error":"code_mismatch""#), "\(elevenWrong.stdout)")
        #expect(!elevenWrong.stdout.contains("never shown"))
        #expect(pySide.status != 0)
        #expect(pySide.stderr.contains("Key confirmation failed"), "\(pySide.stderr)")
    }

    /// `wormhole send FILE`: eleven refuses through the protocol, both ends say why, nobody hangs.
    static func fileOfferIsRefused(_ h: WormholeHarness) throws {
        let file = h.home.appendingPathComponent("offered.txt")
        try Data("file contents".utf8).write(to: file)
        let (sender, code) = try h.startWormholeSend([file.path])
        let received = try h.elevenReceive([code])
        let sent = sender.finish(timeout: 30)
        #expect(received.status == 6, "\(received.stderr)")
        #expect(received.stderr.contains("offered a file; eleven only receives text (ask them for --text)"))
        #expect(received.stdout.isEmpty)
        #expect(!sent.timedOut)
        #expect(sent.status != 0)
        #expect(sent.stderr.contains("not supported; ask for --text"), "\(sent.stderr)")
    }

    /// Both sides ask with --verify; they show the same 64-hex verifier and the text goes through.
    static func verifiersMatch(_ h: WormholeHarness) throws {
        let (sender, code) = try h.startWormholeSend(
            ["--text", "verified", "--verify"], stdin: Data("yes\n".utf8))
        let received = try h.elevenReceive([code, "--verify"], stdin: Data("yes\n".utf8))
        let sent = sender.finish()
        #expect(received.status == 0, "\(received.stderr)")
        #expect(received.stdout == "verified")
        let ours = try #require(verifier(in: received.stderr))
        let theirs = try #require(verifier(in: sent.stdout + sent.stderr))
        #expect(ours == theirs)
        #expect(ours.count == 64)

        // Saying no sends nothing back but a refusal; the sender is told.
        let (sender2, code2) = try h.startWormholeSend(["--text", "not accepted"])
        let refused = try h.elevenReceive([code2, "--verify"], stdin: Data("no\n".utf8))
        let sent2 = sender2.finish()
        #expect(refused.status == 6, "\(refused.stderr)")
        #expect(refused.stdout.isEmpty)
        #expect(sent2.status != 0)
        #expect(sent2.stderr.contains("verification rejected"), "\(sent2.stderr)")
    }

    static func verifier(in text: String) -> String? {
        guard let range = text.range(of: "Verifier ") else { return nil }
        let hex = text[range.upperBound...].prefix { $0.isHexDigit }
        return hex.isEmpty ? nil : String(hex)
    }

    /// The relay stops (by pid) right after eleven shows its code and comes back on the same port
    /// and database; eleven reconnects by itself and the transfer completes.
    static func relayRestartWhileElevenWaits(_ h: WormholeHarness, relay: any WormholeTestRelay) throws {
        let (sender, code) = try h.startElevenSend(["--text", "survived a restart"])
        try relay.restart()
        let received = try h.wormholeReceive(code)
        let sent = sender.finish()
        #expect(received.status == 0, "\(received.stderr)")
        #expect(received.stdout == "survived a restart\n")
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stderr.contains("reconnecting"), "\(sent.stderr)")
    }

    /// The same with Python waiting: eleven arrives after the restart and finds Python's key
    /// exchange message, which the relay kept in its database.
    static func relayRestartWhileWormholeWaits(_ h: WormholeHarness, relay: any WormholeTestRelay) throws {
        let (sender, code) = try h.startWormholeSend(["--text", "python survived too"])
        try relay.restart()
        let received = try h.elevenReceive([code])
        let sent = sender.finish()
        #expect(received.status == 0, "\(received.stderr)")
        #expect(received.stdout == "python survived too")
        #expect(sent.status == 0, "\(sent.stderr)")
    }

    /// A restart in the middle of a transfer, both clients connected: the keys are agreed and the
    /// Python sender is holding its offer (waiting for its --verify answer). Both reconnect, the
    /// offer and the answer cross the new relay process.
    static func relayRestartMidTransfer(_ h: WormholeHarness, relay: any WormholeTestRelay) throws {
        let (sender, code) = try h.startWormholeSend(
            ["--text", "mid-transfer", "--verify"], input: .open)
        let receiver = try h.startElevenReceive([code])
        _ = try sender.value(afterPrefix: "Verifier")
        try relay.restart()
        try sender.send(Data("yes\n".utf8))
        sender.closeInput()
        let received = receiver.finish()
        let sent = sender.finish()
        #expect(received.status == 0, "\(received.stderr)")
        #expect(received.stdout == "mid-transfer")
        #expect(received.stderr.contains("reconnecting"), "\(received.stderr)")
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stderr.contains("text message sent"))
    }

    /// eleven to eleven, the stdin path with exact bytes, and --json output.
    static func elevenToEleven(_ h: WormholeHarness) throws {
        let text = "two lines\nexactly, with a final newline\n"
        let (sender, code) = try h.startElevenSend([], stdin: Data(text.utf8))
        let received = try h.elevenReceive([code])
        #expect(sender.finish().status == 0)
        #expect(received.status == 0, "\(received.stderr)")
        #expect(Array(received.stdout.utf8) == Array(text.utf8))

        let json = try ChildProcess(
            WormholeHarness.eleven, ["send", "--relay", h.relayURL, "--text", "j", "--json"])
        let line = try json.value(afterPrefix: "{")
        let object = try JSONSerialization.jsonObject(with: Data(("{" + line).utf8)) as? [String: String]
        let jsonCode = try #require(object?["code"])
        let jsonReceived = try h.elevenReceive([jsonCode, "--json"])
        let sentLines = json.finish().stdout.split(separator: "\n")
        let sent =
            try JSONSerialization.jsonObject(with: Data(try #require(sentLines.last).utf8))
            as? [String: String]
        let got = try JSONSerialization.jsonObject(with: Data(jsonReceived.stdout.utf8)) as? [String: String]
        #expect(sent?["event"] == "sent")
        #expect(got?["event"] == "received" && got?["text"] == "j")
        #expect(got?["verifier"]?.count == 64 && got?["verifier"] == sent?["verifier"])
    }
}

@Suite struct WormholeInteropTests {
    static let interop = !TestSupport.interopSkipped

    /// The relays every scenario runs through: the reference mailbox server and ours.
    enum RelayKind: String, CaseIterable, Sendable {
        case reference, eleven
    }

    /// Runs `body` off the cooperative pool with a relay of `kind` and a fresh Python HOME,
    /// stopping both after.
    func withRelay(
        _ kind: RelayKind, _ body: @escaping @Sendable (WormholeHarness, any WormholeTestRelay) throws -> Void
    ) async throws {
        try await TestSupport.offPool {
            #expect(
                FileManager.default.isExecutableFile(atPath: WormholeHarness.wormhole),
                "no wormhole CLI at \(WormholeHarness.wormhole): set ELEVEN_TEST_PYTHON (or ELEVEN_SKIP_INTEROP=1)"
            )
            let relay: any WormholeTestRelay =
                kind == .reference ? try ReferenceMailboxRelay() : try ElevenRelayUnderTest()
            defer { relay.stop() }
            let home = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: home) }
            try body(WormholeHarness(relayURL: relay.url, home: home), relay)
        }
    }

    @Test func theElevenBinaryIsFound() {
        let path = WormholeHarness.eleven
        #expect(FileManager.default.isExecutableFile(atPath: path), "eleven not built at \(path)")
        #expect(path.hasSuffix("/debug/eleven") || path.hasSuffix("/release/eleven"), "\(path)")
    }

    @Test(.enabled(if: interop), arguments: RelayKind.allCases) func elevenSendsToWormhole(relay: RelayKind)
        async throws
    {
        try await withRelay(relay) { h, _ in try WormholeScenarios.elevenSendsToWormhole(h) }
    }

    @Test(.enabled(if: interop), arguments: RelayKind.allCases) func wormholeSendsToEleven(relay: RelayKind)
        async throws
    {
        try await withRelay(relay) { h, _ in try WormholeScenarios.wormholeSendsToEleven(h) }
    }

    @Test(.enabled(if: interop), arguments: RelayKind.allCases) func wrongCodes(relay: RelayKind) async throws
    {
        try await withRelay(relay) { h, _ in try WormholeScenarios.wrongCodes(h) }
    }

    @Test(.enabled(if: interop), arguments: RelayKind.allCases) func fileOfferIsRefused(relay: RelayKind)
        async throws
    {
        try await withRelay(relay) { h, _ in try WormholeScenarios.fileOfferIsRefused(h) }
    }

    @Test(.enabled(if: interop), arguments: RelayKind.allCases) func verifiersMatch(relay: RelayKind)
        async throws
    {
        try await withRelay(relay) { h, _ in try WormholeScenarios.verifiersMatch(h) }
    }

    @Test(.enabled(if: interop), arguments: RelayKind.allCases) func relayRestartWhileElevenWaits(
        relay: RelayKind
    ) async throws {
        try await withRelay(relay) { h, r in
            try WormholeScenarios.relayRestartWhileElevenWaits(h, relay: r)
        }
    }

    @Test(.enabled(if: interop), arguments: RelayKind.allCases) func relayRestartWhileWormholeWaits(
        relay: RelayKind
    ) async throws {
        try await withRelay(relay) { h, r in
            try WormholeScenarios.relayRestartWhileWormholeWaits(h, relay: r)
        }
    }

    @Test(.enabled(if: interop), arguments: RelayKind.allCases) func relayRestartMidTransfer(relay: RelayKind)
        async throws
    {
        try await withRelay(relay) { h, r in try WormholeScenarios.relayRestartMidTransfer(h, relay: r) }
    }

    @Test(.enabled(if: interop), arguments: RelayKind.allCases) func elevenToEleven(relay: RelayKind)
        async throws
    {
        try await withRelay(relay) { h, _ in try WormholeScenarios.elevenToEleven(h) }
    }
}

/// Failures that need no relay at all.
@Suite struct WormholeCommandErrorTests {
    let eleven = WormholeHarness.eleven

    @Test func unreachableRelayIsUnavailable() throws {
        let port = try TestSupport.freePort()
        let result = try TestSupport.run(
            eleven, ["send", "--text", "x", "--relay", "ws://127.0.0.1:\(port)/v1"], timeout: 30)
        #expect(result.status == 4)
        #expect(result.stderr.contains("can't reach the relay at ws://127.0.0.1:\(port)/v1"))
        let receive = try TestSupport.run(
            eleven, ["receive", "7-a-b", "--relay", "ws://127.0.0.1:\(port)/v1", "--json"], timeout: 30)
        #expect(receive.status == 4)
        #expect(receive.stdout.contains(#""error":"relay_unreachable""#))
    }

    /// A receiver whose sender has not come yet says what it waits for (before: nothing).
    @Test func receiverSaysWhatItWaitsFor() throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let relay = try startElevenRelay(in: directory)
        let port = relay.port
        defer { relay.stop() }
        let receiving = try ChildProcess(
            eleven,
            ["receive", "7-guitarist-revenge", "--relay", "ws://127.0.0.1:\(port)/v1", "--timeout", "120s"])
        try receiving.waitFor("Waiting for the sender…", in: .stderr, timeout: 60)
        #expect(receiving.stop().stdout.isEmpty)
    }

    @Test func usageErrors() throws {
        // No code and standard input is not a terminal: say how to give it, don't hang.
        let noCode = try TestSupport.run(eleven, ["receive"], stdin: Data(), timeout: 30)
        #expect(noCode.status == 2)
        #expect(noCode.stderr.contains("give the code as an argument"))
        let badCode = try TestSupport.run(eleven, ["receive", "guitarist-revenge-7"], timeout: 30)
        #expect(badCode.status == 2)
        #expect(badCode.stderr.contains("that is not a Wormhole code"))
        let badLength = try TestSupport.run(
            eleven, ["send", "--text", "x", "--code-length", "1"], timeout: 30)
        #expect(badLength.status == 2)
        let badRelay = try TestSupport.run(
            eleven, ["send", "--text", "x", "--relay", "http://x"], timeout: 30)
        #expect(badRelay.status == 2)
        #expect(badRelay.stderr.contains("ws:// or wss://"))
        let empty = try TestSupport.run(eleven, ["send"], stdin: Data(), timeout: 30)
        #expect(empty.status == 2)
        #expect(empty.stderr.contains("standard input was empty"))
        let notUTF8 = try TestSupport.run(eleven, ["send"], stdin: Data([0xff, 0xfe]), timeout: 30)
        #expect(notUTF8.status == 2)
        #expect(notUTF8.stderr.contains("not UTF-8"))
        let help = try TestSupport.run(eleven, ["send", "--help"], timeout: 30)
        #expect(help.stdout.contains("ELEVEN_WORMHOLE_RELAY"))
        #expect(help.stdout.contains("ws://relay.magic-wormhole.io:4000/v1"))
    }

    @Test(.enabled(if: WormholeInteropTests.interop)) func nobodyComesIsATimeout() throws {
        let relay = try ReferenceMailboxRelay()
        defer { relay.stop() }
        let result = try TestSupport.run(
            eleven, ["send", "--text", "x", "--relay", relay.url, "--timeout", "1s"], timeout: 30)
        #expect(result.status == 7, "\(result.stderr)")
        #expect(result.stderr.contains("nobody completed the code in time"))
    }
}
