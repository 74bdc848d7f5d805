import ClientCore
import Foundation
import SQLite
import SpaceServer
import TestSupport
import Testing

/// A full disk under the real `eleven-server`: its file-size limit is lowered while members
/// post (``FileSizeLimit``: writes fail with `EFBIG`, as on a full file system), then raised.
/// Posts fail with a clear, stable error and nothing else; the server keeps running and
/// answering reads; every acknowledged message survives; the database passes SQLite's integrity
/// check; and writes work again once space returns.
@Suite(.serialized) struct ServerDiskFullTests {
    @Test func fullDiskFailsClearlyAndRecovers() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let database = dir.appendingPathComponent("server.sqlite").path
            let port = try TestSupport.freePort()
            let (program, arguments) = FileSizeLimit.command(
                TestSupport.productPath("eleven-server"),
                ["--listen", "127.0.0.1:\(port)", "--db", database, "--quiet"])
            let server = try ChildProcess(program, arguments, port: port)
            defer { server.stop() }
            let url = "http://127.0.0.1:\(port)"

            let owner = try PostingOwner(server: url)
            for n in 0..<5 { #expect(owner.post("before \(n)") == nil) }

            // The disk fills: a little room above the largest file, then none.
            try FileSizeLimit.set(
                pid: server.pid, bytes: FileSizeLimit.largestFile(in: dir) + 16_384)
            let padding = String(repeating: "x", count: 2000)
            var failures: [String: Int] = [:]
            var statuses: Set<Int> = []
            for n in 0..<400 {
                if let error = owner.post("full \(n) \(padding)") {
                    failures[error.code, default: 0] += 1
                    statuses.insert(error.status ?? 0)
                }
                if failures.values.reduce(0, +) >= 20 { break }
            }
            print(
                "disk full: \(owner.acknowledged.count) posts acknowledged, failures \(failures), statuses \(statuses)"
            )
            #expect(failures.values.reduce(0, +) >= 20, "the limit never bit")
            // EFBIG is an I/O error to SQLite (`storage_unavailable`); ENOSPC is `storage_full`.
            #expect(
                !failures.isEmpty
                    && Set(failures.keys).isSubset(of: ["storage_full", "storage_unavailable"]),
                "\(failures)")
            #expect(statuses == [503], "\(statuses)")
            #expect(server.isRunning, "\(server.log)")
            // Reads are still served while full.
            #expect(try owner.stored() == owner.acknowledged)

            // Space returns: writes work again without a restart.
            try FileSizeLimit.set(pid: server.pid, bytes: nil)
            #expect(owner.post("after") == nil)
            #expect(try owner.stored() == owner.acknowledged)
            #expect(server.isRunning)
            server.stop()
            let check = try SQLiteDatabase(path: database).query("PRAGMA integrity_check")
            #expect(check.first?.first?.text == "ok", "\(check)")
        }
    }
}
