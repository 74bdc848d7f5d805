import ClientCore
import Foundation
import JoinProtocol
import PAKE
import Testing

/// Pending invites at rest: encrypted, private, atomic, and clear errors when damaged.
@Suite struct PendingInviteStoreTests {
    func makeStore() throws -> (PendingInviteStore, URL) {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("eleven-pending-\(UUID())")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        let directory = StateDirectory(path: base.appendingPathComponent("home").path)
        return (PendingInviteStore(directory: directory), base)
    }

    func invite(words: String) -> PendingInvite {
        var g = SystemRandomNumberGenerator()
        let machine = RendezvousMachine(
            appID: JoinIntent.join.appID, side: .random(using: &g), start: .claim(Rendezvous.Nameplate("42")))
        return PendingInvite(
            id: "abc", space: .random(), spaceName: "Family", relay: "ws://127.0.0.1:1/v1",
            secret: InviteSecret(words: words, seed: SecretBytes(Array(repeating: 3, count: 32))),
            createdAt: 1,
            attendant: InviteAttendant(
                policy: .init(uses: 3, expiresAt: 2),
                state: .attending(
                    nameplate: Rendezvous.Nameplate("42"), use: 0, connection: machine, attempt: false),
                taken: 0,
                failures: 0))
    }

    @Test func roundTripsEncryptedAndPrivate() throws {
        let (store, base) = try makeStore()
        defer { try? FileManager.default.removeItem(at: base) }
        #expect(try store.load().isEmpty)
        try store.save([invite(words: "coral-piano")])
        let loaded = try store.load()
        #expect(loaded.count == 1)
        #expect(loaded.first?.secret.words == "coral-piano")
        #expect(loaded.first?.code == "coral-piano-42")
        #expect(loaded.first?.secret.seedBytes.unredactedBytes() == Array(repeating: 3, count: 32))
        #expect("\(loaded[0].secret)" == "InviteSecret(redacted)")
        let sealed = try Data(contentsOf: URL(fileURLWithPath: store.directory.file("invites.sealed")))
        #expect(sealed.range(of: Data("coral-piano".utf8)) == nil)
        for name in ["invites.sealed", "invites.key"] {
            let mode = try FileManager.default.attributesOfItem(atPath: store.directory.file(name))
            #expect(mode[.posixPermissions] as? Int == 0o600)
        }
        // Removing the last one removes the sealed file.
        try store.save([])
        #expect(!FileManager.default.fileExists(atPath: store.directory.file("invites.sealed")))
        #expect(try store.load().isEmpty)
    }

    @Test func damagedFilesGiveAClearError() throws {
        let (store, base) = try makeStore()
        defer { try? FileManager.default.removeItem(at: base) }
        try store.save([invite(words: "coral-piano")])
        let path = store.directory.file("invites.sealed")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[bytes.count - 1] ^= 1
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(throws: LocalStateError.self) { try store.load() }
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
        #expect(throws: LocalStateError.self) { try store.load() }
        // A lost key: the sealed file cannot be read.
        try store.save([invite(words: "coral-piano")])
        try FileManager.default.removeItem(atPath: store.directory.file("invites.key"))
        #expect(throws: LocalStateError.self) { try store.load() }
    }
}
