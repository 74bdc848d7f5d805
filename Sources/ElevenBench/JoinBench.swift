import Foundation
import TestSupport

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
                Data(benchUsageError("unknown option '\(arguments[index])'", usage: joinUsage).utf8))
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
    var children: [ChildProcess] = []
    defer {
        for child in children { child.finish(timeout: 5) }
        try? FileManager.default.removeItem(at: directory)
    }

    // The relay and the space server.
    let relayURL: String
    if let relay {
        relayURL = relay
    } else {
        guard let port = try? TestSupport.freePort(),
            let child = try? ChildProcess(
                venvBin.appendingPathComponent("twist").path,
                [
                    "wormhole-mailbox", "--port=tcp:\(port):interface=127.0.0.1",
                    "--channel-db=\(directory.appendingPathComponent("relay.sqlite").path)",
                ], port: port, timeout: 20)
        else { return fail("the reference mailbox server did not start") }
        children.append(child)
        relayURL = "ws://127.0.0.1:\(port)/v1"
    }
    guard let serverPort = try? TestSupport.freePort(),
        let serverChild = try? ChildProcess(
            server, ["--listen", "127.0.0.1:\(serverPort)", "--quiet"],
            environment: ["ELEVEN_SERVER_HOME": directory.appendingPathComponent("server").path],
            port: serverPort, timeout: 20)
    else { return fail("eleven-server did not start") }
    children.append(serverChild)

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
        guard let invite = try? ChildProcess(eleven, ["invite", "--short", "--yes"], environment: paul),
            let code = try? invite.value(afterPrefix: "Invite code: ", timeout: 20)
        else { return fail("eleven invite did not print a code") }
        let sam = [
            "ELEVEN_HOME": directory.appendingPathComponent("sam\(run)").path, "ELEVEN_RELAY": relayURL,
        ]
        let start = ContinuousClock.now
        let status = runToEnd(eleven, ["join", code, "--name", "Sam"], environment: sam)
        let elapsed = ContinuousClock.now - start
        invite.finish(timeout: 5)
        if status == 0 { joins.append(milliseconds(elapsed)) } else { failures += 1 }

        // Reference: `wormhole receive` of a short text, the sender already waiting.
        guard
            let sender = try? ChildProcess(
                wormhole,
                ["--relay-url", relayURL, "send", "--text", "hello from the bench", "--hide-progress"],
                environment: ["HOME": directory.path]),
            let wormholeCode = try? sender.value(afterPrefix: "Wormhole code is: ", in: .stderr, timeout: 20)
        else { return fail("wormhole send did not print a code") }
        let wstart = ContinuousClock.now
        let wstatus = runToEnd(
            wormhole, ["--relay-url", relayURL, "receive", "--hide-progress", wormholeCode],
            environment: ["HOME": directory.path])
        let welapsed = ContinuousClock.now - wstart
        sender.finish(timeout: 5)
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

/// Runs a program to its end (at most 60 s); its exit status, -1 if it did not start.
func runToEnd(_ executable: String, _ arguments: [String], environment: [String: String]) -> Int32 {
    (try? ChildProcess.run(executable, arguments, environment: environment))?.status ?? -1
}
