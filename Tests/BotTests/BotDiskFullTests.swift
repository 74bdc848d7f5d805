import Foundation
import LoadHarness
import SQLite
import SidecarBot
import TestSupport
import Testing

/// Storage faults under `eleven-bot run`: a full disk (``FileSizeLimit`` on its process), a
/// read-only state (``ImmutableFiles``: `chattr +i`, even as root), and a real full disk
/// (``SmallFileSystem``: a tmpfs filled until `ENOSPC`) while the bot is killed with SIGKILL in
/// the middle of attending. The bot stays up (or restarts cleanly), admits nobody it cannot
/// record, uses no invite twice, and once space returns serves invites again with its state
/// intact.
@Suite(.serialized) struct BotDiskFullTests {
    @Test func fullDiskStopsNothingForGoodAndLosesNoUse() async throws {
        try await TestSupport.offPool {
            let world = try BotLoadWorld(
                program: TestSupport.productPath, botArguments: ["--step-timeout", "3s"])
            defer { world.remove() }
            let state = URL(fileURLWithPath: world.botState)
            try Self.exercise(
                world,
                inject: {
                    try FileSizeLimit.set(
                        pid: world.botPID, bytes: FileSizeLimit.largestFile(in: state) + 4096)
                },
                clear: { try FileSizeLimit.set(pid: world.botPID, bytes: nil) })
        }
    }

    @Test(.enabled(if: ImmutableFiles.isAvailable, "needs chattr +i (root, ext4)"))
    func readOnlyStateStopsNothingForGoodAndLosesNoUse() async throws {
        try await TestSupport.offPool {
            let world = try BotLoadWorld(
                program: TestSupport.productPath, botArguments: ["--step-timeout", "3s"])
            let files = ImmutableFiles.sqliteFiles(world.botState + "/" + BotStore.fileName)
            defer {
                try? ImmutableFiles.set(files, immutable: false)
                world.remove()
            }
            try Self.exercise(
                world, inject: { try ImmutableFiles.set(files, immutable: true) },
                clear: { try ImmutableFiles.set(files, immutable: false) })
        }
    }

    /// Opens two invites of two uses, uses one, injects the fault, tries every invite and a new
    /// one, clears the fault and checks that the bot serves again and that every admitted joiner
    /// took exactly one counted use.
    static func exercise(_ world: BotLoadWorld, inject: () throws -> Void, clear: () throws -> Void) throws {
        let invites = try world.openInvites(2, uses: 2)
        #expect(world.join(nameplate: invites[0].nameplate, words: invites[0].words) == nil)

        try inject()
        // While failing: a join may fail, but whoever the bot admits must be a member.
        var outcomes: [String: Int] = [:]
        for invite in invites {
            let outcome = world.join(nameplate: invite.nameplate, words: invite.words, timeout: .seconds(8))
            outcomes[outcome ?? "joined", default: 0] += 1
        }
        let newInvites = Result { try world.openInvites(1, timeout: 4) }
        print(
            "bot storage fault: joins \(outcomes), new invite while failing: "
                + "\((try? newInvites.get()).map { _ in "ready" } ?? "not ready")")
        #expect(world.botIsRunning, "\(world.botOutput.suffix(2000))")

        // Writes work again: the bot serves again.
        try clear()
        let fresh = try world.openInvites(1, timeout: 30)
        #expect(world.join(nameplate: fresh[0].nameplate, words: fresh[0].words) == nil)
        #expect(world.botIsRunning)
        // Every joiner the bot added used one counted use: none lost, none used twice. (The
        // bot counts a use just after the joiner has its grant: give it a moment.)
        let (members, used) = try settledUses(world, state: world.botState, invites: 4)
        print("bot after recovery: \(members) members, uses taken per invite \(used)")
        // The request sent while the disk was full stayed in the inbox and was taken later.
        #expect(used.count == 4, "\(used)")
        #expect(members == 2 + used.reduce(0, +), "\(used)")
        // The operator is told the disk is the trouble, never to move a damaged state away.
        #expect(world.botOutput.contains("cannot write its state"))
        #expect(!world.botOutput.contains("damaged"))
        world.stop()
        try expectIntact(world.botState)
    }

    /// The space's member count and the uses each of the first `invites` invites has taken,
    /// once the two agree (owner and bot plus one member per use) or 30 seconds passed (it
    /// returns as soon as they agree; 5 s was seen to pass on a loaded machine).
    static func settledUses(_ world: BotLoadWorld, state: String, invites: Int) throws -> (Int, [Int]) {
        let members = try world.owner.roster().members.count
        let (key, _) = try BotSealingKey.loadOrCreate(path: world.keyFile)
        let store = try BotStore(directory: state, key: key)
        var used: [Int] = []
        let settle = Date().addingTimeInterval(30)
        repeat {
            used = try (0..<invites).compactMap { n in
                try store.invite("\(world.owner.saved.member.base64URL):load\(n)")
            }.map { $0.uses - $0.usesLeft }
            if members == 2 + used.reduce(0, +) { break }
            usleep(100_000)
        } while Date() < settle
        return (members, used)
    }

    /// The bot's state file passes SQLite's integrity check.
    static func expectIntact(_ state: String) throws {
        let check = try SQLiteDatabase(path: state + "/" + BotStore.fileName).query("PRAGMA integrity_check")
        #expect(check.first?.first?.text == "ok", "\(check)")
    }

    /// The bot is killed with SIGKILL while joiners are being attended and its disk (a tmpfs) is
    /// full, then started again once space returns: every invite is either still open and
    /// admits its remaining joiners, or ended cleanly; no use was counted twice or lost (one
    /// member per counted use); the state passes the integrity check.
    @Test(.enabled(if: SmallFileSystem.isAvailable, "needs mount -t tmpfs (CAP_SYS_ADMIN)"))
    func killedWhileTheDiskIsFullLosesAndDoublesNoUse() async throws {
        try await TestSupport.offPool {
            let world = try BotLoadWorld(
                program: TestSupport.productPath, botArguments: ["--step-timeout", "3s"])
            defer { world.remove() }
            let invites = try world.openInvites(4, uses: 2)
            #expect(world.join(nameplate: invites[0].nameplate, words: invites[0].words) == nil)

            // The bot moves to a small disk of its own (killed, its files copied as they were).
            kill(world.botPID, SIGKILL)
            #expect(TestSupport.eventually(timeout: 30) { !world.botIsRunning })
            let disk = try SmallFileSystem(bytes: 4 << 20)
            defer { disk.unmount() }
            let state = disk.path("bot")
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: false)
            for suffix in ["", "-wal"] {
                let from = world.botState + "/" + BotStore.fileName + suffix
                if FileManager.default.fileExists(atPath: from) {
                    try FileManager.default.copyItem(
                        atPath: from, toPath: state + "/" + BotStore.fileName + suffix)
                }
            }
            let arguments = [
                "run", "--state", state, "--key-file", world.keyFile, "--relay", world.relayURL,
                "--step-timeout", "3s",
            ]
            let first = try BotRun(arguments, log: world.directory)

            // The disk fills while joiners come to every invite; the bot dies mid-attending.
            try disk.fill()
            let outcomes = Tally()
            let group = DispatchGroup()
            for invite in invites {
                group.enter()
                Thread.detachNewThread {
                    for _ in 0..<2 {
                        outcomes.add(
                            world.join(nameplate: invite.nameplate, words: invite.words, timeout: .seconds(5))
                                ?? "joined")
                    }
                    group.leave()
                }
            }
            usleep(1_500_000)
            first.kill()
            _ = group.wait(timeout: .now() + 30)
            print("bot killed on a full disk: joins before the kill \(outcomes.counts)")

            // Space returns; a new bot on the same state.
            disk.free()
            let second = try BotRun(arguments, log: world.directory)
            defer { second.kill() }
            // Every invite still open admits its remaining joiners (the restarted bot may first
            // finish a join it had heard before the kill: that joiner is admitted, once).
            let (key, _) = try BotSealingKey.loadOrCreate(path: world.keyFile)
            let store = try BotStore(directory: state, key: key)
            let after = Tally()
            var ended: [String] = []
            for (n, invite) in invites.enumerated() {
                let id = "\(world.owner.saved.member.base64URL):load\(n)"
                for _ in 0..<4 {
                    guard let saved = try store.invite(id), saved.state == .open, saved.usesLeft > 0 else {
                        break
                    }
                    after.add(
                        world.join(nameplate: invite.nameplate, words: invite.words, timeout: .seconds(10))
                            ?? "joined")
                }
                ended.append(try store.invite(id)?.state.rawValue ?? "missing")
            }
            let (members, used) = try Self.settledUses(world, state: state, invites: 4)
            let joined = (outcomes.counts["joined"] ?? 0) + (after.counts["joined"] ?? 0) + 1
            print(
                "bot restarted after the kill: joins \(after.counts), invites \(ended), \(members) members, "
                    + "uses taken per invite \(used)")
            #expect(second.isRunning, "\(second.output.suffix(2000))")
            // Each invite ended used up, or (cleanly) burned: an attempt the kill or the full
            // disk left without a confirmation counts as a failure (one guess per code, whatever
            // stops the exchange), or is still open with its uses left: after the restart a
            // nameplate can stay crowded on the relay for a while (known weakness: its joiners
            // time out cleanly). None admitted more than its two uses, and every member admitted
            // took exactly one counted use: none lost, none used twice.
            #expect(ended.allSatisfy { ["used_up", "burned", "open"].contains($0) }, "\(ended)")
            #expect(used.count == 4 && used.allSatisfy { $0 <= 2 }, "\(used)")
            #expect(members == 2 + used.reduce(0, +), "\(members) members for \(used)")
            #expect(joined <= used.reduce(0, +), "\(joined) joiners told they joined, \(used) uses counted")
            // The restarted bot serves again (after the counts above: this adds a member).
            let fresh = try world.openInvites(1, timeout: 30)
            #expect(world.join(nameplate: fresh[0].nameplate, words: fresh[0].words) == nil)
            #expect(!second.output.contains("damaged"))
            second.kill()
            try Self.expectIntact(state)
        }
    }
}

/// `eleven-bot run` started by a test, its output in a file, killed by process id.
private final class BotRun {
    let child: ChildProcess
    let logFile: URL

    init(_ arguments: [String], log directory: URL) throws {
        logFile = directory.appendingPathComponent("bot-\(UUID().uuidString).log")
        child = try ChildProcess(TestSupport.productPath("eleven-bot"), arguments, logFile: logFile)
        do {
            try child.waitFor("\"started\"", timeout: 20)
        } catch {
            kill()
            throw error
        }
    }

    var output: String { child.log }
    var isRunning: Bool { child.isRunning }

    /// SIGKILL by process id.
    func kill() {
        child.stop(signal: SIGKILL)
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: logFile)
    }
}
