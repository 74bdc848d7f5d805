import ClientCore
import Foundation
import JoinProtocol
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

    /// Kills the bot (SIGKILL) at each step of a join in turn and restarts it on the same state:
    /// with a use attended and nobody there; once a joiner spoke (their attempt counted) and
    /// before their confirmation went out, with the right code and with a wrong one; once a use
    /// ended and before the next was attended; and once a joiner's use was taken and they were
    /// added to the space, before their grant reached them. After every restart: no code gets a
    /// second guess (the wrong attempt is counted once and burns the invite; the right code
    /// is refused after it), and no admission is lost or made twice (each joiner who was let in
    /// is a member once, with one use taken).
    @Test func killedAtEachStepOfAJoinNoSecondGuessNoAdmissionLost() async throws {
        try await TestSupport.offPool {
            let world = try BotLoadWorld(
                program: TestSupport.productPath, relayArguments: ["--exempt-address", "127.0.0.1"],
                botArguments: ["--step-timeout", "30s"])
            defer {
                world.continueRelay()
                world.remove()
            }
            // Asked invites: the bot waits for the owner's answer once a joiner proved the code,
            // so the test chooses the moment a join goes on.
            let asked = try world.openInvites(1, uses: 3, ask: true)[0]
            let single = try world.openInvites(1, uses: 1)[0]
            let owner = world.owner.saved.member.base64URL
            let (askedID, singleID) = ("\(owner):load0", "\(owner):load1")
            let (key, _) = try BotSealingKey.loadOrCreate(path: world.keyFile)
            let disk = try BotStore(directory: world.botState, key: key)
            let membersBefore = try world.owner.roster().members.count

            // 1. A use attended, nobody there.
            try Self.wait(disk, askedID, "use 0 attended") { $0.use == 0 && $0.connection != nil }
            try world.killAndRestartBot()

            // 2. The joiner spoke and holds its confirmation: the bot is killed with the attempt
            // on disk, and the restarted bot hears the same attempt again (no second one).
            let first = Handoff<String?>()
            let killedFirst = Handoff<String?>()
            Thread.detachNewThread {
                first.put(
                    world.join(nameplate: asked.nameplate, words: asked.words, timeout: .seconds(60)) {
                        killedFirst.put(
                            Self.killAt(world, disk, askedID, "joiner 1 spoke") {
                                $0.use == 0 && $0.failures == 1
                            })
                        return true
                    })
            }
            #expect(killedFirst.take(timeout: 60) == .some(nil), "killed once joiner 1 spoke")
            try world.approveWhenAsked(invite: 0, use: 0)
            #expect(first.take(timeout: 90) == .some(nil), "joiner 1 joins across the kill")
            // 3. The use ended; the next one is not attended yet (or just so).
            try Self.wait(disk, askedID, "use 0 ended") { $0.use == 1 && $0.taken == 1 && $0.failures == 0 }
            try world.killAndRestartBot()

            // 4. Joiner 2 is let in and added to the space, and the relay (frozen) has not passed
            // their grant on: the bot dies with the use taken and the member added.
            let second = Handoff<String?>()
            Thread.detachNewThread {
                second.put(world.join(nameplate: asked.nameplate, words: asked.words, timeout: .seconds(60)))
            }
            // Frozen once the bot asks (it has joiner 2's request), before it hears the answer.
            try world.approveWhenAsked(invite: 0, use: 1) { world.pauseRelay() }
            try Self.wait(disk, askedID, "joiner 2's use taken") {
                if case .admitting(_, 1, _, _) = $0.state { return true }
                return false
            }
            let added = Date().addingTimeInterval(30)
            while try world.owner.roster().members.count < membersBefore + 2, Date() < added {
                usleep(50_000)
            }
            #expect(try world.owner.roster().members.count == membersBefore + 2, "joiner 2 added")
            world.killBot()
            world.continueRelay()
            try world.restartBot()
            #expect(second.take(timeout: 90) == .some(nil), "joiner 2 gets their grant after the restart")
            try Self.wait(disk, askedID, "use 1 ended") { $0.use == 2 && $0.taken == 2 }
            #expect(try world.owner.roster().members.count == membersBefore + 2, "nobody added twice")

            // 5. A wrong code spoke and holds its confirmation: killed with the attempt on disk, the
            // restarted bot counts it once and the invite burns; the right code gets no guess.
            let wrong = Handoff<String?>()
            let killedWrong = Handoff<String?>()
            Thread.detachNewThread {
                wrong.put(
                    world.join(
                        nameplate: single.nameplate, words: BotLoadWorld.wrongWords(for: single.words),
                        timeout: .seconds(60)
                    ) {
                        killedWrong.put(
                            Self.killAt(world, disk, singleID, "the wrong code spoke") { $0.failures == 1 })
                        return true
                    })
            }
            #expect(killedWrong.take(timeout: 60) == .some(nil), "killed once the wrong code spoke")
            let wrongOutcome = wrong.take(timeout: 90)
            #expect(
                wrongOutcome != nil && wrongOutcome! != nil,
                "the wrong code fails: \(String(describing: wrongOutcome))")
            try Self.wait(disk, singleID, "burned after one failure") {
                $0.ending == .burned && $0.failures == 1
            }
            let late = world.join(nameplate: single.nameplate, words: single.words)
            #expect(late != nil, "the right code after the wrong one is not let in")
            let askedAfter = try #require(try disk.invite(askedID)).attendant
            #expect(askedAfter.taken == 2 && askedAfter.failures == 0)
            #expect(try world.owner.roster().members.count == membersBefore + 2, "two joiners, two members")
            #expect(world.botIsRunning, "\(world.botOutput.suffix(2000))")
            world.stop()
            let check = try SQLiteDatabase(path: world.botState + "/bot.sqlite").query(
                "PRAGMA integrity_check")
            #expect(check.first?.first?.text == "ok", "\(check)")
        }
    }

    /// Waits (up to 30 s) until invite `id`'s attendant, as the bot's state file has it,
    /// passes `test`.
    private static func wait(
        _ disk: BotStore, _ id: String, _ what: String, _ test: (InviteAttendant) -> Bool
    ) throws {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let invite = try disk.invite(id), test(invite.attendant) { return }
            usleep(10_000)
        }
        let attendant = try disk.invite(id)?.attendant
        throw TestSupportError.server("not on disk: \(what) (\(String(describing: attendant)))")
    }

    /// ``wait(_:_:_:_:)``, then kills the bot and starts it again; nil when done, else why not.
    private static func killAt(
        _ world: BotLoadWorld, _ disk: BotStore, _ id: String, _ what: String,
        _ test: (InviteAttendant) -> Bool
    ) -> String? {
        do {
            try wait(disk, id, what, test)
            try world.killAndRestartBot()
            return nil
        } catch {
            return "\(error)"
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
