import ClientCore
import Foundation
import JoinProtocol
import PAKE
import Testing

/// Interrupted joins at rest: sealed, private, replaced in place, removed when done.
@Suite struct PendingJoinStoreTests {
    @Test func roundTripsSealedAndPrivate() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("eleven-joins-\(UUID())")
        defer { try? FileManager.default.removeItem(at: base) }
        let store = PendingJoinStore(
            directory: StateDirectory(path: base.appendingPathComponent("home").path))
        #expect(try store.load().isEmpty)
        var random = SeededRandom(seed: [7])
        var join = PendingJoin(
            relay: "ws://127.0.0.1:1/v1", nameplate: Rendezvous.Nameplate("42"), words: "coral-piano",
            request: JoinRequest(
                displayName: "Sam", deviceLabel: "laptop", publicKeys: JoinerKeys(text: "keys")),
            createdAt: 1,
            deadline: 2, using: &random)
        try store.put(join)
        join.received.append(PendingJoin.Received(phase: .pake, body: [1, 2, 3]))
        join.sent.append(.pake)
        try store.put(join)
        let loaded = try store.load()
        #expect(loaded.count == 1)
        #expect(loaded.first?.words == "coral-piano" && loaded.first?.received.count == 1)
        #expect(loaded.first?.sent == [.pake] && loaded.first?.machine.side == join.machine.side)
        #expect(!"\(join)".contains("coral"))
        let sealed = try Data(contentsOf: URL(fileURLWithPath: store.directory.file("joins.sealed")))
        #expect(sealed.range(of: Data("coral-piano".utf8)) == nil)
        let mode = try FileManager.default.attributesOfItem(atPath: store.directory.file("joins.key"))
        #expect(mode[.posixPermissions] as? Int == 0o600)
        try store.remove(join.id)
        #expect(try store.load().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: store.directory.file("joins.sealed")))
        // A damaged file is a clear error, not a crash.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: store.directory.file("joins.sealed")))
        #expect(throws: LocalStateError.self) { try store.load() }
    }
}
