import Foundation
import Net
import TestSupport

// `eleven-bench relay --nodes`: the relay's storage set-ups side by side, with the same load
// generator and workload as `eleven-bench relay` (see RelayBench.swift): one node on SQLite,
// one node on PostgreSQL, two nodes on one PostgreSQL (half the pairs on each node; then every
// pair's two sides on different nodes), and the reference mailbox server as the same-run
// yardstick.
//
// PostgreSQL is a throw-away cluster on a loopback port (TestSupport.PostgresCluster: fsync
// off), so SQLite runs with `--sync normal` (no fsync per commit either) to compare like with
// like; the reference keeps its default.

private let nodesUsage = """
    usage: eleven-bench relay --nodes [--seconds S] [--concurrency N] [--python PATH] [--relay PATH]

      --seconds S        measured time per set-up (default 4)
      --concurrency N    pairs in flight (default 40)
      --python PATH      the interop virtualenv's python, for the reference (`twist`)
      --relay PATH       the eleven-relay executable (default: next to this one)
      --no-reference     skip the reference mailbox server
      --rounds N         measure our set-ups N times in turn (default 1) and show each one's
                         median round by pairs/s, so load from other processes on the machine
                         falls on every set-up alike
      --only LIST        only these set-ups, comma-separated: sqlite, pg, split, sides
      --detail           per set-up: CPU per process and thread per 1000 pairs, and what the
                         PostgreSQL backends do (sampled pg_stat_activity)
      --statements       per set-up: PostgreSQL statements per pair (loads pg_stat_statements,
                         which costs some CPU itself)
    """

func runRelayNodesBench(_ arguments: [String]) -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        print(nodesUsage)
        return 0
    }
    var seconds = 4.0
    var concurrency = 40
    var python = defaultInteropPython()
    var relayPath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("eleven-relay").path
    var withReference = true
    var rounds = 1
    var only: Set<String> = ["sqlite", "pg", "split", "sides"]
    var detail = false
    var statements = false
    var i = 0
    while i < arguments.count {
        let value = i + 1 < arguments.count ? arguments[i + 1] : ""
        switch arguments[i] {
        case "--seconds": seconds = min(30, max(0.5, Double(value) ?? seconds))
        case "--concurrency": concurrency = min(500, max(1, Int(value) ?? concurrency))
        case "--python": python = value
        case "--relay": relayPath = value
        case "--rounds": rounds = min(9, max(1, Int(value) ?? rounds))
        case "--only": only = Set(value.split(separator: ",").map(String.init))
        case "--no-reference":
            withReference = false
            i -= 1
        case "--detail":
            detail = true
            i -= 1
        case "--statements":
            statements = true
            i -= 1
        default:
            FileHandle.standardError.write(
                Data(benchUsageError("unknown option '\(arguments[i])'", usage: nodesUsage).utf8))
            return 2
        }
        i += 2
    }
    guard FileManager.default.isExecutableFile(atPath: relayPath) else {
        print(
            "eleven-bench relay --nodes: no eleven-relay at \(relayPath) (swift build -c release --product eleven-relay)"
        )
        return 1
    }
    _ = raiseOpenFileLimit()
    let cluster: PostgresCluster
    do {
        cluster = try PostgresCluster()
    } catch {
        print("eleven-bench relay --nodes: cannot start PostgreSQL: \(error)")
        return 1
    }
    let workDir = FileManager.default.temporaryDirectory.appendingPathComponent(
        "eleven-bench-nodes-\(getpid())")
    try? FileManager.default.createDirectory(at: workDir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: workDir) }
    let loops = (0..<2).map { EventLoop(name: "relay-nodes-bench-\($0)") }
    defer { for loop in loops { loop.stop() } }

    func relay(_ storage: [String]) -> BenchServer? {
        BenchServer.start(
            relayPath, ["--listen", "127.0.0.1:0", "--no-limits"] + storage,
            readyPrefix: "eleven-relay listening on ")
    }
    struct Row {
        let name: String
        let result: PairsResult?
        let cpu: Double
        /// CPU seconds of the PostgreSQL server (all its processes) and of this load generator.
        var databaseCPU = 0.0
        var generatorCPU = 0.0
    }
    var rows: [Row] = []
    /// Warms up, measures, stops the servers.
    func measure(_ name: String, _ servers: [BenchServer?], across: Bool = false) {
        let started = servers.compactMap { $0 }
        defer { for server in started { server.stop() } }
        guard started.count == servers.count, let first = started.first else {
            print("\(name): could not start")
            rows.append(Row(name: name, result: nil, cpu: 0))
            return
        }
        let peer = started.count > 1 ? started.last?.url : nil
        _ = runPairs(
            url: first.url, peerURL: peer, acrossRelays: across, concurrency: 2, seconds: 10, maxPairs: 4,
            loops: loops)
        if statements { StatementCounts.reset(cluster) }
        let postmaster = postmasterPID(cluster)
        let snapshot = detail ? CPUSnapshot.take(relays: started.map(\.pid), postmaster: postmaster) : nil
        let sampler = detail ? BackendSampler(url: cluster.url) : nil
        let cpu0 = started.reduce(0) { $0 + processCPUSeconds($1.pid) }
        let database0 = postgresCPUSeconds(cluster)
        let generator0 = processCPUSeconds(getpid())
        let result = runPairs(
            url: first.url, peerURL: peer, acrossRelays: across, concurrency: concurrency, seconds: seconds,
            maxPairs: 1_000_000,
            loops: loops)
        let cpu = started.reduce(0) { $0 + processCPUSeconds($1.pid) } - cpu0
        if let snapshot {
            let after = CPUSnapshot.take(relays: started.map(\.pid), postmaster: postmaster)
            print("\(name): \(result.pairs) pairs, \(String(format: "%.1f", result.rate)) pairs/s")
            for line in after.report(since: snapshot, pairs: result.pairs, seconds: seconds) { print(line) }
        }
        if let sampler {
            print("  PostgreSQL backends of the relays (average over 20 ms samples):")
            for line in sampler.stop() { print(line) }
        }
        if statements {
            print("  \(name): statements")
            for line in StatementCounts.report(cluster, pairs: result.pairs) { print(line) }
        }
        rows.append(
            Row(
                name: name, result: result, cpu: cpu, databaseCPU: postgresCPUSeconds(cluster) - database0,
                generatorCPU: processCPUSeconds(getpid()) - generator0))
    }

    print(
        "eleven-relay: \(relayPath) --no-limits; PostgreSQL: throw-away cluster on 127.0.0.1:\(cluster.port) (fsync off)"
    )
    print("workload: as `eleven-bench relay` (pairs: allocate/claim/open, pake, version, 0, release, close);")
    print(
        "          \(concurrency) pairs in flight, \(seconds) s per set-up; two nodes: half the pairs on each"
    )
    print("          (pairs split), or every pair's two sides on different nodes (sides split)")
    if rounds > 1 { print("          \(rounds) rounds; each set-up's median round by pairs/s is shown") }
    if statements && !StatementCounts.enable(cluster) {
        print("eleven-bench relay --nodes: cannot load pg_stat_statements")
        return 1
    }
    let sqlite = workDir.appendingPathComponent("relay.sqlite").path
    let postgres = ["--db", workDir.appendingPathComponent("unused.sqlite").path, "--postgres", cluster.url]
    for _ in 0..<rounds {
        if only.contains("sqlite") {
            measure("1 node, SQLite", [relay(["--db", sqlite, "--sync", "normal"])])
        }
        if only.contains("pg") { measure("1 node, PostgreSQL", [relay(postgres)]) }
        if only.contains("split") { measure("2 nodes, pairs split", [relay(postgres), relay(postgres)]) }
        if only.contains("sides") {
            measure("2 nodes, sides split", [relay(postgres), relay(postgres)], across: true)
        }
    }
    // Each set-up's median round (rows keep their first order).
    var names: [String] = []
    for row in rows where !names.contains(row.name) { names.append(row.name) }
    let everyRound = rows
    rows = names.map { name in
        let runs = rows.filter { $0.name == name }.sorted { ($0.result?.rate ?? 0) < ($1.result?.rate ?? 0) }
        return runs[runs.count / 2]
    }
    if withReference {
        let twist = URL(fileURLWithPath: python).deletingLastPathComponent().appendingPathComponent("twist")
            .path
        let port = (try? TestSupport.freePort()) ?? 0
        let reference = BenchServer.start(
            twist,
            [
                "wormhole-mailbox", "--port=tcp:\(port):interface=127.0.0.1",
                "--channel-db=\(workDir.appendingPathComponent("reference.sqlite").path)",
            ], waitForPort: port)
        measure("reference (Python)", [reference])
    }

    print("")
    print(
        "set-up                  pairs/s    p50 ms    p99 ms   pairs  errors  server CPU  vs reference"
            + "   PG CPU  load CPU")
    let referenceRate = rows.first { $0.name.hasPrefix("reference") }?.result?.rate ?? 0
    for row in rows {
        guard let r = row.result else {
            print(
                String(
                    format: "%@  (not measured)", row.name.padding(toLength: 22, withPad: " ", startingAt: 0))
            )
            continue
        }
        let ratio = referenceRate > 0 ? String(format: "%8.1fx", r.rate / referenceRate) : "       -"
        print(
            String(
                format: "%@ %8.1f %9.2f %9.2f %7d %7d  %8.2f s  %@     %6.2f s  %6.2f s",
                row.name.padding(toLength: 22, withPad: " ", startingAt: 0), r.rate, r.p50 * 1000,
                r.p99 * 1000, r.pairs, r.errors.values.reduce(0, +), row.cpu, ratio, row.databaseCPU,
                row.generatorCPU))
    }
    for row in rows {
        guard let errors = row.result?.errors, !errors.isEmpty else { continue }
        print(
            "errors, \(row.name): "
                + errors.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
    }
    if rounds > 1 {
        print("\npairs/s in each round:")
        for name in names {
            let rates = everyRound.filter { $0.name == name }.map {
                String(format: "%.1f", $0.result?.rate ?? 0)
            }
            print(
                "  \(name.padding(toLength: 22, withPad: " ", startingAt: 0)) \(rates.joined(separator: "  "))"
            )
        }
    }
    let one = rows.first { $0.name == "1 node, PostgreSQL" }?.result?.rate ?? 0
    let two = rows.first { $0.name == "2 nodes, pairs split" }?.result?.rate ?? 0
    if one > 0, two > 0 {
        print(
            String(
                format: "\ntwo PostgreSQL nodes (pairs split) / one: %.2fx %@", two / one,
                two > one ? "(more)" : "(NOT more)"))
    }
    return 0
}

/// CPU seconds used so far by the cluster's server: the postmaster (with the backends that
/// have exited) and its live children (the backends of the relays' connections).
private func postgresCPUSeconds(_ cluster: PostgresCluster) -> Double {
    guard let postmaster = postmasterPID(cluster) else { return 0 }
    var total = processCPUSeconds(postmaster, withExitedChildren: true)
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    for entry in entries {
        guard let pid = Int32(entry),
            let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { continue }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        if fields.count > 1, Int32(fields[1]) == postmaster { total += processCPUSeconds(pid) }
    }
    return total
}
