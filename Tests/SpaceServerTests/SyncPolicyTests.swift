import Foundation
import SQLite
import TestSupport
import Testing

@testable import SpaceServer

/// `eleven-server --sync`: full (the default) syncs every commit, normal only survives a crash of
/// the process; anything else is a usage error.
@Suite struct SyncPolicyTests {
    @Test func theStoreUsesThePolicyItIsGiven() throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // SQLite's numbers: 2 = FULL, 1 = NORMAL.
        for (sync, expected) in [(true, Int64(2)), (false, Int64(1))] {
            let store = try SpaceStore(
                path: directory.appendingPathComponent("s\(sync).sqlite").path, syncEveryCommit: sync)
            #expect(try store.db.query("PRAGMA synchronous").first?.first?.integer == expected)
        }
        var configuration = SpaceServerConfiguration()
        #expect(configuration.syncEveryCommit)
        configuration.syncEveryCommit = false
        let api = try SpaceAPI(
            databasePath: directory.appendingPathComponent("api.sqlite").path, configuration: configuration)
        #expect(
            try api.state.withLock { try $0.service.store.db.query("PRAGMA synchronous") }.first?.first?
                .integer == 1)
    }

    @Test func aBadValueIsAUsageError() throws {
        let result = try TestSupport.run(TestSupport.productPath("eleven-server"), ["--sync", "sometimes"])
        #expect(result.status == 2)
        #expect(
            result.stderr.contains("'--sync' must be full or normal, not 'sometimes'"), "\(result.stderr)")
    }
}
