import Foundation

// `eleven-bench join`: end-to-end short-code join latency on loopback, from the start of
// `eleven join CODE` to its exit (relay and eleven-server already running, the inviter's
// `eleven invite --short --yes` online), against `wormhole receive` of a short text through the
// same relay in the same run (the Python Magic Wormhole CLI, the reference).

private let joinUsage = """
    usage: eleven-bench join [--runs N] [--relay URL] [--python PATH]

      --runs N      joins and receives measured (default 15)
      --relay URL   use this relay (default: start the reference mailbox server on loopback)
      --python P    interpreter of the virtualenv with magic-wormhole and the mailbox server
                    (default $ELEVEN_TEST_PYTHON, else .venv-test/bin/python)
    """

func runJoinBench(_ arguments: [String]) -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        print(joinUsage)
        return 0
    }
    var runs = 15
    var relay: String?
    var python =
        ProcessInfo.processInfo.environment["ELEVEN_TEST_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
        ?? FileManager.default.currentDirectoryPath + "/.venv-test/bin/python"
    var index = 0
    while index < arguments.count {
        let value = index + 1 < arguments.count ? arguments[index + 1] : nil
        switch (arguments[index], value) {
        case ("--runs", let v?): runs = min(max(Int(v) ?? runs, 1), 200)
        case ("--relay", let v?): relay = v
        case ("--python", let v?): python = v
        default:
            FileHandle.standardError.write(
                Data("eleven-bench join: unknown option \(arguments[index])\n\n\(joinUsage)\n".utf8))
            return 2
        }
        index += 2
    }
    let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()
    let eleven = bin.appendingPathComponent("eleven").path
    let server = bin.appendingPathComponent("eleven-server").path
    let venvBin = URL(fileURLWithPath: python).deletingLastPathComponent()
    let wormhole = venvBin.appendingPathComponent("wormhole").path
    for (name, path) in [("eleven", eleven), ("eleven-server", server), ("wormhole", wormhole)]
    where !FileManager.default.isExecutableFile(atPath: path) {
        FileHandle.standardError.write(Data("eleven-bench join: \(name) not found at \(path)\n".utf8))
        return 1
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "eleven-bench-join-\(getpid())")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var children: [BenchProcess] = []
    defer {
        for child in children { child.stop() }
        try? FileManager.default.removeItem(at: directory)
    }

    // The relay and the space server.
    let relayURL: String
    if let relay {
        relayURL = relay
    } else {
        let port = freeLoopbackPort()
        guard
            let child = BenchProcess.start(
                venvBin.appendingPathComponent("twist").path,
                [
                    "wormhole-mailbox", "--port=tcp:\(port):interface=127.0.0.1",
                    "--channel-db=\(directory.appendingPathComponent("relay.sqlite").path)",
                ], environment: [:])
        else { return fail("the reference mailbox server did not start") }
        children.append(child)
        guard waitForPort(port) else { return fail("the reference mailbox server did not listen") }
        relayURL = "ws://127.0.0.1:\(port)/v1"
    }
    let serverPort = freeLoopbackPort()
    guard
        let serverChild = BenchProcess.start(
            server, ["--listen", "127.0.0.1:\(serverPort)", "--quiet"],
            environment: ["ELEVEN_SERVER_HOME": directory.appendingPathComponent("server").path])
    else { return fail("eleven-server did not start") }
    children.append(serverChild)
    guard waitForPort(serverPort) else { return fail("eleven-server did not listen") }

    // Paul's space with a little history.
    let paul = ["ELEVEN_HOME": directory.appendingPathComponent("paul").path, "ELEVEN_RELAY": relayURL]
    guard
        runToEnd(
            eleven,
            ["space", "create", "Bench", "--server", "http://127.0.0.1:\(serverPort)", "--as", "Paul"],
            environment: paul) == 0,
        runToEnd(eleven, ["send", "hello"], environment: paul) == 0
    else { return fail("could not create the space") }

    print("relay \(relayURL), \(runs) runs each")
    var joins: [Double] = []
    var receives: [Double] = []
    var failures = 0
    for run in 0..<runs {
        // eleven: the inviter attends; the joiner is timed from spawn to exit.
        guard let invite = BenchProcess.start(eleven, ["invite", "--short", "--yes"], environment: paul),
            let codeLine = invite.line(startingWith: "Invite code: ", inStderr: false)
        else { return fail("eleven invite did not print a code") }
        let code = String(codeLine.dropFirst("Invite code: ".count))
        let sam = [
            "ELEVEN_HOME": directory.appendingPathComponent("sam\(run)").path, "ELEVEN_RELAY": relayURL,
        ]
        let start = ContinuousClock.now
        let status = runToEnd(eleven, ["join", code, "--name", "Sam"], environment: sam)
        let elapsed = ContinuousClock.now - start
        invite.stop()
        if status == 0 { joins.append(milliseconds(elapsed)) } else { failures += 1 }

        // Reference: `wormhole receive` of a short text, the sender already waiting.
        guard
            let sender = BenchProcess.start(
                wormhole,
                ["--relay-url", relayURL, "send", "--text", "hello from the bench", "--hide-progress"],
                environment: ["HOME": directory.path]),
            let line = sender.line(startingWith: "Wormhole code is: ", inStderr: true)
        else { return fail("wormhole send did not print a code") }
        let wormholeCode = String(line.dropFirst("Wormhole code is: ".count))
        let wstart = ContinuousClock.now
        let wstatus = runToEnd(
            wormhole, ["--relay-url", relayURL, "receive", "--hide-progress", wormholeCode],
            environment: ["HOME": directory.path])
        let welapsed = ContinuousClock.now - wstart
        sender.stop()
        if wstatus == 0 { receives.append(milliseconds(welapsed)) } else { failures += 1 }
    }
    guard !joins.isEmpty, !receives.isEmpty else { return fail("no run completed") }
    let joinMedian = percentile(joins, 0.5)
    let receiveMedian = percentile(receives, 0.5)
    print("                       median ms   p90 ms   min ms")
    print(
        String(
            format: "eleven join           %9.1f  %7.1f  %7.1f", joinMedian, percentile(joins, 0.9),
            joins.min() ?? 0))
    print(
        String(
            format: "wormhole receive      %9.1f  %7.1f  %7.1f", receiveMedian, percentile(receives, 0.9),
            receives.min() ?? 0))
    print(String(format: "ratio wormhole/eleven %9.2f×", receiveMedian / joinMedian))
    print(
        "eleven join includes process start, identity creation, SPAKE2, approval, registration, "
            + "grant verification, sign-in and saving.")
    if failures > 0 { print("\(failures) runs failed and are left out") }
    return 0
}

private func fail(_ message: String) -> Int32 {
    FileHandle.standardError.write(Data("eleven-bench join: \(message)\n".utf8))
    return 1
}

func milliseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))]
}

/// A child process with both outputs collected, stopped by process id.
final class BenchProcess: @unchecked Sendable {
    let process = Process()
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()

    static func start(_ executable: String, _ arguments: [String], environment: [String: String])
        -> BenchProcess?
    {
        let child = BenchProcess()
        child.process.executableURL = URL(fileURLWithPath: executable)
        child.process.arguments = arguments
        child.process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let outPipe = Pipe()
        let errPipe = Pipe()
        child.process.standardOutput = outPipe
        child.process.standardError = errPipe
        child.process.standardInput = FileHandle.nullDevice
        do { try child.process.run() } catch { return nil }
        for (handle, isErr) in [(outPipe.fileHandleForReading, false), (errPipe.fileHandleForReading, true)] {
            Thread.detachNewThread {
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { return }
                    child.lock.lock()
                    if isErr { child.err.append(chunk) } else { child.out.append(chunk) }
                    child.lock.unlock()
                }
            }
        }
        return child
    }

    /// The first line starting with `prefix` (waits up to 20 s).
    func line(startingWith prefix: String, inStderr: Bool) -> String? {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            lock.lock()
            let text = String(decoding: inStderr ? err : out, as: UTF8.self)
            lock.unlock()
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                return String(line)
            }
            if !process.isRunning { return nil }
            usleep(2_000)
        }
        return nil
    }

    /// Waits briefly for a natural exit, then SIGTERM / SIGKILL by process id.
    func stop() {
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let hard = Date().addingTimeInterval(5)
        while process.isRunning && Date() < hard { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

private func runToEnd(_ executable: String, _ arguments: [String], environment: [String: String]) -> Int32 {
    guard let child = BenchProcess.start(executable, arguments, environment: environment) else { return -1 }
    let deadline = Date().addingTimeInterval(60)
    while child.process.isRunning && Date() < deadline { usleep(500) }
    if child.process.isRunning { kill(child.process.processIdentifier, SIGKILL) }
    child.process.waitUntilExit()
    return child.process.terminationStatus
}

private func freeLoopbackPort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 ? getsockname(fd, pointer, &length) : -1
        }
    }
    return UInt16(bigEndian: address.sin_port)
}

func waitForPort(_ port: UInt16) -> Bool {
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        close(fd)
        if connected { return true }
        usleep(20_000)
    }
    return false
}
