import ClientCore
import Foundation
import Net
import TestSupport
import Testing

/// `eleven send`'s size check and `eleven-relay`'s default limit agree (#25 "Limits that
/// agree"): the largest text eleven accepts passes the relay's defaults to a stock receiver,
/// one byte more is refused before any traffic with the maximum named, and a message a relay
/// refuses for its size ends the transfer at once instead of being resent forever.
@Suite(.serialized) struct WormholeSizeLimitTests {
    static let interop = !TestSupport.interopSkipped

    /// `eleven-relay` with its default limits (or `arguments`) and a metrics listener.
    final class Relay {
        let directory: URL
        let port: UInt16
        let metricsPort: UInt16
        let process: ChildProcess
        var url: String { "ws://127.0.0.1:\(port)/v1" }

        init(_ arguments: [String] = []) throws {
            directory = try TestSupport.temporaryDirectory()
            port = try TestSupport.freePort()
            metricsPort = try TestSupport.freePort()
            process = try ChildProcess(
                TestSupport.productPath("eleven-relay"),
                [
                    "--listen", "127.0.0.1:\(port)", "--metrics-listen", "127.0.0.1:\(metricsPort)",
                    "--db", directory.appendingPathComponent("relay.sqlite").path,
                ] + arguments, port: port)
        }

        func metric(_ name: String) -> Int {
            let text =
                (try? HTTPClient.send(.get, url: "http://127.0.0.1:\(metricsPort)/metrics").bodyText) ?? ""
            let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
        }

        func stop() {
            process.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func text(bytes: Int) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var generator = SplitMix64(seed: UInt64(bytes))
        return String((0..<bytes).map { _ in letters[Int(generator.next() % UInt64(letters.count))] })
    }

    @Test(.enabled(if: interop)) func theLargestTextElevenTakesPassesTheRelaysDefaults() throws {
        let relay = try Relay()
        defer { relay.stop() }
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let h = WormholeHarness(relayURL: relay.url, home: home)
        let largest = Self.text(bytes: WormholeMessage.maximumTextBytes)
        #expect(WormholeMessage.maximumTextBytes > 500_000, "ordinary texts of a few hundred KB fit")
        let (sender, code) = try h.startElevenSend([], stdin: Data(largest.utf8))
        let received = try h.wormholeReceive(code)
        let sent = sender.finish()
        #expect(received.status == 0, "\(received.stderr.suffix(2000))")
        #expect(received.stdout == largest + "\n")
        #expect(sent.status == 0, "\(sent.stderr.suffix(2000))")

        // One byte more: refused before any traffic, saying how large a text may be.
        let tooLong = try TestSupport.run(
            WormholeHarness.eleven, ["send", "--relay", relay.url, "--json"],
            stdin: Data((largest + "x").utf8), timeout: 60)
        #expect(tooLong.status == 2)
        #expect(tooLong.stdout.contains(#""error":"text_too_long""#))
        #expect(
            tooLong.stdout.contains("at most \(WormholeMessage.maximumTextBytes) bytes"), "\(tooLong.stdout)")
        #expect(!tooLong.stdout.contains("Wormhole code is"))
    }

    /// A relay configured below eleven's size refuses the text: eleven shows the relay's error
    /// and stops, on its first connection. It used to be cut off with 1009, reconnect and send
    /// the same message again until its time ran out, the receiver waiting silently.
    @Test(.enabled(if: interop)) func aSizeRefusalIsShownAndNeverRetried() throws {
        let relay = try Relay(["--max-message-bytes", "100000"])
        defer { relay.stop() }
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        var h = WormholeHarness(relayURL: relay.url, home: home)
        h.elevenTimeout = "60s"
        let (sender, code) = try h.startElevenSend([], stdin: Data(Self.text(bytes: 300_000).utf8))
        let receiver = try h.startElevenReceive([code])
        defer { receiver.stop() }
        let sent = sender.finish(timeout: 90)
        print("eleven send of 300 KB to a 100 kB relay: status \(sent.status); \(sent.stderr.suffix(300))")
        #expect(sent.status == 4, "\(sent.stderr.suffix(2000))")
        #expect(sent.stderr.contains("message too large (limit 100000 bytes)"))
        let opened = relay.metric("eleven_relay_connections_opened_total")
        #expect(opened == 2, "one connection each for sender and receiver: no reconnects")
        #expect(relay.metric("eleven_relay_net_websocket_protocol_errors_total") == 0)
    }
}
