import Bot
import Foundation
import SpaceServer
import TestSupport
import Testing

/// A full disk under `eleven-bot run` (``FileSizeLimit`` on its process): the bot stays up, admits
/// nobody it cannot record, and once space returns serves invites again with its state intact.
@Suite(.serialized) struct BotDiskFullTests {
    @Test func fullDiskStopsNothingForGoodAndLosesNoUse() async throws {
        try await TestSupport.offPool {
            let world = try BotLoadWorld(
                program: TestSupport.productPath, botArguments: ["--step-timeout", "3s"])
            defer { world.remove() }
            let invites = try world.openInvites(2, uses: 2)
            #expect(world.join(nameplate: invites[0].nameplate, words: invites[0].words) == nil)
            let state = URL(fileURLWithPath: world.botState)

            try FileSizeLimit.set(pid: world.botPID, bytes: FileSizeLimit.largestFile(in: state) + 4096)
            // While full: a join may fail, but whoever the bot admits must be a member.
            var outcomes: [String: Int] = [:]
            for invite in invites {
                let outcome = world.join(
                    nameplate: invite.nameplate, words: invite.words, timeout: .seconds(8))
                outcomes[outcome ?? "joined", default: 0] += 1
            }
            let newInvites = Result { try world.openInvites(1, timeout: 4) }
            print(
                "bot disk full: joins \(outcomes), new invite while full: "
                    + "\((try? newInvites.get()).map { _ in "ready" } ?? "not ready")")
            #expect(world.botIsRunning, "\(world.botOutput.suffix(2000))")

            // Space returns: the bot serves again.
            try FileSizeLimit.set(pid: world.botPID, bytes: nil)
            let fresh = try world.openInvites(1, timeout: 30)
            #expect(world.join(nameplate: fresh[0].nameplate, words: fresh[0].words) == nil)
            #expect(world.botIsRunning)
            // Every joiner the bot added used one counted use: none lost, none used twice. (The
            // bot counts a use just after the joiner has its grant: give it a moment.)
            let members = try world.owner.roster().members.count
            let (key, _) = try BotSealingKey.loadOrCreate(path: world.keyFile)
            let store = try BotStore(directory: world.botState, key: key)
            var used: [Int] = []
            let settle = Date().addingTimeInterval(5)
            repeat {
                used = try (0..<4).compactMap { n in
                    try store.invite("\(world.owner.saved.member.base64URL):load\(n)")
                }.map { $0.uses - $0.usesLeft }
                if members == 2 + used.reduce(0, +) { break }
                usleep(100_000)
            } while Date() < settle
            print("bot after recovery: \(members) members, uses taken per invite \(used)")
            // The request sent while the disk was full stayed in the inbox and was taken later.
            #expect(used.count == 4, "\(used)")
            #expect(members == 2 + used.reduce(0, +), "\(used)")
            // The operator is told the disk is the trouble, never to move a damaged state away.
            #expect(world.botOutput.contains("cannot write its state"))
            #expect(!world.botOutput.contains("damaged"))
            world.stop()
            let check = try SQLiteDatabase(path: world.botState + "/bot.sqlite").query(
                "PRAGMA integrity_check")
            #expect(check.first?.first?.text == "ok", "\(check)")
        }
    }
}
