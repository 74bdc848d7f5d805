import ClientCore
import Foundation
import LoadHarness
import SQLite
import SidecarBot
import Support
import TestSupport
import Testing

/// Fault injection on the bot: joiners arrive on single-use and multi-use invites while
/// `eleven-bot run` is killed with SIGKILL at random moments and restarted on the same state.
/// Every join must complete or fail with a clean error; every member the bot added must have
/// taken a counted use (none given twice, no invite over its uses; a kill between counting and
/// adding may lose one use); every joiner who completed took a use; and the bot's state file must
/// pass SQLite's integrity check.
@Suite(.serialized) struct BotKillTests {
    @Test func joinsSurviveBotKillsAndNoUseIsLostOrTakenTwice() async throws {
        try await TestSupport.offPool {
            // The relay's per-address limits exempt loopback: every joiner and the restarting
            // bot come from 127.0.0.1.
            let world = try BotLoadWorld(
                program: TestSupport.productPath, relayArguments: ["--exempt-address", "127.0.0.1"],
                botArguments: ["--step-timeout", "3s"])
            defer { world.remove() }
            // Twelve single-use invites and six of two uses: twenty-four joins in all.
            let single = try world.openInvites(12, uses: 1)
            let double = try world.openInvites(6, uses: 2)
            let queue = JoinQueue(single + double + double)

            let killer = RandomKiller(seed: 17, every: 100...400, maxKills: 8) {
                try world.killAndRestartBot()
            }
            let killerDone = Handoff<Void>()
            Thread.detachNewThread {
                killer.run()
                killerDone.put(())
            }
            let workers = 3
            let done = (0..<workers).map { _ in Handoff<[(String, String?)]>() }
            for w in 0..<workers {
                Thread.detachNewThread {
                    var outcomes: [(String, String?)] = []
                    var n = 0
                    while let invite = queue.next() {
                        outcomes.append(
                            (invite.nameplate, world.join(nameplate: invite.nameplate, words: invite.words)))
                        // Joiners arrive over a few seconds, so the kills fall among them.
                        usleep(UInt32(150_000 + (w * 7 + n * 13) % 5 * 50_000))
                        n += 1
                    }
                    done[w].put(outcomes)
                }
            }
            var outcomes: [(nameplate: String, failure: String?)] = []
            for (w, box) in done.enumerated() {
                guard let some = box.take(timeout: 240) else {
                    Issue.record("worker \(w) did not finish in 240 s")
                    continue
                }
                outcomes += some.map { (nameplate: $0.0, failure: $0.1) }
            }
            killer.stop()
            #expect(killerDone.take(timeout: 60) != nil, "the killer stops")
            let completed = outcomes.filter { $0.failure == nil }
            let failures = outcomes.compactMap(\.failure)
            #expect(killer.restartFailure == nil, "the bot restarts: \(killer.restartFailure ?? "")")
            #expect(killer.kills >= 3, "the bot was killed while joiners arrived")
            #expect(world.botIsRunning, "\(world.botOutput.suffix(2000))")
            #expect(outcomes.count == 24)
            #expect(completed.count >= 12, "joins finish across restarts: \(failures)")

            // The bot counts a use just after the joiner has its grant: give it a moment.
            let (key, _) = try BotSealingKey.loadOrCreate(path: world.keyFile)
            let store = try BotStore(directory: world.botState, key: key)
            let owner = world.owner.saved.member.base64URL
            var members = 0
            var taken: [String: Int] = [:]
            let settle = Date().addingTimeInterval(10)
            repeat {
                members = try world.owner.roster().members.count
                taken = [:]
                for n in 0..<18 {
                    guard let invite = try store.invite("\(owner):load\(n)"), let nameplate = invite.nameplate
                    else { continue }
                    #expect(
                        invite.usesLeft >= 0 && invite.usesLeft <= invite.uses, "invite \(n) over its uses")
                    taken[nameplate] = invite.uses - invite.usesLeft
                }
                if members - 2 == taken.values.reduce(0, +) { break }
                usleep(100_000)
            } while Date() < settle
            print(
                "bot kill -9: \(outcomes.count) joins, \(killer.kills) kills, \(completed.count) completed, "
                    + "\(failures.count) failed cleanly \(failures), \(members - 2) members added, "
                    + "uses taken \(taken.values.reduce(0, +))")
            #expect(taken.count == 18, "every invite is still known to the bot")
            // A use is counted before its joiner is added: a kill in between may lose that use
            // (at most one per kill), but no member is ever added without a counted use.
            let added = members - 2
            let counted = taken.values.reduce(0, +)
            #expect(added <= counted, "every member added took a counted use")
            #expect(counted - added <= killer.kills, "a use is lost only to a kill, one at most per kill")
            for (nameplate, joins) in Dictionary(grouping: completed, by: \.nameplate) {
                #expect((taken[nameplate] ?? 0) >= joins.count, "a completed join took its use")
            }
            world.stop()
            let check = try SQLiteDatabase(path: world.botState + "/bot.sqlite").query(
                "PRAGMA integrity_check")
            #expect(check.first?.first?.text == "ok", "\(check)")
        }
    }
}

/// The invites still to be joined, handed out one at a time to the worker threads.
private final class JoinQueue: @unchecked Sendable {
    private let lock = NSLock()
    private var invites: [BotLoadWorld.Invite]

    init(_ invites: [BotLoadWorld.Invite]) { self.invites = invites }

    func next() -> BotLoadWorld.Invite? {
        lock.withLock { invites.isEmpty ? nil : invites.removeFirst() }
    }
}
