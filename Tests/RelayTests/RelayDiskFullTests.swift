import Foundation
import Net
import TestSupport
import Testing

/// Storage faults under the real `eleven-relay` on SQLite: a full disk (``FileSizeLimit``: writes
/// fail with `EFBIG`), a real full disk (``SmallFileSystem``: a tmpfs filled until `ENOSPC`) and a
/// read-only database (``ImmutableFiles``: `chattr +i`, writes fail with `EPERM` even as root).
/// The relay reports it (`/healthz` 503 `storage_unavailable`, connections closed, clients told
/// `storage_unavailable`, no crash) and keeps reporting it while the disk refuses writes (it
/// probes with a real write, never reloading into a state it cannot commit), comes back by
/// itself once writes work again, and its database passes SQLite's integrity check.
@Suite(.serialized) struct RelayDiskFullTests {
    @Test func fullDiskIsReportedAndRecovered() async throws {
        try await TestSupport.offPool {
            let scratch = try ScratchDirectory()
            defer { scratch.remove() }
            try Self.exercise(
                database: scratch.path("relay.sqlite"), noRoomLeft: false,
                inject: { pid in
                    try FileSizeLimit.set(
                        pid: pid, bytes: FileSizeLimit.largestFile(in: scratch.url) + 16_384)
                },
                clear: { pid in try FileSizeLimit.set(pid: pid, bytes: nil) })
        }
    }

    @Test(.enabled(if: SmallFileSystem.isAvailable, "needs mount -t tmpfs (CAP_SYS_ADMIN)"))
    func realFullDiskIsReportedAndRecovered() async throws {
        try await TestSupport.offPool {
            let disk = try SmallFileSystem(bytes: 4 << 20)
            defer { disk.unmount() }
            try Self.exercise(
                database: disk.path("relay.sqlite"),
                inject: { _ in
                    try disk.fill()
                    #expect(disk.freeBytes == 0)
                },
                clear: { _ in disk.free() })
        }
    }

    @Test(.enabled(if: ImmutableFiles.isAvailable, "needs chattr +i (root, ext4)"))
    func readOnlyDatabaseIsReportedAndRecovered() async throws {
        try await TestSupport.offPool {
            let scratch = try ScratchDirectory()
            let files = ImmutableFiles.sqliteFiles(scratch.path("relay.sqlite"))
            defer {
                try? ImmutableFiles.set(files, immutable: false)
                scratch.remove()
            }
            try Self.exercise(
                database: scratch.path("relay.sqlite"),
                inject: { _ in try ImmutableFiles.set(files, immutable: true) },
                clear: { _ in try ImmutableFiles.set(files, immutable: false) })
        }
    }

    /// Runs the relay on `database`, injects the fault (given the relay's process id) while
    /// mailboxes are written, checks what clients, `/healthz` and the log say, clears it and
    /// checks the recovery and the file.
    /// `noRoomLeft`: the fault refuses every write, even the relay's one-page probe (with a
    /// file-size limit a little above the files, small writes still fit).
    static func exercise(
        database: String, noRoomLeft: Bool = true, inject: (Int32) throws -> Void,
        clear: (Int32) throws -> Void
    ) throws {
        let port = try TestSupport.freePort()
        let metricsPort = try TestSupport.freePort()
        let (program, arguments) = FileSizeLimit.command(
            RelayProcess.executable,
            [
                "--listen", "127.0.0.1:\(port)", "--db", database, "--metrics-listen",
                "127.0.0.1:\(metricsPort)", "--no-limits",
            ])
        let relay = try ChildProcess(program, arguments, port: port)
        defer { relay.stop() }
        let pid = relay.pid
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
        /// What a new client is told: the welcome's error, else the answer to an allocation.
        func refusal() -> String {
            guard let client = try? WireClient(url) else { return "no connection" }
            defer { client.close() }
            if let error = (client.welcome["welcome"] as? [String: Any])?["error"] as? String { return error }
            try? client.send(["type": "bind", "appid": "example.com/full", "side": "late"])
            try? client.send(["type": "allocate"])
            let reply = try? client.nextReply()
            return reply?["error"] as? String ?? "\(reply ?? [:])"
        }

        try inject(pid)
        var worked = 0
        var attempts = 0
        while attempts < 200, healthy() == 200 {
            attempts += 1
            if mailboxWorks(attempts, messages: 8) { worked += 1 }
        }
        let status = try HTTPClient.send(.get, url: health)
        print(
            "relay storage fault: \(worked) of \(attempts) mailboxes served before the failure; "
                + "healthz \(status.status.code) \(status.bodyText)")
        #expect(status.status.code == 503)
        #expect(status.bodyText.contains("storage_unavailable"))
        #expect(relay.isRunning, "\(relay.log)")
        #expect(!mailboxWorks(1000), "served while its storage fails")
        let told = refusal()
        #expect(told.contains("database"), "\(told)")
        // The log line goes through a pipe; under load it arrives after the answers above.
        #expect(
            TestSupport.eventually(timeout: 30) { relay.log.contains("\"storage_failed\"") },
            "\(relay.log)")
        // It stays failed while the disk refuses writes: its probe writes, and no reload serves
        // a state it cannot commit (it used to turn healthy again every second).
        var healthyWhileFailing = 0
        for _ in 0..<25 {
            if healthy() == 200 { healthyWhileFailing += 1 }
            usleep(100_000)
        }
        #expect(
            !noRoomLeft || healthyWhileFailing == 0,
            "healthy \(healthyWhileFailing) times of 25 while writes fail")

        // Writes work again: the relay recovers by itself and serves again.
        try clear(pid)
        #expect(eventually(timeout: 20) { healthy() == 200 }, "\(relay.log.suffix(2000))")
        #expect(eventually(timeout: 10) { mailboxWorks(2000) })
        #expect(relay.isRunning)
        relay.stop()
        let check = try TestSupport.run(
            "/usr/bin/python3",
            [
                "-c",
                "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])",
                database,
            ])
        #expect(check.stdout == "ok\n", "\(check.stdout) \(check.stderr)")
    }
}
