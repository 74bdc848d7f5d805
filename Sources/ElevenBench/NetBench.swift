import Foundation
import Net
import TestSupport

// `eleven-bench net`: WebSocket echo round trips per second and p99 latency at 1, 100 and 1,000
// concurrent connections against our server and, as the reference measured in the same run with
// the same client, a Python `websockets` echo server; then resident memory per idle open
// WebSocket with 10,000 connections held. The load generator is this same executable in a child
// process (`eleven-bench net --load …`), so the server's memory and CPU are its own.

private let netUsage = """
    usage: eleven-bench net [--quick] [--seconds S] [--idle N] [--loops N] [--client-loops N]
                            [--busy-poll-us U] [--client-busy-poll-us U] [--busy-poll-always]
                            [--levels L,...]
                            [--python PATH]

      --seconds S   duration of each echo run (default 1; three interleaved runs per level)
      --idle N      idle WebSockets to hold for the memory measurement (default 10000)
      --loops N     server event loops (default: one per core)
      --client-loops N  event loops of the load generator, the same for both servers (default 2)
      --busy-poll-us U  busy polling budget of the server's loops in microseconds, 0 = off
                        (default: the server's default, BusyPoll.serverDefault)
      --client-busy-poll-us U  busy polling budget of the load generator's loops, the same for
                        both servers (default 200, longer than a Python round trip)
      --busy-poll-always  poll even when other threads wait for the cores (server and load
                        generator; by default they poll only while the cores have room)
      --levels L,...    connection counts to measure (default 1,100,1000)
      --python P    interpreter with `websockets` for the reference server
                    (default $ELEVEN_TEST_PYTHON, else .venv-test/bin/python, else python3)
      --quick       one 0.5 s run per level and 2,000 idle connections
    """

func runNetBench(_ arguments: [String]) -> Int32 {
    if arguments.first == "--load" { return runLoadGenerator(Array(arguments.dropFirst())) }
    if arguments.contains("--help") || arguments.contains("-h") {
        print(netUsage)
        return 0
    }
    var seconds = 1.0
    var reps = 3
    var idleCount = 10_000
    var loops = ProcessInfo.processInfo.activeProcessorCount
    var python: String?
    var clientLoops = 2
    var busyPoll = BusyPoll.serverDefault.budget
    var clientBusyPollMicros = 200
    var levels = [1, 100, 1000]
    var pollAlways = false
    var i = 0
    while i < arguments.count {
        let arg = arguments[i]
        let value = i + 1 < arguments.count ? arguments[i + 1] : nil
        switch arg {
        case "--quick":
            seconds = 0.5
            reps = 1
            idleCount = 2000
        case "--seconds":
            seconds = Double(value ?? "") ?? seconds
            i += 1
        case "--idle":
            idleCount = Int(value ?? "") ?? idleCount
            i += 1
        case "--loops":
            loops = Int(value ?? "") ?? loops
            i += 1
        case "--python":
            python = value
            i += 1
        case "--client-loops":
            clientLoops = max(1, Int(value ?? "") ?? clientLoops)
            i += 1
        case "--busy-poll-us":
            busyPoll = .microseconds(max(0, Int(value ?? "") ?? 0))
            i += 1
        case "--client-busy-poll-us":
            clientBusyPollMicros = max(0, Int(value ?? "") ?? 0)
            i += 1
        case "--busy-poll-always":
            pollAlways = true
        case "--levels":
            let parsed = (value ?? "").split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
            if !parsed.isEmpty { levels = parsed }
            i += 1
        default:
            FileHandle.standardError.write(
                Data(benchUsageError("unknown option '\(arg)'", usage: netUsage).utf8))
            return 2
        }
        i += 1
    }
    let interpreter = python ?? defaultPython()

    var config = ServerConfiguration(host: "127.0.0.1", port: 0)
    config.loopCount = loops
    config.busyPoll = BusyPoll(budget: busyPoll, onlyWithFreeCores: !pollAlways)
    config.limits.maxConnections = 30_000
    config.limits.maxConnectionsPerAddress = 30_000
    config.limits.webSocket.pingInterval = .seconds(600)
    let server = Server(configuration: config)
    server.webSocket(path: "/echo") { socket, _ in
        socket.onMessage { socket, message in socket.send(message) }
    }
    do {
        try server.start()
    } catch {
        FileHandle.standardError.write(Data("eleven-bench net: \(error)\n".utf8))
        return 1
    }
    defer { server.shutdown(timeout: .seconds(2)) }
    let ours = "ws://127.0.0.1:\(server.port)/echo"
    let pollMicros =
        busyPoll.components.seconds * 1_000_000 + busyPoll.components.attoseconds / 1_000_000_000_000
    print(
        "eleven-bench net: server loops=\(loops), busy poll \(pollMicros) us"
            + (pollAlways ? " (always)" : " (while cores are free)") + "; "
            + "load generator = this binary in a child process")

    // (b) first, while the heap is fresh: resident memory per idle WebSocket.
    let before = residentBytes()
    guard let idle = runChild(["--load", "--idle", ours, String(idleCount)], waitFor: "READY") else {
        print("idle: load generator failed")
        return 1
    }
    usleep(300_000)
    let held = server.connectionCount
    let after = residentBytes()
    // Busy polling must not burn CPU while connections sit idle.
    let idleCPUBefore = cpuSeconds(getpid())
    usleep(1_000_000)
    let idleCPU = cpuSeconds(getpid()) - idleCPUBefore
    finish(idle)
    let perConnection = Double(after - before) / Double(max(1, held))
    print(
        String(
            format:
                "idle: %d WebSockets held, server RSS %.1f MiB -> %.1f MiB, %.0f bytes (%.2f KiB) per connection %@",
            held, Double(before) / 1_048_576, Double(after) / 1_048_576, perConnection, perConnection / 1024,
            perConnection <= 4096 ? "(target <= 4 KiB: met)" : "(target <= 4 KiB: MISSED)"))
    print(String(format: "idle: server CPU while they sit idle %.0f ms per second", idleCPU * 1000))
    _ = TestSupport.eventually { server.connectionCount == 0 }

    // (a) echo round trips, ours against the Python reference, same client.
    let reference = startPythonEcho(interpreter)
    if reference == nil {
        print("reference: could not start the Python websockets server with \(interpreter)")
    }
    defer { reference?.child.stop() }
    print("echo: 32-byte text messages, closed loop (send, await echo, repeat); \(reps) interleaved runs of")
    print(
        "      \(seconds) s per server and level, median rate; CPU = server process CPU per round trip"
            + " while the echo loop runs;")
    print(
        "      the load generator runs \(clientLoops) event loop(s), busy poll \(clientBusyPollMicros) us, "
            + "for both servers;")
    print("      the Python reference also runs with client busy polling off, and keeps its better rate")
    print("conns  server   round trips/s   p50 ms   p99 ms   CPU us/rt   client us/rt   errors")
    var worst = Double.infinity
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let client = LoadClient(loops: clientLoops, busyPollMicros: clientBusyPollMicros, pollAlways: pollAlways)
    let quietClient = LoadClient(loops: clientLoops, busyPollMicros: 0, pollAlways: false)
    for conns in levels {
        var mine: [EchoResult] = []
        var theirs: [EchoResult] = []
        for _ in 0..<reps {
            if let r = runEcho(url: ours, conns: conns, seconds: seconds, client: client, server: getpid()) {
                mine.append(r)
            }
            // The reference gets the better of two client settings: ours, and no client busy
            // polling (a spinning client could take a core from the single-threaded Python server).
            if let reference {
                let runs = [client, quietClient].compactMap { c in
                    runEcho(
                        url: "ws://127.0.0.1:\(reference.port)/", conns: conns, seconds: seconds, client: c,
                        server: reference.child.pid)
                }
                if let best = runs.max(by: { $0.rate < $1.rate }) { theirs.append(best) }
            }
        }
        let m = summarize(mine)
        let t = summarize(theirs)
        printEcho(conns, "eleven", m)
        if reference != nil { printEcho(conns, "python", t) }
        if let m, let t, t.rate > 0 {
            let ratio = m.rate / t.rate
            worst = min(worst, ratio)
            print(
                String(
                    format: "       ratio    %.1fx throughput %@, %.1fx less CPU per round trip", ratio,
                    ratio >= 5 ? "(target >= 5x: met)" : "(target >= 5x: MISSED)",
                    t.cpuPerRoundTrip / max(m.cpuPerRoundTrip, 1e-12)))
            // What the kernel alone allows: the server and the load generator share the cores,
            // and each round trip costs both of them their kernel time (a read and a send each,
            // loopback TCP) whatever our user-space code does.
            let kernel = (m.systemSeconds + m.clientSystemSeconds) / max(m.count, 1)
            if kernel > 0 {
                let ceiling = Double(cores) / kernel
                print(
                    String(
                        format:
                            "       kernel   %.1f us/rt in the server (%.0f%% of its CPU) + %.1f us/rt in the load generator: "
                            + "on %d cores at most %.0f round trips/s, %.1fx the reference, with no user-space time at all",
                        m.systemSeconds / max(m.count, 1) * 1e6,
                        100 * m.systemSeconds / max(m.cpuSeconds, 1e-12),
                        m.clientSystemSeconds / max(m.count, 1) * 1e6, cores, ceiling, ceiling / t.rate))
            }
        }
    }
    if worst.isFinite { print(String(format: "echo: worst ratio over the three levels %.1fx", worst)) }

    // For context: the same idle measurement against the Python reference server.
    if let reference {
        let pid = String(reference.child.pid)
        let before = residentBytes(of: pid)
        let url = "ws://127.0.0.1:\(reference.port)/"
        if let idle = runChild(["--load", "--idle", url, String(idleCount)], waitFor: "READY") {
            usleep(300_000)
            let after = residentBytes(of: pid)
            finish(idle)
            let per = Double(after - before) / Double(idleCount)
            print(
                String(
                    format:
                        "idle (reference): python websockets %.1f MiB -> %.1f MiB, %.2f KiB per connection",
                    Double(before) / 1_048_576, Double(after) / 1_048_576, per / 1024))
        }
    }
    return 0
}

private func printEcho(_ conns: Int, _ name: String, _ result: EchoResult?) {
    guard let r = result else {
        print(String(format: "%5d  %-7@  failed", conns, name))
        return
    }
    print(
        String(
            format: "%5d  %-7@  %13.0f   %6.2f   %6.2f   %9.1f   %9.1f   %d", conns, name, r.rate,
            r.p50 * 1000,
            r.p99 * 1000, r.cpuPerRoundTrip * 1e6, r.clientCPUPerRoundTrip * 1e6, r.errors))
}

private func defaultPython() -> String {
    if let p = ProcessInfo.processInfo.environment["ELEVEN_TEST_PYTHON"], !p.isEmpty { return p }
    let venv = FileManager.default.currentDirectoryPath + "/.venv-test/bin/python"
    if FileManager.default.isExecutableFile(atPath: venv) { return venv }
    return "/usr/bin/python3"
}

private func residentBytes(of pid: String = "self") -> Int {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Starts a child whose stdout the bench reads line by line (``nextLine(_:startingWith:)``) and
/// whose stdin ends it; its stderr is shown as it comes, unless `quiet`.
func spawn(_ executable: String, _ arguments: [String], quiet: Bool = false) -> ChildProcess? {
    try? ChildProcess(executable, arguments, input: .open, showsErrors: !quiet)
}

/// Reads lines until one starts with `prefix`; nil when the child closes its output first.
func nextLine(_ child: ChildProcess, startingWith prefix: String) -> String? {
    while let line = try? child.readLine(timeout: 3600) {
        if line.hasPrefix(prefix) { return line }
    }
    return nil
}

/// Closes the child's stdin (it exits) and waits.
func finish(_ child: ChildProcess) {
    child.closeInput()
    child.finish(timeout: 60)
}

private func runChild(_ arguments: [String], waitFor prefix: String) -> ChildProcess? {
    guard let child = spawn(CommandLine.arguments[0], ["net"] + arguments) else { return nil }
    guard nextLine(child, startingWith: prefix) != nil else {
        finish(child)
        return nil
    }
    return child
}

private func startPythonEcho(_ python: String) -> (child: ChildProcess, port: UInt16)? {
    let script = """
        import asyncio, sys
        from websockets.asyncio.server import serve
        async def echo(ws):
            async for message in ws:
                await ws.send(message)
        async def main():
            async with serve(echo, "127.0.0.1", 0, ping_interval=None, compression=None, backlog=4096) as server:
                port = server.sockets[0].getsockname()[1]
                print(f"PORT {port}", flush=True)
                await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        asyncio.run(main())
        """
    guard let child = spawn(python, ["-c", script], quiet: true),
        let line = nextLine(child, startingWith: "PORT "), let port = UInt16(line.dropFirst(5)), port != 0
    else {
        return nil
    }
    return (child, port)
}

private struct EchoResult {
    var rate: Double
    var p50: Double
    var p99: Double
    var errors: Int
    var count: Double
    var cpuSeconds: Double = 0
    /// The server's kernel share of `cpuSeconds`.
    var systemSeconds: Double = 0
    var clientCPUSeconds: Double = 0
    /// The load generator's kernel share of `clientCPUSeconds`.
    var clientSystemSeconds: Double = 0
    var cpuPerRoundTrip: Double { count > 0 ? cpuSeconds / count : 0 }
    var clientCPUPerRoundTrip: Double { count > 0 ? clientCPUSeconds / count : 0 }
}

/// CPU seconds (user + system) a process has used so far.
private func cpuSeconds(_ pid: Int32) -> Double {
    let (user, system) = cpuTimes(pid)
    return user + system
}

/// User and system (kernel) CPU seconds a process has used so far.
private func cpuTimes(_ pid: Int32) -> (user: Double, system: Double) {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = text.lastIndex(of: ")")
    else { return (0, 0) }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // After the command name: state is field 3, utime 14, stime 15 (1-based) -> indices 11, 12.
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
        return (0, 0)
    }
    let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
    return (user / tick, system / tick)
}

/// Median rate and latencies over the runs; CPU per round trip over all of them.
private func summarize(_ runs: [EchoResult]) -> EchoResult? {
    guard !runs.isEmpty else { return nil }
    let byRate = runs.sorted { $0.rate < $1.rate }
    var median = byRate[byRate.count / 2]
    median.count = runs.reduce(0) { $0 + $1.count }
    median.cpuSeconds = runs.reduce(0) { $0 + $1.cpuSeconds }
    median.clientCPUSeconds = runs.reduce(0) { $0 + $1.clientCPUSeconds }
    median.systemSeconds = runs.reduce(0) { $0 + $1.systemSeconds }
    median.clientSystemSeconds = runs.reduce(0) { $0 + $1.clientSystemSeconds }
    median.errors = runs.reduce(0) { $0 + $1.errors }
    return median
}

/// How the load generator runs: the same for both servers.
private struct LoadClient {
    var loops: Int
    var busyPollMicros: Int
    var pollAlways: Bool
}

/// One echo run against `url`; the server's CPU (process `server`) is counted while the load
/// generator runs its echo loop (between its START and STOP lines).
private func runEcho(url: String, conns: Int, seconds: Double, client: LoadClient, server: Int32)
    -> EchoResult?
{
    let arguments = [
        "--load", "--echo", url, String(conns), String(seconds), String(client.loops),
        String(client.busyPollMicros), client.pollAlways ? "always" : "free-cores",
    ]
    guard let child = runChild(arguments, waitFor: "START") else { return nil }
    defer { finish(child) }
    let before = cpuTimes(server)
    guard nextLine(child, startingWith: "STOP") != nil else { return nil }
    let after = cpuTimes(server)
    guard nextLine(child, startingWith: "RESULT") != nil, var result = lastResult(child) else { return nil }
    result.cpuSeconds = after.user + after.system - before.user - before.system
    result.systemSeconds = after.system - before.system
    return result
}

private func lastResult(_ child: ChildProcess) -> EchoResult? {
    // The RESULT line was consumed; the values follow on the next line.
    guard let line = nextLine(child, startingWith: "count=") else { return nil }
    var values: [String: Double] = [:]
    for field in line.split(separator: " ") {
        let kv = field.split(separator: "=")
        if kv.count == 2 { values[String(kv[0])] = Double(kv[1]) }
    }
    return EchoResult(
        rate: values["rate"] ?? 0, p50: values["p50"] ?? 0, p99: values["p99"] ?? 0,
        errors: Int(values["errors"] ?? 0), count: values["count"] ?? 0,
        clientCPUSeconds: values["clientcpu"] ?? 0, clientSystemSeconds: values["clientsys"] ?? 0)
}

// MARK: Load generator (child process)

/// Loop-confined bookkeeping of the load generator.
private final class LoadState: @unchecked Sendable {
    var sockets: [WebSocket] = []
    var failed = 0
    var started = 0
    var latencies: [UInt64] = []
    var finished = 0
    var deadline: DispatchTime = .distantFuture
    var stopped = false
    let done = DispatchSemaphore(value: 0)
}

/// When one connection's message went out (loop-confined).
private final class Slot: @unchecked Sendable {
    var sentAt: UInt64 = 0
}

/// Writes a line to stdout unbuffered (the parent reads it through a pipe).
private func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

private func runLoadGenerator(_ arguments: [String]) -> Int32 {
    guard arguments.count >= 3, let count = Int(arguments[2]) else { return 2 }
    let mode = arguments[0]
    let url = arguments[1]
    // The client loops (echo: as asked, idle: two); connection i lives on loop i % loops.
    let asked = arguments.count > 4 ? max(1, Int(arguments[4]) ?? 1) : 2
    let busyPoll = BusyPoll(
        budget: .microseconds(arguments.count > 5 ? max(0, Int(arguments[5]) ?? 0) : 0),
        onlyWithFreeCores: !(arguments.count > 6 && arguments[6] == "always"))
    let loopCount = min(asked, max(1, count))
    let loops = (0..<loopCount).map { EventLoop(name: "load-\($0)", busyPoll: busyPoll) }
    let states = (0..<loopCount).map { _ in LoadState() }
    let perLoop = (0..<loopCount).map { count / loopCount + ($0 < count % loopCount ? 1 : 0) }
    let opened = DispatchSemaphore(value: 0)
    let inFlightLimit = 128

    // Open the connections, at most `inFlightLimit` handshakes at a time per loop.
    for (index, loop) in loops.enumerated() {
        let state = states[index]
        let target = perLoop[index]
        @Sendable func openNext() {
            guard state.started < target else { return }
            state.started += 1
            var options = WebSocketOptions()
            options.pingInterval = .seconds(600)
            WebSocketClient.connect(url: url, options: options, timeout: .seconds(30), loop: loop) { result in
                switch result {
                case .success(let socket): state.sockets.append(socket)
                case .failure: state.failed += 1
                }
                if state.sockets.count + state.failed == target { opened.signal() } else { openNext() }
            }
        }
        loop.execute {
            if target == 0 { opened.signal() }
            for _ in 0..<min(inFlightLimit, target) { openNext() }
        }
    }
    for _ in loops { opened.wait() }
    let openCount = states.reduce(0) { $0 + $1.sockets.count }
    let failedCount = states.reduce(0) { $0 + $1.failed }

    if mode == "--idle" {
        emit("READY \(openCount) failed=\(failedCount)")
        _ = FileHandle.standardInput.readDataToEndOfFile()
        return 0
    }

    let seconds = arguments.count > 3 ? Double(arguments[3]) ?? 2 : 2
    let payload = String(repeating: "x", count: 32)
    // CPU is counted from START to STOP, on both sides: the echo loop, not connecting.
    emit("START")
    let cpuAtStart = cpuTimes(getpid())
    let start = DispatchTime.now()
    let deadline = start + seconds
    for (index, loop) in loops.enumerated() {
        let state = states[index]
        loop.execute {
            state.latencies.reserveCapacity(1 << 20)
            state.deadline = deadline
            for socket in state.sockets {
                let slot = Slot()
                slot.sentAt = DispatchTime.now().uptimeNanoseconds
                socket.onMessage { socket, _ in
                    let now = DispatchTime.now()
                    state.latencies.append(now.uptimeNanoseconds - slot.sentAt)
                    if now < state.deadline {
                        slot.sentAt = now.uptimeNanoseconds
                        socket.send(text: payload)
                    } else {
                        state.finished += 1
                        if state.finished == state.sockets.count { state.done.signal() }
                    }
                }
                socket.onClose { _, _, _ in
                    if state.stopped { return }
                    state.failed += 1
                    state.finished += 1
                    if state.finished == state.sockets.count { state.done.signal() }
                }
                socket.send(text: payload)
            }
            if state.sockets.isEmpty { state.done.signal() }
        }
    }
    for state in states { _ = state.done.wait(timeout: .now() + seconds + 30) }
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    let cpuAtStop = cpuTimes(getpid())
    emit("STOP")
    var all: [UInt64] = []
    var failed = 0
    for (index, loop) in loops.enumerated() {
        let collected = DispatchSemaphore(value: 0)
        let state = states[index]
        let box = LatencyBox()
        loop.execute {
            box.values = state.latencies
            box.failed = state.failed
            state.stopped = true
            for socket in state.sockets { socket.close() }
            collected.signal()
        }
        collected.wait()
        all += box.values
        failed += box.failed
    }
    all.sort()
    func quantile(_ q: Double) -> Double {
        all.isEmpty ? 0 : Double(all[min(all.count - 1, Int(Double(all.count) * q))]) / 1e9
    }
    emit("RESULT")
    emit(
        "count=\(all.count) clientcpu=\(cpuAtStop.user + cpuAtStop.system - cpuAtStart.user - cpuAtStart.system) "
            + "clientsys=\(cpuAtStop.system - cpuAtStart.system) rate=\(Double(all.count) / elapsed) "
            + "p50=\(quantile(0.5)) p99=\(quantile(0.99)) errors=\(failed)")
    usleep(100_000)
    return 0
}

/// Hands latencies from a loop to the main thread (after a semaphore).
private final class LatencyBox: @unchecked Sendable {
    var values: [UInt64] = []
    var failed = 0
}
