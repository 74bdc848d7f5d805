import ClientCore
import Foundation
import SpaceModel
import TestSupport

// `eleven-bench roster`: the CPU one member command costs in a space with a long membership
// chain. A real space server (`eleven-bench spaces --serve`, the code behind eleven-server, in a
// child process) holds a space of N members; `eleven members --json` runs as one of them with a
// real state directory, first with no remembered chain (the whole chain fetched and verified, as
// every command did before issue #23) and then with it (only the events after it). `--eleven`
// runs another build's `eleven` against the same server (the one before the change, say).

private let rosterUsage = """
    usage: eleven-bench roster [--members N] [--runs K] [--eleven PATH]

      --members N    members in the space besides the owner (default 200)
      --runs K       commands measured per row (default 10)
      --eleven PATH  the `eleven` to run (default: the one beside eleven-bench)
    """

func runRosterBench(_ arguments: [String]) -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        print(rosterUsage)
        return 0
    }
    var members = 200
    var runs = 10
    var eleven = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("eleven").path
    var index = 0
    while index < arguments.count {
        let value = index + 1 < arguments.count ? arguments[index + 1] : nil
        switch (arguments[index], value) {
        case ("--members", let value?) where Int(value).map({ (1...5000).contains($0) }) == true:
            members = Int(value)!
        case ("--runs", let value?) where Int(value).map({ (1...1000).contains($0) }) == true:
            runs = Int(value)!
        case ("--eleven", let value?): eleven = value
        default:
            FileHandle.standardError.write(
                Data(benchUsageError("bad option '\(arguments[index])'", usage: rosterUsage).utf8))
            return 2
        }
        index += 2
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "eleven-bench-roster-\(getpid())")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    guard
        let server = spawn(
            CommandLine.arguments[0],
            ["spaces", "--serve", directory.appendingPathComponent("server.sqlite").path]),
        let portLine = nextLine(server, startingWith: "port "), let port = UInt16(portLine.dropFirst(5))
    else {
        FileHandle.standardError.write(Data("eleven-bench roster: the server did not start\n".utf8))
        return 1
    }
    defer { finish(server) }
    do {
        let home = directory.appendingPathComponent("home").path
        try makeSpace(members: members, server: "http://127.0.0.1:\(port)", home: home)
        print("space of \(members + 1) members (\(members + 1) membership events), `eleven members --json`")
        print("as the owner's device, \(runs) commands per row; CPU in ms per command")
        print("")
        print("chain                      client CPU  server CPU  wall")
        let state = StateDirectory(path: home)
        let forget = {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: home)) ?? []
            where name.hasPrefix("roster-") {
                unlink(state.file(name))
            }
        }
        for (label, before) in [("verified from the start", forget), ("remembered", {})] {
            // One unmeasured run: the second row starts from a remembered chain.
            _ = try memberCommand(eleven, home: home)
            var client = 0.0
            var wall = 0.0
            let serverBefore = processCPUSeconds(server.pid)
            for _ in 0..<runs {
                before()
                let cost = try memberCommand(eleven, home: home)
                client += cost.cpu
                wall += cost.wall
            }
            let serverCPU = processCPUSeconds(server.pid) - serverBefore
            print(
                label.padding(toLength: 25, withPad: " ", startingAt: 0)
                    + String(
                        format: "  %10.1f  %10.1f  %5.0f", 1000 * client / Double(runs),
                        1000 * serverCPU / Double(runs), 1000 * wall / Double(runs)))
        }
        return 0
    } catch {
        FileHandle.standardError.write(Data("eleven-bench roster: \(error)\n".utf8))
        return 1
    }
}

/// A space on `server` whose owner's device is the state at `home`, with `members` more members
/// added in batches (plain names: the cost measured is the chain's, not the names').
private func makeSpace(members: Int, server: String, home: String) throws {
    let owner = DeviceIdentity.generate()
    let saved = try SpaceSession.createSpace(
        name: "Bench", server: server, identity: owner, ownerName: "Owner")
    let state = LocalState(directory: StateDirectory(path: home))
    _ = try state.identityKey(for: owner)
    try state.updateSpaces { $0.save(saved) }
    let session = try SpaceSession(saved: saved, identity: owner)
    var roster = try session.roster()
    var added = 0
    while added < members {
        var batch: [MembershipEvent] = []
        for _ in 0..<min(100, members - added) {
            let record = MemberRecord(
                id: .random(), keys: DeviceIdentity.generate().publicKeys,
                name: "Member \(added + batch.count)")
            let event = try roster.nextEvent(.memberAdded(record), signedBy: owner)
            try roster.apply(event)
            batch.append(event)
        }
        _ = try session.client.addMembers(saved.space, events: batch)
        added += batch.count
    }
}

/// One `eleven members --json` in `home`: its CPU (user + system, from the kernel's account of
/// waited-for children) and wall time in seconds.
private func memberCommand(_ eleven: String, home: String) throws -> (cpu: Double, wall: Double) {
    let before = childrenCPU()
    let start = Date()
    let result = try TestSupport.run(
        eleven, ["members", "--json"], environment: ["ELEVEN_HOME": home], timeout: 120)
    let wall = Date().timeIntervalSince(start)
    guard result.status == 0 else {
        throw TestSupportError.server("eleven members failed (\(result.status)): \(result.stderr)")
    }
    return (childrenCPU() - before, wall)
}

private func childrenCPU() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(truncatingIfNeeded: RUSAGE_CHILDREN.rawValue), &usage)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
