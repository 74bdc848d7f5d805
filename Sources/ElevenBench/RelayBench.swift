import Foundation
import Mailbox
import Net
import Relay
import Support
import TestSupport

// `eleven-bench relay`: our relay against the reference magic-wormhole-mailbox-server, same
// run, same native load generator (this process, on Net's WebSocket client).
//
// Load: the workload of shared/bench/mailbox_load.py. A pair is two sides: A connects, binds,
// allocates, claims, opens and adds `pake`; once A has its nameplate, B connects, binds, claims,
// opens and adds `pake`; each side, having seen the other's `pake`, adds `version` and `0`
// (128 random bytes, hex), waits for the other's two, releases, and closes with mood `happy`.
// Latency: from A's `bind` until both sides got `closed`. Closed loop at 1, 10 and 100 pairs in
// flight, a fixed time per level.
//
// Idle: K connections that bind (and answer a ping, so the bind was processed) and stay open;
// the server's resident memory (VmRSS) before and while holding them, per connection.
//
// Both servers are separate processes with file databases: ours is the `eleven-relay` next to
// this executable (built with `swift build -c release --product eleven-relay`) started with
// `--no-limits` (the reference has none), or, if that is missing, this executable serving the
// same RelayServer code in a child process; the reference is `twist wormhole-mailbox` from the
// interop virtualenv.

private let relayUsage = """
    usage: eleven-bench relay [--quick] [--seconds S] [--idle N] [--reference-idle N] [--python PATH]

      --seconds S          measured time per server and concurrency level (default 3)
      --idle N             idle connections to hold on our relay (default 15000)
      --reference-idle N   idle connections to hold on the reference (default 3000)
      --python PATH        the interop virtualenv's python; `twist` is taken from its directory
                           (default $ELEVEN_TEST_PYTHON, else .venv-test/bin/python)
      --relay PATH         the eleven-relay executable (default: next to this one)
      --sync full|normal   our relay's fsync policy (default full: survives power loss, as the
                           reference's SQLite default does)
      --no-reference       measure only our relay
      --quick              1 s per level, 2,000 / 500 idle connections
      --nodes ...          one node on SQLite, one and two on PostgreSQL (`--nodes --help`)
    """

func runRelayBench(_ arguments: [String]) -> Int32 {
    if arguments.first == "--serve" { return serveRelay(Array(arguments.dropFirst())) }
    if arguments.first == "--nodes" { return runRelayNodesBench(Array(arguments.dropFirst())) }
    if arguments.contains("--help") || arguments.contains("-h") {
        print(relayUsage)
        return 0
    }
    var seconds = 3.0
    var idle = 15_000
    var referenceIdle = 3_000
    var python = defaultInteropPython()
    var relayPath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("eleven-relay").path
    var sync = "full"
    var withReference = true
    var i = 0
    while i < arguments.count {
        let value = i + 1 < arguments.count ? arguments[i + 1] : ""
        switch arguments[i] {
        case "--quick":
            seconds = 1
            idle = 2_000
            referenceIdle = 500
            i -= 1
        case "--seconds": seconds = min(30, max(0.5, Double(value) ?? seconds))
        case "--idle": idle = min(18_000, max(1, Int(value) ?? idle))
        case "--reference-idle": referenceIdle = min(18_000, max(0, Int(value) ?? referenceIdle))
        case "--python": python = value
        case "--relay": relayPath = value
        case "--sync": sync = value == "normal" ? "normal" : "full"
        case "--no-reference":
            withReference = false
            i -= 1
        default:
            FileHandle.standardError.write(
                Data(benchUsageError("unknown option '\(arguments[i])'", usage: relayUsage).utf8))
            return 2
        }
        i += 2
    }
    let limit = raiseOpenFileLimit()
    let workDir = FileManager.default.temporaryDirectory.appendingPathComponent(
        "eleven-bench-relay-\(getpid())")
    try? FileManager.default.createDirectory(at: workDir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: workDir) }

    // Our relay.
    let ours: BenchServer
    let ourDB = workDir.appendingPathComponent("eleven.sqlite").path
    if FileManager.default.isExecutableFile(atPath: relayPath),
        let server = BenchServer.start(
            relayPath, ["--listen", "127.0.0.1:0", "--db", ourDB, "--no-limits"],
            readyPrefix: "eleven-relay listening on ")
    {
        ours = server
        print("ours:      \(relayPath) --no-limits --sync \(sync) (file database), pid \(ours.pid)")
    } else if let server = BenchServer.start(
        CommandLine.arguments[0], ["relay", "--serve", ourDB], readyPrefix: "eleven-relay listening on ")
    {
        ours = server
        print(
            "ours:      RelayServer in a child of eleven-bench (no eleven-relay at \(relayPath)), pid \(ours.pid)"
        )
    } else {
        print("eleven-bench relay: could not start our relay")
        return 1
    }
    defer { ours.stop() }

    // The reference.
    let twist = URL(fileURLWithPath: python).deletingLastPathComponent().appendingPathComponent("twist").path
    let referencePort = (try? TestSupport.freePort()) ?? 0
    let referenceDB = workDir.appendingPathComponent("reference.sqlite").path
    let reference =
        !withReference
        ? nil
        : BenchServer.start(
            twist,
            [
                "wormhole-mailbox", "--port=tcp:\(referencePort):interface=127.0.0.1",
                "--channel-db=\(referenceDB)",
            ],
            waitForPort: referencePort)
    defer { reference?.stop() }
    if let reference {
        print(
            "reference: \(twist) wormhole-mailbox (magic-wormhole-mailbox-server, file database), pid \(reference.pid)"
        )
    } else {
        print("reference: could not start \(twist) (set --python to the interop virtualenv's python)")
    }
    print("open-file limit \(limit); load generator: this process, 2 event loops, Net's WebSocket client")
    let loops = (0..<2).map { EventLoop(name: "relay-bench-\($0)") }

    // Idle connections first, while both heaps are fresh.
    print("")
    print("idle: connections that bind and stay open; server VmRSS before and while holding them")
    let ourIdle = measureIdle(url: ours.url, pid: ours.pid, count: idle, loops: loops, limit: 60)
    printIdle("eleven", ourIdle, target: true)
    var referenceIdleResult: IdleResult?
    if let reference, referenceIdle > 0 {
        referenceIdleResult = measureIdle(
            url: reference.url, pid: reference.pid, count: referenceIdle, loops: loops, limit: 45)
        printIdle("reference", referenceIdleResult, target: false)
    }

    // Pairs.
    print("")
    print(
        "pairs: A allocate/claim/open/add pake; B claim/open/add pake; version + 0 each (128 B, hex); release;"
    )
    print(
        "       close happy. Closed loop, \(seconds) s per level for ours, 3 s (12 s at 100) for the reference;"
    )
    print("       3 warm-up pairs per server first. Rate = completed pairs / time until the last one ended.")
    for server in [Optional(ours), reference].compactMap({ $0 }) {
        _ = runPairs(url: server.url, concurrency: 1, seconds: 10, maxPairs: 3, loops: loops)
    }
    print("conc  server       pairs/s    p50 ms    p99 ms   pairs  errors   server CPU   client CPU")
    var summary: [(Int, PairsResult?, PairsResult?)] = []
    for concurrency in [1, 10, 100] {
        let cpu0 = processCPUSeconds(ours.pid)
        let me0 = processCPUSeconds(getpid())
        let mine = runPairs(
            url: ours.url, concurrency: concurrency, seconds: seconds, maxPairs: 1_000_000, loops: loops)
        printPairs(
            concurrency, "eleven", mine, cpu: processCPUSeconds(ours.pid) - cpu0,
            client: processCPUSeconds(getpid()) - me0)
        var theirs: PairsResult?
        if let reference {
            let rcpu0 = processCPUSeconds(reference.pid)
            let rme0 = processCPUSeconds(getpid())
            theirs = runPairs(
                url: reference.url, concurrency: concurrency, seconds: referenceSeconds(concurrency),
                maxPairs: 1_000_000,
                loops: loops)
            printPairs(
                concurrency, "reference", theirs, cpu: processCPUSeconds(reference.pid) - rcpu0,
                client: processCPUSeconds(getpid()) - rme0)
        }
        if let theirs, theirs.rate > 0, mine.rate > 0, mine.p99 > 0 {
            print(
                String(
                    format: "      ratio     %8.1fx throughput, p99 %.1fx lower", mine.rate / theirs.rate,
                    theirs.p99 / mine.p99))
        }
        summary.append((concurrency, mine, theirs))
    }

    print("")
    print("targets:")
    if let (_, mine, theirs) = summary.last, let mine, let theirs, theirs.rate > 0, mine.p99 > 0 {
        let throughput = mine.rate / theirs.rate
        let latency = theirs.p99 / mine.p99
        print(
            String(
                format: "  pairs/s at 100 concurrent >= 20x the reference: %.1fx %@", throughput,
                verdict(throughput >= 20)))
        print(
            String(
                format: "  p99 at 100 concurrent >= 20x lower:              %.1fx %@", latency,
                verdict(latency >= 20)))
    } else {
        print("  pairs/s and p99 ratios: not measured (reference missing or failed)")
    }
    if let ourIdle {
        print(
            String(
                format: "  <= 4 KiB per idle connection:                    %.2f KiB %@",
                ourIdle.kibPerConnection,
                verdict(ourIdle.kibPerConnection <= 4)))
        print(
            "  15,000 idle connections held:                   \(ourIdle.held) \(verdict(ourIdle.held >= 15_000))"
        )
    }
    for loop in loops { loop.stop() }
    return 0
}

private func verdict(_ met: Bool) -> String { met ? "(met)" : "(MISSED)" }

/// The reference takes seconds per pair at 100 in flight: a window of several pair latencies
/// measures its steady rate, not just the first wave.
private func referenceSeconds(_ concurrency: Int) -> Double { concurrency >= 100 ? 12 : 3 }

// MARK: - Servers

/// A server process started by the bench, stopped by its pid. Its output goes to a log file
/// (removed when it stops): a relay under load says much, and the bench holds none of it.
final class BenchServer {
    let child: ChildProcess
    let url: String
    private let log: URL
    var pid: Int32 { child.pid }

    private init(child: ChildProcess, url: String, log: URL) {
        self.child = child
        self.url = url
        self.log = log
    }

    private static func logFile() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("eleven-bench-\(UUID().uuidString).log")
    }

    /// Starts `executable` and waits for a stdout line starting with `readyPrefix` (the rest is
    /// the WebSocket URL), at most 30 s.
    static func start(_ executable: String, _ arguments: [String], readyPrefix: String) -> BenchServer? {
        let log = logFile()
        guard let child = try? ChildProcess(executable, arguments, logFile: log) else { return nil }
        guard let url = try? child.value(afterPrefix: readyPrefix, timeout: 30) else {
            child.stop(signal: SIGKILL)
            try? FileManager.default.removeItem(at: log)
            return nil
        }
        return BenchServer(child: child, url: url, log: log)
    }

    /// Starts `executable` and waits until 127.0.0.1:`port` accepts, at most 30 s.
    static func start(_ executable: String, _ arguments: [String], waitForPort port: UInt16) -> BenchServer? {
        guard FileManager.default.isExecutableFile(atPath: executable) else { return nil }
        let log = logFile()
        guard let child = try? ChildProcess(executable, arguments, logFile: log, port: port, timeout: 30)
        else {
            try? FileManager.default.removeItem(at: log)
            return nil
        }
        return BenchServer(child: child, url: "ws://127.0.0.1:\(port)/v1", log: log)
    }

    func stop() {
        child.stop()
        try? FileManager.default.removeItem(at: log)
    }
}

/// `eleven-bench relay --serve DB`: the relay (RelayServer, no limits) on a free loopback port,
/// for when no `eleven-relay` executable is next to this one.
private func serveRelay(_ arguments: [String]) -> Int32 {
    guard let path = arguments.first, let address = SocketAddress(numericHost: "127.0.0.1", port: 0) else {
        return 2
    }
    var config = RelayServerConfiguration(listenAddresses: [address], databasePath: path)
    config.relay.limits = .unlimited
    config.maximumConnectionsPerAddress = 1 << 20
    do {
        let server = try RelayServer(configuration: config, log: RelayLog { _ in })
        try server.start()
        let stop = SignalWatcher(signal: SIGTERM) {
            server.shutdown()
            exit(0)
        }
        for url in server.webSocketURLs {
            FileHandle.standardOutput.write(Data("eleven-relay listening on \(url)\n".utf8))
        }
        withExtendedLifetime(stop) {
            while true { pause() }
        }
    } catch {
        FileHandle.standardError.write(Data("eleven-bench relay --serve: \(error)\n".utf8))
    }
    return 1
}

func defaultInteropPython() -> String {
    if let p = ProcessInfo.processInfo.environment["ELEVEN_TEST_PYTHON"], !p.isEmpty { return p }
    return FileManager.default.currentDirectoryPath + "/.venv-test/bin/python"
}

func raiseOpenFileLimit() -> Int {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    return Int(limit.rlim_cur)
}

private func residentKiB(_ pid: Int32) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }
    return 0
}

/// User and system CPU seconds of `pid`; with `withExitedChildren`, also of its children
/// that have exited and been waited for.
func processCPUSeconds(_ pid: Int32, withExitedChildren: Bool = false) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = text.lastIndex(of: ")")
    else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 14, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    let children = withExitedChildren ? (Double(fields[13]) ?? 0) + (Double(fields[14]) ?? 0) : 0
    return (user + system + children) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

// MARK: - Messages

/// Bodies and ids only need to look random (the relays store them blindly); a SplitMix64
/// stream seeded once keeps the load generator from making a system call per byte.
private let benchRandom = Locked(UInt64.random(in: 0...UInt64.max))

private func randomHex(_ bytes: Int) -> String {
    let digits = Array("0123456789abcdef".utf8)
    let words = (bytes + 7) / 8
    let stream: [UInt64] = benchRandom.withLock { state in
        (0..<words).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
    var out = [UInt8](repeating: 0, count: bytes * 2)
    for i in 0..<bytes {
        let b = UInt8(truncatingIfNeeded: stream[i / 8] >> (8 * UInt64(i % 8)))
        out[2 * i] = digits[Int(b >> 4)]
        out[2 * i + 1] = digits[Int(b & 0x0F)]
    }
    return String(decoding: out, as: UTF8.self)
}

/// `{"type":…,"id":…, fields…}` with string values.
private func frame(_ type: String, _ fields: KeyValuePairs<String, String> = [:]) -> String {
    var object = JSONObject()
    object.append("type", .string(type))
    for (key, value) in fields { object.append(key, .string(value)) }
    return JSONWriter.string(.object(object))
}

private struct Incoming {
    let type: String
    let object: JSONObject
    init?(_ message: WebSocketMessage) {
        let bytes: [UInt8]
        switch message {
        case .text(let text): bytes = Array(text.utf8)
        case .binary(let b): bytes = b
        }
        guard let value = try? JSONParser.parse(bytes), let object = value.objectValue,
            let type = object["type"]?.stringValue
        else { return nil }
        self.type = type
        self.object = object
    }
    subscript(key: String) -> String? { object[key]?.stringValue }
}

// MARK: - Pairs

private let benchApp = "bench.local/eleven-bench-relay"
private let ackCompact = Array(#"{"type":"ack""#.utf8)
private let ackSpaced = Array(#"{"type": "ack""#.utf8)
private let benchPhases = ["version", "0"]

struct PairsResult {
    var rate: Double
    var p50: Double
    var p99: Double
    var pairs: Int
    var errors: [String: Int]
}

/// Shared by a level's workers.
private final class PairCollector: Sendable {
    struct State {
        var started = 0
        var latencies: [Double] = []
        var errors: [String: Int] = [:]
    }
    let state = Locked(State())
    let deadline: UInt64
    let maxPairs: Int
    init(deadline: UInt64, maxPairs: Int) {
        self.deadline = deadline
        self.maxPairs = maxPairs
    }
    func mayStart() -> Bool {
        guard nowNanos() < deadline else { return false }
        return state.withLock { s in
            guard s.started < maxPairs else { return false }
            s.started += 1
            return true
        }
    }
    func record(_ outcome: Result<Double, PairFailure>) {
        state.withLock { s in
            switch outcome {
            case .success(let latency): s.latencies.append(latency)
            case .failure(let failure): s.errors[failure.kind, default: 0] += 1
            }
        }
    }
}

private struct PairFailure: Error {
    let kind: String
}

private func nowNanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Pairs in a closed loop. With `peerURL`, half the workers use the other relay: both sides
/// of their pairs there (`acrossRelays` false), or side A there and side B on `url` (true:
/// every pair's sides on different relays).
func runPairs(
    url: String, peerURL: String? = nil, acrossRelays: Bool = false, concurrency: Int, seconds: Double,
    maxPairs: Int, loops: [EventLoop]
) -> PairsResult {
    let start = nowNanos()
    let collector = PairCollector(deadline: start + UInt64(seconds * 1e9), maxPairs: maxPairs)
    let group = DispatchGroup()
    for worker in 0..<concurrency {
        group.enter()
        let loop = loops[worker % loops.count]
        @Sendable func next() {
            guard collector.mayStart() else {
                group.leave()
                return
            }
            let other = peerURL ?? url
            let urls =
                acrossRelays
                ? (worker % 2 == 0 ? (url, other) : (other, url))
                : (worker % 2 == 0 ? (url, url) : (other, other))
            Pair(url: urls.0, peerURL: urls.1, loop: loop) { outcome in
                collector.record(outcome)
                next()
            }.start()
        }
        loop.execute { next() }
    }
    // Pairs still running at the deadline finish (each is cut off after 60 s: the reference is slow).
    _ = group.wait(timeout: .now() + seconds + 65)
    let elapsed = Double(nowNanos() - start) / 1e9
    let s = collector.state.withLock { $0 }
    let sorted = s.latencies.sorted()
    func quantile(_ q: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let k = Double(sorted.count - 1) * q
        let lo = Int(k)
        let hi = min(lo + 1, sorted.count - 1)
        return sorted[lo] + (sorted[hi] - sorted[lo]) * (k - Double(lo))
    }
    return PairsResult(
        rate: Double(sorted.count) / elapsed, p50: quantile(0.5), p99: quantile(0.99), pairs: sorted.count,
        errors: s.errors)
}

private func printPairs(_ concurrency: Int, _ name: String, _ r: PairsResult?, cpu: Double, client: Double) {
    guard let r else { return }
    let errors = r.errors.values.reduce(0, +)
    var line = String(
        format: "%4d  %-10@ %9.1f %9.2f %9.2f %7d %7d   %8.2f s   %8.2f s", concurrency, name, r.rate,
        r.p50 * 1000, r.p99 * 1000, r.pairs, errors, cpu, client)
    if errors > 0 {
        line +=
            "  " + r.errors.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }
    print(line)
}

/// One pair's two sides, confined to one loop.
private final class Pair: @unchecked Sendable {
    /// Loop-confined like its pair.
    final class Side: @unchecked Sendable {
        let name: String
        let side = randomHex(5)
        var socket: WebSocket?
        var sentPhases = false
        var peerPhases = Set<String>()
        var released = false
        var closed = false
        init(name: String) { self.name = name }
    }

    let url: String
    /// Where side B connects.
    let peerURL: String
    let loop: EventLoop
    let done: (Result<Double, PairFailure>) -> Void
    let a = Side(name: "A")
    let b = Side(name: "B")
    var nameplate = ""
    var mailbox = ""
    var bindAt: UInt64 = 0
    var finished = false
    var timer: LoopTimer?

    init(
        url: String, peerURL: String? = nil, loop: EventLoop,
        done: @escaping (Result<Double, PairFailure>) -> Void
    ) {
        self.url = url
        self.peerURL = peerURL ?? url
        self.loop = loop
        self.done = done
    }

    func start() {
        timer = loop.schedule(after: .seconds(60)) { [self] in finish(.failure(PairFailure(kind: "timeout")))
        }
        connect(a)
    }

    private func connect(_ side: Side) {
        var options = WebSocketOptions()
        options.pingInterval = .seconds(600)
        WebSocketClient.connect(
            url: side === a ? url : peerURL, options: options, timeout: .seconds(10), loop: loop
        ) { [self] result in
            switch result {
            case .failure(let error):
                finish(.failure(PairFailure(kind: "connect:\(error.code.rawValue)")))
            case .success(let socket):
                side.socket = socket
                if finished {
                    socket.close()
                    return
                }
                socket.onMessage { [self] _, message in handle(side, message) }
                socket.onClose { [self] _, _, _ in
                    if !side.closed { finish(.failure(PairFailure(kind: "closed"))) }
                }
            }
        }
    }

    private func send(_ side: Side, _ text: String) { side.socket?.send(text: text) }

    private func handle(_ side: Side, _ message: WebSocketMessage) {
        guard !finished else { return }
        // Acks are most frames and carry nothing the pair needs: skip them unparsed (both
        // servers put `type` first; the reference writes a space after the colon).
        if case .text(let text) = message,
            text.utf8.starts(with: ackCompact) || text.utf8.starts(with: ackSpaced)
        {
            return
        }
        guard let m = Incoming(message) else {
            finish(.failure(PairFailure(kind: "bad_frame")))
            return
        }
        let isA = side === a
        switch m.type {
        case "welcome":
            if isA { bindAt = nowNanos() }
            send(side, frame("bind", ["appid": benchApp, "side": side.side, "id": randomHex(2)]))
            if isA {
                send(side, frame("allocate", ["id": randomHex(2)]))
            } else {
                send(side, frame("claim", ["nameplate": nameplate, "id": randomHex(2)]))
            }
        case "allocated":
            nameplate = m["nameplate"] ?? ""
            send(side, frame("claim", ["nameplate": nameplate, "id": randomHex(2)]))
        case "claimed":
            let box = m["mailbox"] ?? ""
            if isA {
                mailbox = box
            } else if box != mailbox {
                finish(.failure(PairFailure(kind: "mailbox_mismatch")))
                return
            }
            send(side, frame("open", ["mailbox": mailbox, "id": randomHex(2)]))
            send(side, frame("add", ["phase": "pake", "body": randomHex(128), "id": randomHex(2)]))
            if isA { connect(b) }
        case "message":
            guard m["side"] != side.side, let phase = m["phase"] else { return }
            side.peerPhases.insert(phase)
            if phase == "pake" && !side.sentPhases {
                side.sentPhases = true
                for phase in benchPhases {
                    send(side, frame("add", ["phase": phase, "body": randomHex(128), "id": randomHex(2)]))
                }
            }
            if side.sentPhases && !side.released && benchPhases.allSatisfy(side.peerPhases.contains) {
                side.released = true
                send(side, frame("release", ["nameplate": nameplate, "id": randomHex(2)]))
            }
        case "released":
            send(side, frame("close", ["mailbox": mailbox, "mood": "happy", "id": randomHex(2)]))
        case "closed":
            side.closed = true
            if a.closed && b.closed { finish(.success(Double(nowNanos() - bindAt) / 1e9)) }
        case "error":
            finish(.failure(PairFailure(kind: "server_error:\(String((m["error"] ?? "").prefix(40)))")))
        default:
            break
        }
    }

    private func finish(_ outcome: Result<Double, PairFailure>) {
        guard !finished else { return }
        finished = true
        timer?.cancel()
        a.closed = true
        b.closed = true
        a.socket?.close()
        b.socket?.close()
        done(outcome)
    }
}

// MARK: - Idle connections

private struct IdleResult {
    var held: Int
    var failed: Int
    var rssBeforeKiB: Int
    var rssHeldKiB: Int
    var openSeconds: Double
    var kibPerConnection: Double { held > 0 ? Double(rssHeldKiB - rssBeforeKiB) / Double(held) : 0 }
}

/// Loop-confined state of one loop's share of the idle connections.
private final class IdleShard: @unchecked Sendable {
    var sockets: [WebSocket] = []
    var ready = 0
    var failed = 0
    var started = 0
    let target: Int
    let done = DispatchSemaphore(value: 0)
    var signalled = false
    init(target: Int) { self.target = target }
    func settle() {
        if !signalled && ready + failed >= target {
            signalled = true
            done.signal()
        }
    }
}

/// Whether one idle connection was counted (loop-confined).
private final class IdleFlag: @unchecked Sendable {
    var value = false
}

private func measureIdle(url: String, pid: Int32, count: Int, loops: [EventLoop], limit: Double)
    -> IdleResult?
{
    let before = residentKiB(pid)
    let start = nowNanos()
    let shards = loops.indices.map {
        IdleShard(target: count / loops.count + ($0 < count % loops.count ? 1 : 0))
    }
    for (index, loop) in loops.enumerated() {
        let shard = shards[index]
        @Sendable func openNext() {
            guard shard.started < shard.target else { return }
            shard.started += 1
            var options = WebSocketOptions()
            options.pingInterval = .seconds(600)
            WebSocketClient.connect(url: url, options: options, timeout: .seconds(20), loop: loop) { result in
                switch result {
                case .failure:
                    shard.failed += 1
                    shard.settle()
                    openNext()
                case .success(let socket):
                    shard.sockets.append(socket)
                    let counted = IdleFlag()
                    socket.onMessage { socket, message in
                        guard let m = Incoming(message) else { return }
                        if m.type == "welcome" {
                            socket.send(
                                text: frame("bind", ["appid": benchApp, "side": randomHex(5), "id": "1"]))
                            socket.send(text: #"{"type":"ping","ping":1,"id":"2"}"#)
                        } else if m.type == "pong" && !counted.value {
                            counted.value = true
                            shard.ready += 1
                            shard.settle()
                            openNext()
                        }
                    }
                    socket.onClose { _, _, _ in
                        if !counted.value {
                            counted.value = true
                            shard.failed += 1
                            shard.settle()
                            openNext()
                        }
                    }
                }
            }
        }
        loop.execute {
            shard.settle()
            for _ in 0..<min(200, shard.target) { openNext() }
        }
    }
    for shard in shards { _ = shard.done.wait(timeout: .now() + limit) }
    let openSeconds = Double(nowNanos() - start) / 1e9
    usleep(1_500_000)
    let held = residentKiB(pid)
    var ready = 0
    var failed = 0
    for (index, loop) in loops.enumerated() {
        let shard = shards[index]
        let closed = DispatchSemaphore(value: 0)
        let counts = Locked((0, 0))
        loop.execute {
            counts.withLock { $0 = (shard.ready, shard.failed) }
            for socket in shard.sockets { socket.close() }
            shard.sockets = []
            closed.signal()
        }
        closed.wait()
        let (r, f) = counts.withLock { $0 }
        ready += r
        failed += f
    }
    usleep(1_000_000)
    guard before > 0 else { return nil }
    return IdleResult(
        held: ready, failed: failed, rssBeforeKiB: before, rssHeldKiB: held, openSeconds: openSeconds)
}

private func printIdle(_ name: String, _ r: IdleResult?, target: Bool) {
    guard let r else {
        print("  \(name): not measured")
        return
    }
    var line = String(
        format: "  %-10@ %6d held (%d failed) in %.1f s, RSS %.1f -> %.1f MiB: %.2f KiB per connection", name,
        r.held,
        r.failed, r.openSeconds, Double(r.rssBeforeKiB) / 1024, Double(r.rssHeldKiB) / 1024,
        r.kibPerConnection)
    if target { line += r.kibPerConnection <= 4 ? " (target <= 4 KiB: met)" : " (target <= 4 KiB: MISSED)" }
    print(line)
}
