import Foundation
import Mailbox
import Testing

@testable import Relay

@Suite("Blindness of the stored state")
struct BlindnessTests {
    /// Hex of bytes, as clients encode bodies.
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static func fileBytes(_ path: String) -> Data {
        (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
    }

    static func contains(_ haystack: Data, _ needle: String) -> Bool {
        haystack.range(of: Data(needle.utf8)) != nil
    }

    /// Whether the files hold a body in either form the store may keep it: its hex, or the
    /// bytes the hex spells.
    static func holds(_ haystack: Data, body bytes: [UInt8]) -> Bool {
        contains(haystack, hex(bytes)) || haystack.range(of: Data(bytes)) != nil
    }

    @Test("the database holds only what the protocol stores, and nothing once mailboxes close")
    func blindness() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        // Secrets the clients know and never send: the code words and the derived key.
        let codeWords = "coral-piano"
        let derivedKey = "5f1d3e9a7b2c4d6e8f0a1b2c3d4e5f60"
        // Things clients do send that a relay has no reason to keep.
        let clientVersion = "blindness-marker-0.99"
        let address = "203.0.113.77"
        // Ciphertext-like bodies (random bytes, hex), which the relay must store until closed.
        var random = SeededRandom(seed: 77)
        let bodies = (0..<6).map { _ in (0..<48).map { _ in UInt8.random(in: 0...255, using: &random) } }

        let storage = try SQLiteRelayStorage(path: path)
        let sink = RecordingSink()
        let relay = try RelayService(
            config: RelayConfig(welcome: WelcomeConfig(motd: "motd-marker")), storage: storage, sink: sink)
        let remote = ClientAddress(family: .ipv4, host: address, port: 61000)
        let a = ConnectionID(1)
        let b = ConnectionID(2)
        for (id, side) in [(a, "aaaa0000aa"), (b, "bbbb1111bb")] {
            relay.connectionOpened(id: id, remote: remote)
            relay.received(
                text:
                    #"{"type":"bind","appid":"elevenmessenger.com/join","side":"\#(side)","client_version":["python","\#(clientVersion)"]}"#,
                from: id)
        }
        relay.received(text: #"{"type":"claim","nameplate":"42"}"#, from: a)
        storage.flush()
        let mailbox = try #require(sink.frames(1).first { $0["type"] == "claimed" }?["mailbox"]?.stringValue)
        relay.received(text: #"{"type":"claim","nameplate":"42"}"#, from: b)
        for id in [a, b] { relay.received(text: #"{"type":"open","mailbox":"\#(mailbox)"}"#, from: id) }
        for (i, body) in bodies.enumerated() {
            relay.received(
                text: #"{"type":"add","phase":"\#(i)","body":"\#(Self.hex(body))"}"#, from: i % 2 == 0 ? a : b
            )
        }
        storage.flush()

        var files = Self.fileBytes(path) + Self.fileBytes(path + "-wal")
        // The test can see content: the bodies are there while the mailbox is open.
        for body in bodies { #expect(Self.holds(files, body: body), "bodies are stored until close") }
        #expect(Self.contains(files, mailbox))
        for secret in [codeWords, derivedKey, clientVersion, address, "motd-marker", "python"] {
            #expect(!Self.contains(files, secret), "\(secret) must not be stored")
        }

        // Both sides close: after a checkpoint nothing of the exchange remains on disk.
        for id in [a, b] { relay.received(text: #"{"type":"close","mood":"happy"}"#, from: id) }
        storage.flush()
        #expect(try storage.load() == .empty)
        try storage.checkpoint()
        files = Self.fileBytes(path) + Self.fileBytes(path + "-wal")
        #expect(!files.isEmpty)
        for body in bodies { #expect(!Self.holds(files, body: body), "closed mailboxes' bodies are wiped") }
        for marker in [mailbox, "aaaa0000aa", "bbbb1111bb"] {
            #expect(!Self.contains(files, marker), "\(marker) is wiped")
        }
        relay.shutdown()
    }
}
