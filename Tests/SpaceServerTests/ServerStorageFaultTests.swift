import ClientCore
import Foundation
import Net
import SQLite
import SpaceModel
import SpaceServer
import TestSupport
import Testing

/// Real storage faults under the real `eleven-server --home` while members post and a home
/// account syncs its vault: a read-only database (``ImmutableFiles``, `chattr +i`: writes fail
/// with `EPERM`, even as root) and a real full disk (``SmallFileSystem``, a tmpfs filled until
/// `ENOSPC`). Writes fail with 503 and a stable code, reads are still served, `/healthz` says
/// 503 with that code; once the disk takes writes again `/healthz` turns 200 by itself (no write
/// from a client needed), writes work without a restart, nothing acknowledged is lost, and the
/// database passes SQLite's integrity check.
@Suite(.serialized) struct ServerStorageFaultTests {
    @Test(.enabled(if: ImmutableFiles.isAvailable, "needs chattr +i (root, ext4)"))
    func readOnlyDatabaseFailsClearlyAndRecovers() async throws {
        try await TestSupport.offPool {
            let directory = try TestSupport.temporaryDirectory()
            let database = directory.appendingPathComponent("server.sqlite").path
            let files = ImmutableFiles.sqliteFiles(database)
            defer {
                try? ImmutableFiles.set(files, immutable: false)
                try? FileManager.default.removeItem(at: directory)
            }
            try Self.exercise(
                database: database, codes: ["storage_unavailable"],
                inject: { try ImmutableFiles.set(files, immutable: true) },
                clear: { try ImmutableFiles.set(files, immutable: false) })
        }
    }

    @Test(.enabled(if: SmallFileSystem.isAvailable, "needs mount -t tmpfs (CAP_SYS_ADMIN)"))
    func realFullDiskFailsClearlyAndRecovers() async throws {
        try await TestSupport.offPool {
            let disk = try SmallFileSystem(bytes: 4 << 20)
            defer { disk.unmount() }
            try Self.exercise(
                database: disk.path("server.sqlite"), codes: ["storage_full"],
                inject: {
                    try disk.fill()
                    #expect(disk.freeBytes == 0)
                },
                clear: { disk.free() })
        }
    }

    /// Runs the server on `database`, injects the fault, checks what clients and `/healthz` see,
    /// clears it and checks the recovery and the file.
    static func exercise(
        database: String, codes: Set<String>, inject: () throws -> Void, clear: () throws -> Void
    ) throws {
        let port = try TestSupport.freePort()
        let server = try ChildProcess(
            TestSupport.productPath("eleven-server"),
            ["--listen", "127.0.0.1:\(port)", "--db", database, "--home", "--quiet"], port: port)
        defer { server.stop() }
        let url = "http://127.0.0.1:\(port)"
        func health() -> (status: Int, body: String) {
            guard let reply = try? HTTPClient.send(.get, url: url + "/healthz") else { return (0, "") }
            return (reply.status.code, reply.bodyText)
        }

        let owner = try PostingOwner(server: url)
        for n in 0..<3 { #expect(owner.post("before \(n)") == nil) }
        var home = try HomeAccount(server: url)
        #expect(try home.push("vault 2") == nil)
        #expect(health().status == 200)
        #expect(health().body == #"{"ok":true}"#)

        try inject()
        var failures: [String: Int] = [:]
        var statuses: Set<Int> = []
        let padding = String(repeating: "x", count: 2000)
        for n in 0..<400 {
            if let error = owner.post("during \(n) \(padding)") {
                failures[error.code, default: 0] += 1
                statuses.insert(error.status ?? 0)
            }
            if failures.values.reduce(0, +) >= 3 { break }
        }
        let vaultFailure = try home.push("vault lost")
        let whileFailing = health()
        print(
            "server storage fault: \(owner.acknowledged.count) posts acknowledged, failures \(failures), "
                + "statuses \(statuses), vault push \(vaultFailure?.code ?? "stored"); "
                + "healthz \(whileFailing.status) \(whileFailing.body)")
        #expect(failures.values.reduce(0, +) >= 3, "the fault never bit")
        #expect(Set(failures.keys).isSubset(of: codes), "\(failures)")
        #expect(statuses == [503], "\(statuses)")
        #expect(vaultFailure.map { codes.contains($0.code) } == true, "\(String(describing: vaultFailure))")
        #expect(whileFailing.status == 503)
        #expect(codes.contains { whileFailing.body.contains(#""error":"\#($0)""#) }, "\(whileFailing.body)")
        #expect(whileFailing.body.contains("failing_since"))
        #expect(server.isRunning, "\(server.log)")
        // Reads are still served.
        #expect(try owner.stored() == owner.acknowledged)
        #expect(try home.pull() == "vault 2")

        // The disk takes writes again: /healthz notices by itself, then writes work.
        try clear()
        #expect(TestSupport.eventually(timeout: 10) { health().status == 200 }, "\(health())")
        #expect(owner.post("after") == nil)
        #expect(try home.push("vault 3") == nil)
        #expect(try owner.stored() == owner.acknowledged)
        #expect(try home.pull() == "vault 3")
        #expect(server.isRunning)
        server.stop()
        let check = try SQLiteDatabase(path: database).query("PRAGMA integrity_check")
        #expect(check.first?.first?.text == "ok", "\(check)")
    }
}

/// A home account of one device that pushes and pulls a text as its vault.
private struct HomeAccount {
    let key = VaultKey.random(generation: 1)
    var client: HomeClient
    var version: Int64

    init(server: String) throws {
        let identity = DeviceIdentity.generate()
        let accountKey = AccountKey.random()
        let anchor = identity.anchor()
        let id = anchor.id(accountKey: accountKey)
        let upload = HomeWire.AnchorUpload(id: id, keys: anchor, wrap: key.wrap(for: anchor))
        let vault = key.seal(Array("vault 1".utf8))
        let payload = HomeWire.CreateAccountRequest.payload(anchor: upload, generation: 1, vault: vault)
        client = try HomeClient(server: server)
        let session = try client.createAccount(
            HomeWire.CreateAccountRequest(
                anchor: upload, generation: 1, vault: vault,
                proof: identity.homeProof(
                    .createAccount, anchor: id, payload: payload, now: Int64(Date().timeIntervalSince1970))))
        client.use(session: session.token)
        version = session.version
    }

    /// Stores `text` as the next version; nil on success, else the server's error.
    mutating func push(_ text: String) throws -> SpaceClientError? {
        do {
            version = try client.putVault(
                HomeWire.PutVault(version: version, generation: 1, vault: key.seal(Array(text.utf8)))
            ).version
            return nil
        } catch {
            return error
        }
    }

    func pull() throws -> String {
        let stored = try client.vault()
        return String(decoding: try key.open(Base64URL.decode(stored.vault) ?? []), as: UTF8.self)
    }
}
