import ClientCore
import Foundation
import JoinProtocol
import PAKE
import SidecarBot
import SpaceModel
import Support
import TestSupport
import WordCodes

// `eleven-bench bot`: joins per second that `eleven-bot run` sustains with 20 concurrent joiners
// (each on an invite of its own, used again and again), for spaces of 1, 10 and 100 threads,
// with p50/p99 join latency (claim to a grant verified against the space server's member list,
// as `eleven join` does it, without saving) and the bot's memory. The reference, in
// the same run: the same joins attended one at a time by an inviter's own device (the code
// `eleven approve` runs), on the 10-thread space.

private let botUsage = """
    usage: eleven-bench bot [--seconds S] [--joiners N] [--threads LIST] [--phases] [--sync full|normal]

      --seconds S     measuring time per row (default 3)
      --joiners N     concurrent joiners, each on its own invite (default 20)
      --threads LIST  space sizes in threads (default 1,10,100)
      --phases        per row, p50/p99 of each phase of a join, and what the slowest 1% spent
                      in each
      --sync MODE     the relay's and the space server's --sync (default full: every commit
                      synced to the disk before it is answered; normal: a crash of the process
                      loses nothing, a power loss may lose the last commits)

    Under each row: the disk's own sync latency measured beside it (a 4 KiB write and one
    fdatasync every 20 ms in the databases' directory), which every durable commit waits for.

    The databases go in $TMPDIR (default /tmp); TMPDIR=/dev/shm puts them on tmpfs, where the
    rows are bound by the CPU and issue #23's throughput target applies (at 10 threads at
    least 150 joins/s with p99 under 250 ms). The CPU target (at most 7 ms per join, summed
    over the bot, the space server, the joiners and the relay) applies on either.
    """

func runBotBench(_ arguments: [String]) -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        print(botUsage)
        return 0
    }
    var seconds = 3.0
    var joiners = 20
    var sizes = [1, 10, 100]
    var phases = false
    var sync = "full"
    var index = 0
    while index < arguments.count {
        if arguments[index] == "--phases" {
            phases = true
            index += 1
            continue
        }
        let value = index + 1 < arguments.count ? arguments[index + 1] : nil
        switch (arguments[index], value) {
        case ("--seconds", let v?): seconds = min(max(Double(v) ?? seconds, 0.5), 60)
        case ("--joiners", let v?): joiners = min(max(Int(v) ?? joiners, 1), 200)
        case ("--sync", let v?) where v == "full" || v == "normal": sync = v
        case ("--threads", let v?):
            sizes = v.split(separator: ",").compactMap { Int($0) }.filter { (1...500).contains($0) }
        default:
            FileHandle.standardError.write(
                Data(benchUsageError("unknown option '\(arguments[index])'", usage: botUsage).utf8))
            return 2
        }
        index += 2
    }
    let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()
    let programs = ["eleven-relay", "eleven-server", "eleven-bot"].map { bin.appendingPathComponent($0).path }
    for path in programs where !FileManager.default.isExecutableFile(atPath: path) {
        return botFail("\(path) not found; build it (swift build -c release --product …)")
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "eleven-bench-bot-\(getpid())")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var children: [ChildProcess] = []
    defer {
        for child in children { child.finish(timeout: 5) }
        try? FileManager.default.removeItem(at: directory)
    }
    guard
        let relay = try? ChildProcess(
            programs[0],
            [
                "--listen", "127.0.0.1:0", "--db", directory.path + "/relay.sqlite", "--no-limits", "--sync",
                sync,
            ]),
        let server = try? ChildProcess(
            programs[1],
            [
                "--listen", "127.0.0.1:0", "--db", directory.path + "/server.sqlite", "--quiet", "--sync",
                sync,
            ])
    else { return botFail("eleven-relay or eleven-server did not start") }
    children += [relay, server]
    guard let relayURL = try? relay.value(afterPrefix: "eleven-relay listening on ", timeout: 20),
        let serverURL = try? server.value(afterPrefix: "eleven-server listening on ", timeout: 20)
    else { return botFail("eleven-relay or eleven-server did not start") }

    print(
        "eleven-bench bot: \(joiners) concurrent joiners, \(seconds) s per row, relay and server on loopback, "
            + "--sync \(sync), databases in \(directory.deletingLastPathComponent().path)")
    print(
        "threads  joins   joins/s   p50 ms   p99 ms   failed   bot RSS MB   CPU ms/join: bot  server  joiners  relay"
    )
    var results: [Int: Double] = [:]
    var tails: [Int: Double] = [:]
    for size in sizes {
        do {
            let row = try measureBotRow(
                threads: size, joiners: joiners, seconds: seconds, relayURL: relayURL, serverURL: serverURL,
                directory: directory, botProgram: programs[2], serverPID: server.pid,
                relayPID: relay.pid)
            results[size] = row.perSecond
            tails[size] = percentile(row.latencies, 0.99)
            defer { if phases { printPhases(row.phases) } }
            print(
                String(
                    format: "%7d  %5d  %8.1f  %7.1f  %7.1f   %6d   %10.1f   %16.1f  %6.1f  %7.1f  %5.1f",
                    size,
                    row.latencies.count, row.perSecond, percentile(row.latencies, 0.5),
                    percentile(row.latencies, 0.99), row.failures, row.rssMB, row.botCPU, row.serverCPU,
                    row.joinerCPU, row.relayCPU))
            print("         " + row.disk)
            // Issue #23's targets: at most 64 KiB of WAL per join on the space server and 32 KiB
            // on the relay. What a process writes to storage includes its WAL and checkpoints
            // (and logs), so within it means within the target; on tmpfs the kernel counts nothing.
            print(
                String(
                    format:
                        "         written to storage per join: server %.1f KiB (target <= 64: %@), relay %.1f KiB "
                        + "(target <= 32: %@), bot %.1f KiB",
                    row.serverWritten / 1024, row.serverWritten <= 64 * 1024 ? "met" : "MISSED",
                    row.relayWritten / 1024, row.relayWritten <= 32 * 1024 ? "met" : "MISSED",
                    row.botWritten / 1024))
            // Every process of the run shares this machine's cores: their CPU per join bounds
            // the rate, and with the joiners in a closed loop the rate bounds the mean latency.
            let cpu = row.botCPU + row.serverCPU + row.joinerCPU + row.relayCPU
            let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
            print(
                String(
                    format: "         CPU per join, all four processes: %.1f ms (target <= 7: %@)", cpu,
                    cpu <= 7 ? "met" : "MISSED"))
            if cpu > 0 {
                let ceiling = cores * 1000 / cpu
                print(
                    String(
                        format:
                            "         CPU ceiling: %.0f cores / %.1f ms per join = %.1f joins/s, where %d joiners "
                            + "wait %.1f ms on average (rate here: %.0f%% of it)",
                        cores, cpu, ceiling, joiners, Double(joiners) * 1000 / ceiling,
                        row.perSecond / ceiling * 100))
            }
        } catch {
            print(String(format: "%7d  failed: %@", size, "\(error)"))
        }
    }
    if let reference = try? measureSelfAttended(
        threads: 10, seconds: seconds, relayURL: relayURL, serverURL: serverURL)
    {
        print(
            String(
                format:
                    "reference: inviter's own device attending one joiner at a time, 10 threads: %.1f joins/s, "
                    + "p50 %.1f ms", reference.perSecond, percentile(reference.latencies, 0.5)))
        if let bot = results[10] {
            print(String(format: "ratio bot / reference at 10 threads: %.2f×", bot / reference.perSecond))
        }
    }
    if let ten = results[10], let tail = tails[10] {
        // Issue #23: 150 joins/s on tmpfs, where the disk does not set the pace; on a disk the
        // earlier target of 100 joins/s still says how far the disk holds the rows back.
        let tmpfs = isTmpfs(directory.path)
        let floor = tmpfs ? 150.0 : 100.0
        print(
            String(
                format:
                    "target ≥ %.0f joins/s and p99 < 250 ms with 10 threads (databases on %@): %@ "
                    + "(%.1f joins/s, p99 %.1f ms)",
                floor, tmpfs ? "tmpfs" : "a disk", ten >= floor && tail < 250 ? "met" : "not met", ten, tail))
    }
    return 0
}

/// Whether `path` is on a tmpfs: the file system of the longest mount point above it.
private func isTmpfs(_ path: String) -> Bool {
    guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return false }
    let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    var best = (length: -1, tmpfs: false)
    for line in mounts.split(separator: "\n") {
        let fields = line.split(separator: " ")
        guard fields.count >= 3 else { continue }
        let point = String(fields[1])
        let inside = point == "/" || resolved == point || resolved.hasPrefix(point + "/")
        if inside, point.count > best.length { best = (point.count, fields[2] == "tmpfs") }
    }
    return best.tmpfs
}

private struct BotRow {
    var latencies: [Double] = []
    /// Per successful join, the milliseconds of each of ``JoinPhases/names``.
    var phases: [[Double]] = []
    var failures = 0
    var perSecond = 0.0
    var rssMB = 0.0
    /// CPU time (user + system) the bot and the space server spent per join while measuring.
    var botCPU = 0.0
    var serverCPU = 0.0
    /// The same for this process, whose threads are the joiners, and for the relay.
    var joinerCPU = 0.0
    var relayCPU = 0.0
    /// Bytes each server process wrote to storage per join (WAL, checkpoints, logs).
    var serverWritten = 0.0
    var relayWritten = 0.0
    var botWritten = 0.0
    /// What ``DiskProbe`` saw during the row.
    var disk = ""
}

private struct BenchError: Error, CustomStringConvertible {
    let description: String
}

/// A space of `threads` threads with one message each, owned by a fresh identity.
private func makeSpace(threads: Int, serverURL: String) throws -> SpaceSession {
    let owner = DeviceIdentity.generate()
    let saved = try SpaceSession.createSpace(
        name: "Bench \(threads)", server: serverURL, identity: owner, ownerName: "Owner")
    let session = try SpaceSession(saved: saved, identity: owner)
    for n in 1..<max(1, threads) { _ = try session.createThread(named: "t\(n)") }
    let roster = try session.roster()
    let keys = try session.threadKeys(roster: roster)
    for thread in keys.keys { try session.send("hello", to: thread, keys: keys) }
    return session
}

/// Uses of each joiner's invite: the most the bot accepts (``BotConfiguration/maxUses``).
private let usesPerInvite = BotConfiguration(relay: "").maxUses

private func measureBotRow(
    threads: Int, joiners: Int, seconds: Double, relayURL: String, serverURL: String, directory: URL,
    botProgram: String, serverPID: Int32, relayPID: Int32
) throws -> BotRow {
    let owner = try makeSpace(threads: threads, serverURL: serverURL)
    // The bot: a member with the invite and attendant rights, its state sealed under a key file.
    let state = directory.appendingPathComponent("bot-\(threads)").path
    let keyFile = directory.appendingPathComponent("bot-\(threads).key").path
    let (key, _) = try BotSealingKey.loadOrCreate(path: keyFile)
    let store = try BotStore(directory: state, key: key, create: true)
    let identity = try store.identity(create: true)
    let record = try owner.addMember(keys: identity.publicKeys, name: "Bot", rights: [.invite, .attendant])
    try store.saveSpace(
        try SpaceSession.join(
            server: serverURL, space: owner.saved.space, member: record.id, identity: identity))
    let bot = try ChildProcess(
        botProgram,
        ["run", "--state", state, "--key-file", keyFile, "--relay", relayURL, "--joins-per-minute", "0"])
    defer { bot.stop(signal: SIGKILL) }
    guard (try? bot.value(afterPrefix: "{", timeout: 20)) != nil else {
        throw BenchError(description: "eleven-bot did not start")
    }

    // One long-lived invite per joiner.
    let now = Int64(Date().timeIntervalSince1970)
    var words: [String: String] = [:]
    for n in 0..<joiners {
        let id = "bench\(n)"
        words[id] = Code.generate(nameplate: Nameplate(1)!, wordCount: 2).secretWords
        try owner.send(
            .inviteRequest(
                id: id, words: words[id] ?? "", uses: usesPerInvite, expiresAt: now + 3600, maxFailures: 1,
                ask: false,
                inviterName: "Owner"), to: record)
    }
    var codes: [(nameplate: String, words: String)] = []
    var since: Int64 = 0
    let setupDeadline = Date().addingTimeInterval(30)
    while codes.count < joiners, Date() < setupDeadline {
        let page = try owner.receiveNotes(since: since)
        since = page.next
        for case .success(let note) in page.notes.map(\.content) where note.type == .inviteReady {
            guard let nameplate = note.nameplate, let secret = words[note.id] else { continue }
            var signed = AttendantNote(.inviteRecord, id: note.id)
            signed.invite = owner.identity.signInvite(
                space: owner.saved.space, inviter: owner.saved.member, nameplate: nameplate, createdAt: now,
                expiresAt: now + 3600, uses: usesPerInvite)
            try owner.send(signed, to: record)
            codes.append((nameplate, secret))
        }
        if page.notes.isEmpty { usleep(20_000) }
    }
    guard codes.count == joiners else {
        throw BenchError(description: "the bot readied \(codes.count) invites")
    }
    usleep(300_000)

    let results = BenchResults()
    let probe = DiskProbe(directory: directory)
    let cpuBefore = (
        ProcessSample.cpuMilliseconds(pid: bot.pid), ProcessSample.cpuMilliseconds(pid: serverPID),
        ProcessSample.cpuMilliseconds(pid: getpid()), ProcessSample.cpuMilliseconds(pid: relayPID)
    )
    let writtenBefore = [bot.pid, serverPID, relayPID].map(ProcessSample.storageWrittenBytes(pid:))
    let start = ContinuousClock.now
    let end = start + .milliseconds(Int(seconds * 1000))
    let group = DispatchGroup()
    for code in codes {
        group.enter()
        Thread.detachNewThread {
            // An invite's last use ends this joiner's row early (a wait for an answer that
            // would never come is no join latency).
            for _ in 0..<usesPerInvite where ContinuousClock.now < end {
                let joiner = DeviceIdentity.generate()
                let began = ContinuousClock.now
                var marks = JoinPhases(began)
                do {
                    let grant = try JoinRunner.join(
                        relayURL: relayURL, nameplate: Rendezvous.Nameplate(code.nameplate),
                        words: code.words,
                        request: JoinRequest(
                            displayName: "Joiner", deviceLabel: "bench",
                            publicKeys: JoinerKeys(joiner.publicKeys),
                            grantVersion: JoinGrant.acceptedVersions.upperBound),
                        timeout: .seconds(30), firstAnswer: .seconds(10), step: { marks.mark($0) }
                    ) { _ in }
                    marks.mark(at: 4)
                    _ = try JoinGrant(decoding: grant).open(
                        identity: joiner, deviceLabel: "bench", now: Int64(Date().timeIntervalSince1970),
                        nameplate: code.nameplate)
                    marks.mark(at: 5)
                    results.add(milliseconds(ContinuousClock.now - began), phases: marks.durations)
                } catch {
                    results.fail("\(error)")
                }
            }
            group.leave()
        }
    }
    group.wait()
    let elapsed = milliseconds(ContinuousClock.now - start) / 1000
    var row = BotRow()
    row.disk = "disk beside the row: " + probe.stop()
    (row.latencies, row.failures) = results.snapshot()
    row.phases = results.phases
    row.perSecond = Double(row.latencies.count) / elapsed
    row.rssMB = Double(bot.sample.rssKB) / 1024
    let joins = Double(max(1, row.latencies.count))
    row.botCPU = (ProcessSample.cpuMilliseconds(pid: bot.pid) - cpuBefore.0) / joins
    row.serverCPU = (ProcessSample.cpuMilliseconds(pid: serverPID) - cpuBefore.1) / joins
    row.joinerCPU = (ProcessSample.cpuMilliseconds(pid: getpid()) - cpuBefore.2) / joins
    row.relayCPU = (ProcessSample.cpuMilliseconds(pid: relayPID) - cpuBefore.3) / joins
    let written = zip([bot.pid, serverPID, relayPID], writtenBefore).map {
        (ProcessSample.storageWrittenBytes(pid: $0) - $1) / joins
    }
    (row.botWritten, row.serverWritten, row.relayWritten) = (written[0], written[1], written[2])
    for (reason, count) in results.reasons.sorted(by: { $0.value > $1.value }).prefix(3) {
        FileHandle.standardError.write(Data("  \(count)× \(reason)\n".utf8))
    }
    return row
}

/// The reference: the inviter's own device attends (`JoinRunner.attend` and `SpaceSession.admit`,
/// as `eleven invite --short --yes` does), one joiner at a time.
private func measureSelfAttended(threads: Int, seconds: Double, relayURL: String, serverURL: String) throws
    -> BotRow
{
    let owner = try makeSpace(threads: threads, serverURL: serverURL)
    let results = BenchResults()
    let start = ContinuousClock.now
    let end = start + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < end {
        let words = Code.generate(nameplate: Nameplate(1)!, wordCount: 2).secretWords
        let plate = Handoff<String>()
        let joined = Handoff<Double>()
        var attended: String?
        Thread.detachNewThread {
            guard let nameplate = plate.take(timeout: 20) else { return joined.put(-1) }
            let joiner = DeviceIdentity.generate()
            let began = ContinuousClock.now
            do {
                let grant = try JoinRunner.join(
                    relayURL: relayURL, nameplate: Rendezvous.Nameplate(nameplate), words: words,
                    request: JoinRequest(
                        displayName: "Joiner", deviceLabel: "bench",
                        publicKeys: JoinerKeys(joiner.publicKeys),
                        grantVersion: JoinGrant.acceptedVersions.upperBound),
                    timeout: .seconds(30)
                ) { _ in }
                _ = try JoinGrant(decoding: grant).open(
                    identity: joiner, deviceLabel: "bench", now: Int64(Date().timeIntervalSince1970),
                    nameplate: nameplate)
                joined.put(milliseconds(ContinuousClock.now - began))
            } catch {
                joined.put(-1)
            }
        }
        _ = try? JoinRunner.attend(
            relayURL: relayURL, words: words, inviterName: "Owner", announceWaiting: false,
            timeout: .seconds(30),
            onNameplate: {
                attended = $0.value
                plate.put($0.value)
            },
            decide: { request, _ in
                let now = Int64(Date().timeIntervalSince1970)
                let invite = owner.identity.signInvite(
                    space: owner.saved.space, inviter: owner.saved.member, nameplate: attended ?? "",
                    createdAt: now,
                    expiresAt: now + 600, uses: 1)
                guard let (grant, _) = try? owner.admit(request: request, invite: invite) else {
                    return .refuse(reason: .unavailable, message: "bench")
                }
                return .approve(grant: grant.encoded())
            })
        let latency = joined.take(timeout: 30) ?? -1
        if latency >= 0 { results.add(latency) } else { results.fail() }
    }
    var row = BotRow()
    (row.latencies, row.failures) = results.snapshot()
    row.perSecond = Double(row.latencies.count) / (milliseconds(ContinuousClock.now - start) / 1000)
    return row
}

/// Latencies and failures collected from the joiner threads.
private final class BenchResults: @unchecked Sendable {
    private struct Collected {
        var latencies: [Double] = []
        var failures = 0
        var phases: [[Double]] = []
        var reasons: [String: Int] = [:]
    }

    private let collected = Locked(Collected())

    func add(_ latency: Double, phases durations: [Double]? = nil) {
        collected.withLock {
            $0.latencies.append(latency)
            if let durations { $0.phases.append(durations) }
        }
    }

    var phases: [[Double]] { collected.withLock { $0.phases } }
    var reasons: [String: Int] { collected.withLock { $0.reasons } }

    func fail(_ reason: String = "") {
        collected.withLock {
            $0.failures += 1
            $0.reasons[reason, default: 0] += 1
        }
    }

    func snapshot() -> ([Double], Int) {
        collected.withLock { ($0.latencies, $0.failures) }
    }
}

/// When each phase of one join ended, from the joiner's side.
private struct JoinPhases {
    static let names = [
        "connect", "attendant's first message", "confirmation", "grant", "close mailbox", "open grant",
    ]
    private let began: ContinuousClock.Instant
    private var ends: [ContinuousClock.Instant?] = Array(repeating: nil, count: names.count)

    init(_ began: ContinuousClock.Instant) { self.began = began }

    mutating func mark(_ step: JoinStep) {
        switch step {
        case .connected: mark(at: 0)
        case .received(.pake): mark(at: 1)
        case .received(.confirm): mark(at: 2)
        case .received: break
        case .granted: mark(at: 3)
        }
    }

    mutating func mark(at index: Int) {
        if ends[index] == nil { ends[index] = ContinuousClock.now }
    }

    /// Milliseconds of each phase (a phase whose end was not seen counts as 0, the next one gets
    /// its time).
    var durations: [Double] {
        var previous = began
        return ends.map { end in
            guard let end else { return 0 }
            defer { previous = end }
            return milliseconds(end - previous)
        }
    }
}

private func printPhases(_ joins: [[Double]]) {
    guard !joins.isEmpty else { return }
    let totals = joins.map { $0.reduce(0, +) }
    let slowest = Array(totals.indices.sorted { totals[$0] > totals[$1] }.prefix(max(1, joins.count / 100)))
    print(
        "  phase                        p50 ms   p99 ms   max ms   mean of slowest 1% (\(slowest.count) joins)"
    )
    for (n, name) in JoinPhases.names.enumerated() {
        let values = joins.map { $0[n] }
        let slow = slowest.map { joins[$0][n] }.reduce(0, +) / Double(slowest.count)
        print(
            "  " + name.padding(toLength: 27, withPad: " ", startingAt: 0)
                + String(
                    format: "%7.1f  %7.1f  %7.1f  %7.1f", percentile(values, 0.5), percentile(values, 0.99),
                    values.max() ?? 0, slow))
    }
}

private func botFail(_ message: String) -> Int32 {
    FileHandle.standardError.write(Data("eleven-bench bot: \(message)\n".utf8))
    return 1
}
