import ClientCore
import Foundation
import LoadHarness
import Support
import TestSupport

// `eleven-bench soak`: eleven-relay (SQLite), eleven-server and eleven-bot under a steady mixed
// load (joins through the bot, messages written and read back, wrong codes, abandoned claims
// that reconnect), with the resident memory and open descriptors of each server process sampled
// from /proc. Prints the curves, every error beyond the injected ones, and a growth verdict;
// exits 1 on an error or a clear growth trend.

private let soakUsage = """
    usage: eleven-bench soak [--minutes N | --seconds S] [--sample S]

      --minutes N   how long to run (default 5; 30 on a quiet machine)
      --seconds S   how long to run, in seconds (for CI: 20)
      --sample S    seconds between samples (default 10)
    """

func runSoakBench(_ arguments: [String]) -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        print(soakUsage)
        return 0
    }
    var seconds = 300.0
    var interval = 10.0
    var index = 0
    while index < arguments.count {
        let value = index + 1 < arguments.count ? Double(arguments[index + 1]) : nil
        switch (arguments[index], value) {
        case ("--minutes", let v?): seconds = min(max(v, 0.1), 600) * 60
        case ("--seconds", let v?): seconds = min(max(v, 5), 36_000)
        case ("--sample", let v?): interval = min(max(v, 0.5), 600)
        default:
            FileHandle.standardError.write(
                Data(
                    benchUsageError("unknown option or bad value '\(arguments[index])'", usage: soakUsage)
                        .utf8))
            return 2
        }
        index += 2
    }
    let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()
    let world: BotLoadWorld
    do {
        world = try BotLoadWorld(
            program: { bin.appendingPathComponent($0).path },
            // Every client is on loopback, one address: the per-address limits (the wrong-code
            // flood test exercises them) would throttle the steady load to one invite a second.
            relayArguments: ["--exempt-address", "127.0.0.1"], botArguments: ["--step-timeout", "5s"])
    } catch {
        FileHandle.standardError.write(Data("eleven-bench soak: \(error)\n".utf8))
        return 1
    }
    defer { world.remove() }
    print(
        String(
            format: "eleven-bench soak: relay + server + bot on loopback for %.0f s, sampled every %.0f s",
            seconds, interval))
    let load = SoakLoad(world: world, until: Date().addingTimeInterval(seconds))
    let threads = [load.joins, load.wrongCodes, load.messages, load.reconnects].map { body in
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            body()
            done.signal()
        }
        return done
    }
    var samples: [(at: Double, values: [ProcessSample])] = []
    let start = Date()
    while true {
        let at = Date().timeIntervalSince(start)
        let values = world.pids.map { ProcessSample(pid: $0.pid) }
        samples.append((at, values))
        print(
            String(format: "%6.0f s  ", at)
                + zip(world.pids, values).map {
                    String(
                        format: "%@ %6.1f MB %3d fds %3d thr", $0.name, Double($1.rssKB) / 1024, $1.fds,
                        $1.threads)
                }.joined(separator: "   ") + "   \(load.progress)")
        for process in world.pids where kill(process.pid, 0) != 0 || !world.botIsRunning {
            load.error("\(process.name) exited")
        }
        fflush(nil)  // the curve as it goes, also into a file
        if at >= seconds { break }
        Thread.sleep(forTimeInterval: min(interval, max(0.1, seconds - at)))
    }
    for done in threads { done.wait() }
    // Descriptors of the final state, once the load has drained.
    Thread.sleep(forTimeInterval: 1)
    samples.append((Date().timeIntervalSince(start), world.pids.map { ProcessSample(pid: $0.pid) }))

    print("totals: \(load.progress)")
    let middle = samples[samples.count / 2]
    var growing: [String] = []
    for (n, process) in world.pids.enumerated() {
        let first = samples[min(1, samples.count - 1)].values[n]
        let last = samples[samples.count - 1].values[n]
        print(
            String(
                format: "%@: start %.1f MB %d fds, middle %.1f MB %d fds, end %.1f MB %d fds", process.name,
                Double(first.rssKB) / 1024, first.fds, Double(middle.values[n].rssKB) / 1024,
                middle.values[n].fds,
                Double(last.rssKB) / 1024, last.fds))
        if let trend = growthTrend(samples.dropFirst().map { $0.values[n] }) {
            growing.append("\(process.name): \(trend)")
        }
    }
    let errors = load.errors
    print("errors beyond the injected ones: \(errors.count)")
    for (message, count) in Dictionary(errors.map { ($0, 1) }, uniquingKeysWith: +).sorted(by: {
        $0.value > $1.value
    })
    .prefix(10) {
        print("  \(count)× \(message)")
    }
    print("growth: \(growing.isEmpty ? "none" : growing.joined(separator: "; "))")
    if !errors.isEmpty {
        // Keep the bot's and the relay's logs for a post-mortem.
        let kept = FileManager.default.temporaryDirectory.appendingPathComponent("eleven-soak-\(getpid())")
        try? FileManager.default.createDirectory(at: kept, withIntermediateDirectories: true)
        try? world.botOutput.write(
            to: kept.appendingPathComponent("bot.log"), atomically: true, encoding: .utf8)
        try? world.relay.log.write(
            to: kept.appendingPathComponent("relay.log"), atomically: true, encoding: .utf8)
        print("logs kept in \(kept.path)")
    }
    return errors.isEmpty && growing.isEmpty ? 0 : 1
}

/// A clear growth trend in a series of samples: descriptors that end more than 16 above where
/// they started and above every sample of the first half, or memory whose last third averages
/// 25 % + 8 MB above its first third.
func growthTrend(_ series: [ProcessSample]) -> String? {
    guard series.count >= 3 else { return nil }
    let third = max(1, series.count / 3)
    let early = series.prefix(third)
    let late = series.suffix(third)
    let earlyRSS = Double(early.map(\.rssKB).reduce(0, +)) / Double(early.count)
    let lateRSS = Double(late.map(\.rssKB).reduce(0, +)) / Double(late.count)
    if lateRSS > earlyRSS * 1.25 + 8 * 1024 {
        return String(format: "memory %.1f → %.1f MB", earlyRSS / 1024, lateRSS / 1024)
    }
    let firstHalfMax = series.prefix(series.count / 2).map(\.fds).max() ?? 0
    if let last = series.last?.fds, last > (series.first?.fds ?? 0) + 16, last > firstHalfMax {
        return "descriptors \(series.first?.fds ?? 0) → \(last)"
    }
    return nil
}

/// The load: four loops until a deadline, counting what they did and every unexpected error.
private final class SoakLoad: @unchecked Sendable {
    let world: BotLoadWorld
    let until: Date
    private let tally = Locked((counts: [String: Int](), failures: [String]()))
    /// Invites are opened by one thread at a time (they share the owner's inbox cursor).
    private let inviteLock = Locked(())

    init(world: BotLoadWorld, until: Date) {
        self.world = world
        self.until = until
    }

    private var running: Bool { Date() < until }

    func count(_ what: String) { tally.withLock { $0.counts[what, default: 0] += 1 } }
    func error(_ message: String) { tally.withLock { $0.failures.append(message) } }
    var errors: [String] { tally.withLock { $0.failures } }
    var progress: String {
        tally.withLock {
            $0.counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }
    }

    private func invites(_ count: Int) -> [BotLoadWorld.Invite] {
        do {
            return try inviteLock.withLock { _ in try world.openInvites(count) }
        } catch {
            self.error("opening invites: \(error)")
            Thread.sleep(forTimeInterval: 1)
            return []
        }
    }

    /// Honest joins through the bot: each must succeed.
    func joins() {
        while running {
            for invite in invites(2) {
                if let failure = world.join(nameplate: invite.nameplate, words: invite.words) {
                    error("honest join: \(failure)")
                } else {
                    count("joins")
                }
            }
        }
    }

    /// A wrong guess at a fresh invite (injected): it must fail and burn the invite.
    func wrongCodes() {
        while running {
            for invite in invites(1) {
                let guess = BotLoadWorld.wrongWords(for: invite.words)
                if world.join(nameplate: invite.nameplate, words: guess, timeout: .seconds(10)) == nil {
                    error("a wrong code joined")
                } else {
                    count("wrong_codes")
                }
            }
            Thread.sleep(forTimeInterval: 0.5)
        }
    }

    /// The owner writes a message and reads it back.
    func messages() {
        var since: Int64 = 0
        while running {
            do {
                let roster = try world.owner.roster()
                let keys = try world.owner.threadKeys(roster: roster)
                let text = "soak \(Date().timeIntervalSince1970)"
                _ = try world.owner.send(text, to: world.thread, keys: keys)
                let read = try world.owner.read(world.thread, since: since, roster: roster, keys: keys)
                since = read.next
                if read.messages.contains(where: { $0.text == text }) {
                    count("messages")
                } else {
                    error("a message written was not read back")
                }
            } catch {
                self.error("messages: \(error)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// A claim on a nameplate nobody attends, dropped after a moment (injected): the client
    /// goes away and comes back, again and again.
    func reconnects() {
        var plate = 900_000
        while running {
            plate += 1
            let outcome = world.join(
                nameplate: "\(plate)", words: "abandoned-claim", timeout: .milliseconds(300))
            if outcome == nil { error("an unattended claim joined") } else { count("reconnects") }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }
}
