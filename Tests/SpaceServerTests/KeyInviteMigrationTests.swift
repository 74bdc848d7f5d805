import ClientCore
import Foundation
import SQLite
import SpaceModel
import Testing

@testable import SpaceServer

/// Migration 3 (full-length invites) upgrades a version-2 database in place and keeps its data.
@Suite struct KeyInviteMigrationTests {
    @Test func version2DatabaseUpgradesAndKeepsItsData() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        _ = try space.add("Sam")
        let before = try harness.dump()
        // Turn the file back into what a version-2 server left behind.
        do {
            let db = try SQLiteDatabase(path: harness.databasePath)
            try db.execute(
                "DROP TABLE home_emails; DROP TABLE home_sessions; DROP TABLE home_nonces; DROP TABLE home_anchors; "
                    + "DROP TABLE home_accounts"
            )
            try db.execute(StorageLayoutTests.undoSchema9)
            try db.execute("DROP INDEX key_invites_member; DROP TABLE key_invites; PRAGMA user_version=2")
        }
        let reopened = try SpaceAPI(databasePath: harness.databasePath)
        #expect(try reopened.schemaVersion() == 10)
        #expect(try reopened.dumpTables() == before)
        // The upgraded database files invites.
        let secret = LinkSecret.random()
        let request = KeyInviteAPITests.mintRequest(secret, space: space.space)
        let reply = reopened.handle(
            APIRequest(
                method: "POST", target: "/api/key-invite",
                headers: ["Authorization": "Bearer \(space.owner.token)"],
                body: Array(try JSONEncoder().encode(request))))
        #expect(reply.status == 201, "\(String(decoding: reply.body, as: UTF8.self))")
        #expect(try reopened.dumpTables()["key_invites"]?.count == 1)
    }
}
