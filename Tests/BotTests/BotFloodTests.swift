import Foundation
import LoadHarness
import TestSupport
import Testing

/// Hostile joiners against `eleven-bot run` with the real relay (default abuse limits), server
/// and bot on loopback.
@Suite(.serialized) struct BotFloodTests {
    /// Many concurrent wrong-code joiners on the bot's open invites while honest joiners use
    /// other invites: every wrong guess burns only the invite it hit (one guess per invite), the
    /// bot stays up with bounded threads and memory, and every honest join succeeds.
    @Test func wrongCodeFloodBurnsOnlyItsInvitesAndHonestJoinsSucceed() async throws {
        try await TestSupport.offPool {
            let world = try BotLoadWorld(
                program: TestSupport.productPath, botArguments: ["--step-timeout", "5s"])
            defer { world.remove() }
            let victims = try world.openInvites(10)
            let honest = try world.openInvites(4, uses: 3)
            let before = ProcessSample(pid: world.botPID)

            let guessesPerInvite = 4
            let wrong = Tally()
            let good = Tally()
            let peak = Peak()
            let group = DispatchGroup()
            let started = Date()
            for invite in victims {
                for _ in 0..<guessesPerInvite {
                    group.enter()
                    Thread.detachNewThread {
                        let guess = BotLoadWorld.wrongWords(for: invite.words)
                        wrong.add(
                            world.join(nameplate: invite.nameplate, words: guess, timeout: .seconds(6))
                                ?? "joined")
                        group.leave()
                    }
                }
            }
            for invite in honest {
                group.enter()
                Thread.detachNewThread {
                    for _ in 0..<2 {
                        good.add(world.join(nameplate: invite.nameplate, words: invite.words) ?? "joined")
                    }
                    group.leave()
                }
            }
            while group.wait(timeout: .now() + 0.2) == .timedOut {
                peak.observe(ProcessSample(pid: world.botPID))
                #expect(Date().timeIntervalSince(started) < 60, "the flood did not finish")
                if Date().timeIntervalSince(started) > 60 { break }
            }
            let elapsed = Date().timeIntervalSince(started)
            Thread.sleep(forTimeInterval: 0.5)
            let after = ProcessSample(pid: world.botPID)
            let counters = try world.botCounters()
            print(
                """
                wrong-code flood: \(victims.count) invites × \(guessesPerInvite) concurrent wrong guesses, \
                \(honest.count) honest invites × 2 joins, \(String(format: "%.1f", elapsed)) s
                  wrong joiners: \(wrong.counts.sorted { $0.key < $1.key })
                  honest joiners: \(good.counts.sorted { $0.key < $1.key })
                  bot counters: \(counters.sorted { $0.key < $1.key })
                  bot before: \(before); peak: \(peak.value); after: \(after)
                """)

            // Not one wrong guess got in; every honest join did.
            #expect(wrong.counts["joined"] == nil)
            #expect(wrong.total == victims.count * guessesPerInvite)
            #expect(good.counts == ["joined": honest.count * 2], "\(good.counts)")
            // Each victim invite burned once (cap 1), by one guess; the honest ones did not.
            #expect(counters["burned"] == victims.count, "\(counters)")
            #expect(counters["wrong_code"] == victims.count, "\(counters)")
            #expect(counters["joined"] == honest.count * 2, "\(counters)")
            #expect(counters["invites_burned"] == victims.count, "\(counters)")
            #expect(counters["invites_open"] == honest.count, "\(counters)")
            // The bot is up, and its threads and memory stay bounded.
            #expect(world.botIsRunning)
            #expect(peak.value.threads <= before.threads + victims.count + honest.count + 8, "\(peak.value)")
            #expect(after.rssKB < before.rssKB + 64 * 1024, "\(before) → \(after)")
            // The honest invites still serve their last use.
            #expect(world.join(nameplate: honest[0].nameplate, words: honest[0].words) == nil)
        }
    }
}

extension BotFloodTests {
    /// The bot's admission rate limit (`--joins-per-minute 3`) holds while wrong codes flood
    /// other invites: wrong guesses burn their invites and never count against the limit, the
    /// first three honest joiners get in, the next are refused `busy` (their invites stay open
    /// for later), and nobody beyond the limit is admitted.
    @Test func theJoinRateLimitHoldsUnderAWrongCodeFlood() async throws {
        try await TestSupport.offPool {
            let world = try BotLoadWorld(
                program: TestSupport.productPath,
                botArguments: ["--step-timeout", "5s", "--joins-per-minute", "3"])
            defer { world.remove() }
            let victims = try world.openInvites(6)
            let honest = try world.openInvites(5)
            let wrong = Tally()
            let group = DispatchGroup()
            for invite in victims {
                group.enter()
                Thread.detachNewThread {
                    let guess = BotLoadWorld.wrongWords(for: invite.words)
                    wrong.add(
                        world.join(nameplate: invite.nameplate, words: guess, timeout: .seconds(8))
                            ?? "joined")
                    group.leave()
                }
            }
            let good = Tally()
            for invite in honest {
                good.add(world.join(nameplate: invite.nameplate, words: invite.words) ?? "joined")
            }
            _ = group.wait(timeout: .now() + 30)
            let counters = try world.botCounters()
            let members = try world.owner.roster().members.count
            print(
                """
                rate limit under a wrong-code flood: wrong \(wrong.counts), honest \(good.counts), \
                \(members) members, bot counters \(counters.sorted { $0.key < $1.key })
                """)
            #expect(wrong.counts["joined"] == nil)
            #expect(counters["burned"] == victims.count, "\(counters)")
            #expect(good.counts == ["joined": 3, "refused_busy": 2], "\(good.counts)")
            #expect(members == 2 + 3)
            #expect(counters["invites_open"] == 2, "\(counters)")
            #expect(world.botIsRunning)
        }
    }
}

/// Outcomes by code, from many threads.
final class Tally: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String: Int] = [:]

    func add(_ outcome: String) { lock.withLock { storage[outcome, default: 0] += 1 } }
    var counts: [String: Int] { lock.withLock { storage } }
    var total: Int { counts.values.reduce(0, +) }
}

/// The largest thread count and memory seen.
final class Peak: @unchecked Sendable {
    private let lock = NSLock()
    private var sample: ProcessSample?

    func observe(_ next: ProcessSample) {
        lock.withLock {
            guard let current = sample else {
                sample = next
                return
            }
            if next.threads > current.threads || next.rssKB > current.rssKB {
                sample = ProcessSample(
                    rssKB: max(next.rssKB, current.rssKB), fds: max(next.fds, current.fds),
                    threads: max(next.threads, current.threads))
            }
        }
    }

    var value: ProcessSample { lock.withLock { sample ?? ProcessSample(rssKB: 0, fds: 0, threads: 0) } }
}
