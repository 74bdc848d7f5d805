import Foundation
import Relay
import TestSupport
import Testing

/// The real `wormhole` CLI (PyPI magic-wormhole 0.24.0, from the interop virtualenv) sends and
/// receives text through `eleven-relay`, unchanged: sender allocating, receiver allocating, and
/// across a `kill -9` and restart of the relay in the middle of an exchange.
@Suite(.serialized) struct RelayWormholeCLITests {
    static let interop = !TestSupport.interopSkipped

    /// One `wormhole` invocation with its output (stdout and stderr merged) read line by line.
    final class Wormhole {
        let process: ChildProcess
        private(set) var lines: [String] = []

        init(home: String, relayURL: String, _ arguments: [String]) throws {
            let program = TestSupport.venvProgram("wormhole")
            #expect(FileManager.default.isExecutableFile(atPath: program), "missing \(program)")
            process = try ChildProcess(
                "/bin/sh",
                [
                    "-c", "HOME=\"$1\"; export HOME; shift; exec \"$@\" 2>&1", "sh", home, program,
                    "--relay-url", relayURL,
                ]
                    + arguments, input: .open)
        }

        /// Reads lines until one satisfies `match`; returns it.
        func waitForLine(timeout: Double = 60, _ match: (String) -> Bool) throws -> String {
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                let line = try process.readLine(timeout: max(0.1, deadline.timeIntervalSinceNow))
                lines.append(line)
                if match(line) { return line }
            }
        }

        /// The code it printed (`N-word-word`).
        func code() throws -> String {
            let line = try waitForLine { $0.contains("Wormhole code is:") || $0.hasPrefix("Allocated code:") }
            return String(line.split(separator: " ").last ?? "")
        }

        /// Waits for it to exit (killing it by pid after `timeout`); its status.
        func finish(timeout: Double = 60) -> Int32 {
            process.closeInput()
            return process.finish(timeout: timeout).status
        }
    }

    static func text(_ label: String) -> String { "eleven-relay \(label) \(UUID().uuidString.prefix(8))" }

    @Test(.enabled(if: interop)) func senderAllocatesReceiverClaims() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let relay = try RelayProcess(databasePath: dir.path("relay.sqlite"))
        defer { relay.stop() }
        let message = Self.text("sender-first")
        let sender = try Wormhole(home: dir.path(""), relayURL: relay.url, ["send", "--text", message])
        let code = try sender.code()
        #expect(code.split(separator: "-").count >= 3)
        let receiver = try Wormhole(home: dir.path(""), relayURL: relay.url, ["receive", code])
        _ = try receiver.waitForLine { $0 == message }
        #expect(receiver.finish() == 0)
        #expect(sender.finish() == 0)
    }

    @Test(.enabled(if: interop)) func receiverAllocatesSenderClaims() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let relay = try RelayProcess(databasePath: dir.path("relay.sqlite"))
        defer { relay.stop() }
        let message = Self.text("receiver-first")
        let receiver = try Wormhole(home: dir.path(""), relayURL: relay.url, ["receive", "--allocate"])
        let code = try receiver.code()
        let sender = try Wormhole(
            home: dir.path(""), relayURL: relay.url, ["send", "--code", code, "--text", message])
        _ = try receiver.waitForLine { $0 == message }
        #expect(receiver.finish() == 0)
        #expect(sender.finish() == 0)
    }

    /// Both clients are mid-exchange when the relay dies: the sender (`--verify`) has the key
    /// and waits at its verifier prompt, the receiver waits for the text. Both PAKE messages are
    /// durable (seen in the database file) before `kill -9`; the relay restarts on the same port
    /// and file; the sender is told "yes"; both clients reconnect and finish.
    @Test(.enabled(if: interop)) func bothClientsResumeAcrossAKillAndRestart() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let database = dir.path("relay.sqlite")
        let first = try RelayProcess(databasePath: database)
        let port = first.port
        let url = first.url
        let message = Self.text("restart")
        let sender = try Wormhole(home: dir.path(""), relayURL: url, ["send", "--verify", "--text", message])
        let code = try sender.code()
        let receiver = try Wormhole(home: dir.path(""), relayURL: url, ["receive", code])
        // Both sides' PAKE messages are committed.
        func pakeMessages() -> Int {
            guard let storage = try? SQLiteRelayStorage(path: database), let snapshot = try? storage.load()
            else {
                return 0
            }
            storage.close()
            return snapshot.mailboxes.values.map {
                Set($0.messages.filter { $0.phase.value == "pake" }.map(\.side)).count
            }
            .max() ?? 0
        }
        #expect(eventually(timeout: 30) { pakeMessages() == 2 })
        usleep(300_000)
        #expect(first.stop(signal: SIGKILL).signalled)
        #expect(pakeMessages() == 2, "acknowledged messages survive kill -9")
        let second = try RelayProcess(databasePath: database, port: port)
        defer { second.stop() }
        try sender.process.send(line: "yes")
        _ = try receiver.waitForLine(timeout: 90) { $0 == message }
        #expect(receiver.finish() == 0)
        #expect(sender.finish() == 0)
    }
}
