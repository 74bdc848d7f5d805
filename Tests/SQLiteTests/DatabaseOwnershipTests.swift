import Foundation
import Relay
import SidecarBot
import TestSupport
import Testing

@testable import SpaceServer

/// Each program marks its SQLite files with its own `PRAGMA application_id` and refuses, before
/// writing anything, a file that belongs to another program (another id, or no id and tables it
/// does not know), with the stable code `foreign_database`; a file the same program wrote before
/// application ids (id 0, its own tables) still opens and gets its id.
@Suite(.serialized) struct DatabaseOwnershipTests {
    /// A fresh directory holding one database of each kind, written by its program.
    struct Files {
        let directory: URL
        var relay: String { directory.appendingPathComponent("relay.sqlite").path }
        var server: String { directory.appendingPathComponent("server.sqlite").path }
        var botDirectory: String { directory.appendingPathComponent("bot").path }
        var bot: String { botDirectory + "/" + BotStore.fileName }
        var keyPath: String { directory.appendingPathComponent("bot.key").path }

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "ownership-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let relayStore = try SQLiteRelayStorage(path: relay)
            relayStore.close()
            _ = try SpaceStore(path: server)
            _ = try BotStore(directory: botDirectory, key: try key(), create: true)
        }

        func key() throws -> BotSealingKey { try BotSealingKey.loadOrCreate(path: keyPath).key }

        /// A directory whose `bot.sqlite` is a copy of `file`.
        func botDirectory(holding file: String) throws -> String {
            let dir = directory.appendingPathComponent("bot-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: file, toPath: dir + "/" + BotStore.fileName)
            return dir
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    static func bytes(_ path: String) -> Data { FileManager.default.contents(atPath: path) ?? Data() }

    /// A pragma's value read with Python's sqlite3 (independent of the code under test).
    static func pragma(_ name: String, _ path: String) throws -> Int {
        let result = try TestSupport.run(
            "/usr/bin/env",
            [
                "python3", "-c",
                "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])",
                path, "PRAGMA \(name)",
            ], timeout: 30)
        return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    @Test func spaceServerRefusesOtherProgramsFiles() throws {
        let files = try Files()
        defer { files.remove() }
        for (path, owner) in [(files.relay, "eleven-relay"), (files.bot, "eleven-bot")] {
            let before = Self.bytes(path)
            do {
                _ = try SpaceStore(path: path)
                Issue.record("eleven-server opened \(owner)'s file")
            } catch {
                let message = "\(error)"
                #expect(message.contains("is not a space server's database"), "\(message)")
                #expect(message.contains(owner), "\(message)")
                #expect(message.contains("Nothing in it was changed"), "\(message)")
            }
            #expect(Self.bytes(path) == before, "\(owner)'s file was changed")
        }
    }

    @Test func relayRefusesOtherProgramsFiles() throws {
        let files = try Files()
        defer { files.remove() }
        for (path, owner) in [(files.server, "eleven-server"), (files.bot, "eleven-bot")] {
            let before = Self.bytes(path)
            do {
                let store = try SQLiteRelayStorage(path: path)
                store.close()
                Issue.record("eleven-relay opened \(owner)'s file")
            } catch {
                #expect(error.code.rawValue == "foreign_database", "\(error)")
                #expect(error.message.contains(owner), "\(error)")
                #expect(!error.message.contains("newer eleven-relay"), "\(error)")
            }
            #expect(Self.bytes(path) == before, "\(owner)'s file was changed")
        }
    }

    @Test func botRefusesOtherProgramsFiles() throws {
        let files = try Files()
        defer { files.remove() }
        for (path, owner) in [(files.relay, "eleven-relay"), (files.server, "eleven-server")] {
            let directory = try files.botDirectory(holding: path)
            let copy = directory + "/" + BotStore.fileName
            let before = Self.bytes(copy)
            let key = try files.key()
            do throws(BotError) {
                _ = try BotStore(directory: directory, key: key)
                Issue.record("eleven-bot opened \(owner)'s file")
            } catch {
                #expect(error.code == "foreign_database", "\(error)")
                #expect(error.kind == .state)
                #expect(error.message.contains(owner), "\(error)")
            }
            #expect(Self.bytes(copy) == before, "\(owner)'s file was changed")
        }
    }

    /// The case that used to go wrong: `eleven-server --db relay.sqlite` added its tables to the
    /// relay's file, and the relay then refused it advising "use a newer eleven-relay".
    @Test func realProgramsRefuseEachOthersFiles() throws {
        let files = try Files()
        defer { files.remove() }
        let relayBefore = Self.bytes(files.relay)
        let port = try TestSupport.freePort()
        let server = try TestSupport.run(
            TestSupport.productPath("eleven-server"),
            ["--db", files.relay, "--listen", "127.0.0.1:\(port)", "--quiet"], timeout: 15)
        #expect(!server.timedOut, "eleven-server served a relay's database")
        #expect(server.status == 5, "\(server.status) \(server.stderr)")
        #expect(server.stderr.contains("eleven-relay"), "\(server.stderr)")
        #expect(Self.bytes(files.relay) == relayBefore, "the relay's file was changed")

        let serverBefore = Self.bytes(files.server)
        let relayPort = try TestSupport.freePort()
        let relay = try TestSupport.run(
            TestSupport.productPath("eleven-relay"),
            ["--db", files.server, "--listen", "127.0.0.1:\(relayPort)"], timeout: 15)
        #expect(!relay.timedOut, "eleven-relay served a space server's database")
        #expect(relay.status == 5, "\(relay.status) \(relay.stderr)")
        #expect(relay.stderr.contains("eleven-server"), "\(relay.stderr)")
        #expect(!relay.stderr.contains("newer eleven-relay"), "\(relay.stderr)")
        #expect(Self.bytes(files.server) == serverBefore, "the server's file was changed")
    }

    /// Files written before application ids (id 0, the program's own tables) still open, and
    /// get their program's id; the ids differ.
    @Test func oldFilesOfTheSameProgramOpenAndGetTheirID() throws {
        let files = try Files()
        defer { files.remove() }
        for path in [files.relay, files.server, files.bot] {
            try TestSupport.runSQL(database: path, "PRAGMA application_id=0")
            #expect(try Self.pragma("application_id", path) == 0)
        }
        let relay = try SQLiteRelayStorage(path: files.relay)
        #expect(try relay.load() == .empty)
        relay.close()
        _ = try SpaceStore(path: files.server)
        _ = try BotStore(directory: files.botDirectory, key: try files.key())
        let ids = try [files.relay, files.server, files.bot].map { try Self.pragma("application_id", $0) }
        #expect(ids.allSatisfy { $0 != 0 }, "\(ids)")
        #expect(Set(ids).count == 3, "\(ids)")
        // And they open again, marked.
        try SQLiteRelayStorage(path: files.relay).close()
        _ = try SpaceStore(path: files.server)
        _ = try BotStore(directory: files.botDirectory, key: try files.key())
    }
}
