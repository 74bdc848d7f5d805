import Foundation
import Net
import TestSupport
import Testing

/// A full disk under the real `eleven-relay` on SQLite (``FileSizeLimit``: writes fail with
/// `EFBIG`): the relay reports it (`/healthz` 503 `storage_unavailable`, connections closed, no
/// crash), comes back by itself once space returns, and its database passes SQLite's integrity
/// check.
@Suite(.serialized) struct RelayDiskFullTests {
    @Test func fullDiskIsReportedAndRecovered() async throws {
        try await TestSupport.offPool {
            let scratch = try ScratchDirectory()
            defer { scratch.remove() }
            let port = try TestSupport.freePort()
            let metricsPort = try TestSupport.freePort()
            let (program, arguments) = FileSizeLimit.command(
                RelayProcess.executable,
                [
                    "--listen", "127.0.0.1:\(port)", "--db", scratch.path("relay.sqlite"), "--metrics-listen",
                    "127.0.0.1:\(metricsPort)", "--no-limits",
                ])
            let relay = try ServerProcess(program, arguments, port: port)
            defer { relay.stop() }
            let url = "ws://127.0.0.1:\(port)/v1"
            let health = "http://127.0.0.1:\(metricsPort)/healthz"
            func healthy() -> Int { (try? HTTPClient.send(.get, url: health).status.code) ?? 0 }

            /// Binds, allocates and claims a nameplate, then writes `count` messages; true when
            /// every step was answered.
            func mailboxWorks(_ n: Int, messages count: Int = 3) -> Bool {
                guard let client = try? WireClient(url) else { return false }
                defer { client.close() }
                do {
                    try client.send(["type": "bind", "appid": "example.com/full", "side": "side\(n)"])
                    try client.send(["type": "allocate"])
                    let allocated = try client.next(type: "allocated")
                    let nameplate = allocated["nameplate"] as? String ?? ""
                    try client.send(["type": "claim", "nameplate": nameplate])
                    let claimed = try client.next(type: "claimed")
                    try client.send(["type": "open", "mailbox": claimed["mailbox"] as? String ?? ""])
                    for m in 0..<count {
                        try client.send([
                            "type": "add", "phase": "\(m)", "body": String(repeating: "ab", count: 4000),
                        ])
                        _ = try client.next(type: "message")
                    }
                    return true
                } catch {
                    return false
                }
            }
            #expect(mailboxWorks(0))
            #expect(healthy() == 200)

            // The disk fills.
            try FileSizeLimit.set(
                pid: relay.process.processIdentifier,
                bytes: FileSizeLimit.largestFile(in: scratch.url) + 16_384)
            var worked = 0
            var attempts = 0
            while attempts < 200, healthy() == 200 {
                attempts += 1
                if mailboxWorks(attempts, messages: 8) { worked += 1 }
            }
            let status = try HTTPClient.send(.get, url: health)
            print(
                "relay disk full: \(worked) of \(attempts) mailboxes served before the failure; "
                    + "healthz \(status.status.code) \(status.bodyText)")
            #expect(status.status.code == 503)
            #expect(status.bodyText.contains("storage_unavailable"))
            #expect(relay.process.isRunning, "\(relay.log)")
            #expect(!mailboxWorks(1000), "served while its storage fails")
            #expect(relay.log.contains("\"storage_failed\""))

            // Space returns: the relay recovers by itself and serves again.
            try FileSizeLimit.set(pid: relay.process.processIdentifier, bytes: nil)
            #expect(eventually(timeout: 20) { healthy() == 200 }, "\(relay.log.suffix(2000))")
            #expect(eventually(timeout: 10) { mailboxWorks(2000) })
            #expect(relay.process.isRunning)
            relay.stop()
            let check = try TestSupport.run(
                "/usr/bin/python3",
                [
                    "-c",
                    "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])",
                    scratch.path("relay.sqlite"),
                ])
            #expect(check.stdout == "ok\n", "\(check.stdout) \(check.stderr)")
        }
    }
}
