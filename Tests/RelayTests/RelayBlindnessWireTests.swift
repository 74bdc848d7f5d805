import Foundation
import Mailbox
import Net
import TestSupport
import Testing

/// Blindness over the wire: real Magic Wormhole clients (the `wormhole` CLI and the
/// magic-wormhole library, which encrypt every body after SPAKE2) run full exchanges through
/// `eleven-relay` with code words, plaintexts and derived keys the test knows. None of them may
/// appear in the database file, its WAL, the relay's logs or its metrics.
@Suite(.serialized) struct RelayBlindnessWireTests {
    static let interop = !TestSupport.interopSkipped

    /// Two library clients in one process: exchange a message each way, then print the keys
    /// both derived and the verifier (what the relay must never learn).
    static let libraryExchange = """
        import json, sys
        from twisted.internet import defer, task
        import wormhole

        @defer.inlineCallbacks
        def main(reactor, url, appid, code, text):
            a = wormhole.create(appid, url, reactor)
            b = wormhole.create(appid, url, reactor)
            a.set_code(code)
            b.set_code(code)
            a.send_message(text.encode())
            got_b = yield b.get_message()
            b.send_message(b"reply " + got_b)
            got_a = yield a.get_message()
            key_a = a.derive_key("eleven-relay/blindness", 32)
            key_b = b.derive_key("eleven-relay/blindness", 32)
            verifier = yield a.get_verifier()
            yield a.close()
            yield b.close()
            print(json.dumps({"received": got_b.decode(), "reply": got_a.decode(),
                              "key_a": key_a.hex(), "key_b": key_b.hex(),
                              "verifier": verifier.hex()}), flush=True)

        task.react(main, sys.argv[1:])
        """

    static func hex(_ text: String) -> String { Array(text.utf8).map { String(format: "%02x", $0) }.joined() }

    static func bytes(fromHex hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
            if let byte = UInt8(hex[index..<next], radix: 16) { out.append(byte) }
            index = next
        }
        return out
    }

    /// The database and its side files, as bytes.
    static func stored(_ database: String) -> [(String, Data)] {
        ["", "-wal", "-shm", "-journal"].compactMap { suffix in
            (try? Data(contentsOf: URL(fileURLWithPath: database + suffix))).map { (database + suffix, $0) }
        }
    }

    @Test(.enabled(if: interop)) func codesKeysAndPlaintextsNeverReachDiskOrLogs() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let database = dir.path("relay.sqlite")
        let relay = try RelayProcess(databasePath: database, metrics: true)
        defer { relay.stop() }
        let app = "example.com/blindness-wire"
        let python = TestSupport.python
        #expect(FileManager.default.isExecutableFile(atPath: python), "missing \(python)")

        // 1. The library: known code, plaintext, derived keys.
        let libraryCode = "314-purple-sausages"
        let libraryText = "library plaintext marker \(UUID().uuidString)"
        let script = dir.path("exchange.py")
        try Self.libraryExchange.write(toFile: script, atomically: true, encoding: .utf8)
        let run = try TestSupport.run(
            python, [script, relay.url, app, libraryCode, libraryText], environment: ["HOME": dir.path("")],
            timeout: 60)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let result = try #require(
            try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: String])
        #expect(result["received"] == libraryText)
        let key = try #require(result["key_a"])
        #expect(key.count == 64 && result["key_b"] == key)
        let verifier = try #require(result["verifier"])

        // 2. The CLI: a sender waits with a known code while the database is searched mid-way,
        // then a receiver completes the exchange.
        let cliCode = "271-crystal-lantern"
        let cliText = "cli plaintext marker \(UUID().uuidString)"
        let sender = try RelayWormholeCLITests.Wormhole(
            home: dir.path(""), relayURL: relay.url, ["send", "--code", cliCode, "--text", cliText])
        _ = try sender.waitForLine { $0.contains("wormhole receive") }
        // The sender's nameplate and PAKE message are stored by now.
        #expect(
            eventually {
                Self.stored(database).contains { $0.1.range(of: Data("lothar.com/wormhole".utf8)) != nil }
            }, "positive control: the AppID is stored while the exchange is open")
        let midway = Self.stored(database)
        let receiver = try RelayWormholeCLITests.Wormhole(
            home: dir.path(""), relayURL: relay.url, ["receive", cliCode])
        _ = try receiver.waitForLine { $0 == cliText }
        #expect(receiver.finish() == 0)
        #expect(sender.finish() == 0)

        let metrics = try HTTPClient.send(.get, url: try #require(relay.metricsURL) + "/metrics").bodyText
        let keyBytes = Data(Self.bytes(fromHex: key))
        let verifierBytes = Data(Self.bytes(fromHex: verifier))
        var needles: [(String, Data)] = [
            ("key hex", Data(key.utf8)), ("key bytes", keyBytes), ("verifier hex", Data(verifier.utf8)),
            ("verifier bytes", verifierBytes),
        ]
        for secret in [
            libraryCode, "purple-sausages", "purple", "sausages", cliCode, "crystal-lantern", "crystal",
            "lantern",
        ] {
            needles.append(("code \(secret)", Data(secret.utf8)))
        }
        for text in [libraryText, cliText] {
            needles.append(("plaintext", Data(text.utf8)))
            needles.append(("plaintext hex", Data(Self.hex(text).utf8)))
        }
        let haystacks: [(String, Data)] =
            midway.map { ("midway " + $0.0, $0.1) } + Self.stored(database)
            + [("relay log", Data(relay.log.utf8)), ("metrics", Data(metrics.utf8))]
        #expect(haystacks.count >= 4)
        for (place, data) in haystacks {
            for (what, needle) in needles {
                #expect(data.range(of: needle) == nil, "\(what) found in \(place)")
            }
        }
    }
}
