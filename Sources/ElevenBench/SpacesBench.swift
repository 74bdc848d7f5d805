import ClientCore
import Foundation
import Net
import SpaceModel
import SpaceServer
import Synchronization
import TestSupport

// `eleven-bench spaces`: messages appended and read per second through a real space server
// (SpaceHTTPServer, the code behind eleven-server, in a child process so its memory is its own)
// at 1 and 50 concurrent clients, the server's resident memory, and as the reference measured in
// the same run, the raw cost of `SpaceAPI.handle` for the same requests without HTTP.

private let spacesUsage = """
    usage: eleven-bench spaces [--seconds S] [--quick]

      --seconds S   duration of each measured phase (default 2)
      --quick       0.5 s phases
    """

func runSpacesBench(_ arguments: [String]) -> Int32 {
    if arguments.first == "--serve" { return serveSpaces(Array(arguments.dropFirst())) }
    if arguments.contains("--help") || arguments.contains("-h") {
        print(spacesUsage)
        return 0
    }
    var seconds = 2.0
    var index = 0
    while index < arguments.count {
        switch arguments[index] {
        case "--quick": seconds = 0.5
        case "--seconds" where index + 1 < arguments.count:
            seconds = min(max(Double(arguments[index + 1]) ?? seconds, 0.2), 10)
            index += 1
        default:
            FileHandle.standardError.write(
                Data(benchUsageError("unknown option '\(arguments[index])'", usage: spacesUsage).utf8))
            return 2
        }
        index += 1
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "eleven-bench-spaces-\(getpid())")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }

    do {
        let raw = try RawSpace(databasePath: directory.appendingPathComponent("raw.sqlite").path)
        guard
            let child = spawn(
                CommandLine.arguments[0],
                ["spaces", "--serve", directory.appendingPathComponent("server.sqlite").path]),
            let portLine = nextLine(child, startingWith: "port "), let port = UInt16(portLine.dropFirst(5))
        else {
            FileHandle.standardError.write(Data("eleven-bench spaces: the server did not start\n".utf8))
            return 1
        }
        defer { finish(child) }
        let pid = child.pid
        let url = "http://127.0.0.1:\(port)"
        let identity = DeviceIdentity.generate()
        let saved = try SpaceSession.createSpace(name: "Bench", server: url, identity: identity)
        let session = try SpaceSession(saved: saved, identity: identity)
        let opened = try session.open(thread: nil)
        let thread = opened.thread.id
        guard let key = opened.keys[thread] else { return 1 }
        let idle = memory(pid)
        print(String(format: "server resident memory idle: %.1f MiB", Double(idle.rss) / 1_048_576))
        print("SQLite WAL with synchronous=FULL: every append is one committed transaction (fsync).")
        print("")
        print("clients  path                 append msg/s   read msg/s")

        var stored: Int64 = 0
        for clients in [1, 50] {
            // Raw reference: SpaceAPI.handle in this process, same concurrency, same bodies.
            let offset = raw.stored
            let rawAppend = hammer(clients: clients, seconds: seconds, limit: raw.bodies.count - offset) {
                slot in
                try raw.append(offset + slot)
            }
            let rawTotal = rawAppend.operations + raw.stored
            raw.stored = rawTotal
            let rawRead = hammer(clients: clients, seconds: seconds, limit: .max) { slot in
                try raw.read(since: (slot * 7919) % max(rawTotal - 100, 1))
            }
            // Through HTTP. Messages are made up front so client crypto does not compete.
            let count = Int(max(rawAppend.rate, 500) * seconds * 2)
            let messages = (0..<count).map { number in
                identity.encrypt(
                    Array("message \(number)".utf8), with: key, in: saved.space, thread: thread,
                    as: saved.member)
            }
            let appended = hammer(clients: clients, seconds: seconds, limit: messages.count) { slot in
                try session.client.post(messages[slot])
                return 1
            }
            stored += Int64(appended.operations)
            let total = stored
            let read = hammer(clients: clients, seconds: seconds, limit: .max) { slot in
                let since = Int64(slot * 7919) % max(total - 100, 1)
                return try session.client.messages(saved.space, thread: thread, since: since, limit: 100)
                    .messages.count
            }
            let errors = rawAppend.errors + rawRead.errors + appended.errors + read.errors
            print(
                String(
                    format: "%7d  raw SpaceAPI.handle  %12.0f  %11.0f", clients, rawAppend.rate, rawRead.rate)
            )
            print(
                String(format: "%7d  HTTP (eleven-server) %12.0f  %11.0f", clients, appended.rate, read.rate))
            print(
                String(
                    format: "%7d  ratio HTTP/raw       %12.2f  %11.2f%@", clients,
                    appended.rate / rawAppend.rate,
                    read.rate / rawRead.rate, errors > 0 ? "  (\(errors) errors)" as NSString : "" as NSString
                ))
        }
        let after = memory(pid)
        print("")
        print(
            String(
                format: "server resident memory after load: %.1f MiB (peak %.1f MiB), %lld messages stored",
                Double(after.rss) / 1_048_576, Double(after.peak) / 1_048_576, stored))
        return 0
    } catch {
        FileHandle.standardError.write(Data("eleven-bench spaces: \(error)\n".utf8))
        return 1
    }
}

// MARK: Raw reference

/// A space in a `SpaceAPI` of this process, for the reference: the same requests as the HTTP
/// path, without HTTP (no sockets, no JSON decoding of answers).
private final class RawSpace: @unchecked Sendable {
    let api: SpaceAPI
    let headers: [String: String]
    let target: String
    let bodies: [[UInt8]]
    /// Messages stored so far; only changed between phases.
    var stored = 0

    init(databasePath: String) throws {
        api = try SpaceAPI(databasePath: databasePath)
        let identity = DeviceIdentity.generate()
        let space = SpaceID.random()
        let owner = MemberID.random()
        let genesis = identity.createSpace(space, as: owner)
        let encoder = JSONEncoder()
        let createBody = try encoder.encode(SpaceWire.CreateSpaceRequest(name: "Raw", genesis: genesis))
        let created = try JSONDecoder().decode(
            SpaceWire.CreatedSpace.self,
            from: Data(
                api.handle(APIRequest(method: "POST", target: "/api/spaces", body: Array(createBody))).body))
        headers = ["Authorization": "Bearer \(created.deviceToken.token)"]
        let roster = try Roster(genesis: genesis)
        guard let ownerRecord = roster.members[owner] else { throw BenchError("no owner record") }
        let thread = ThreadID.random()
        let key = ThreadKey.random()
        let threadBody = try encoder.encode(
            SpaceWire.CreateThreadRequest(
                thread: thread, wraps: [identity.wrap(key, for: ownerRecord, in: space, thread: thread)]))
        let base = "/api/spaces/\(space)"
        guard
            api.handle(
                APIRequest(
                    method: "POST", target: "\(base)/threads", headers: headers, body: Array(threadBody))
            ).status == 201
        else { throw BenchError("could not create the thread") }
        target = "\(base)/threads/\(thread)/messages"
        bodies = try (0..<6000).map { number in
            Array(
                try encoder.encode(
                    SpaceWire.MessageRequest(
                        message: identity.encrypt(
                            Array("message \(number)".utf8), with: key, in: space, thread: thread, as: owner))
                ))
        }
    }

    func append(_ slot: Int) throws -> Int {
        let response = api.handle(
            APIRequest(method: "POST", target: target, headers: headers, body: bodies[slot]))
        guard response.status == 201 else { throw BenchError("raw append failed: \(response.status)") }
        return 1
    }

    /// Reads a page of 100 (the phase only asks for full pages).
    func read(since: Int) throws -> Int {
        let response = api.handle(
            APIRequest(method: "GET", target: "\(target)?since=\(since)&limit=100", headers: headers))
        guard response.status == 200 else { throw BenchError("raw read failed: \(response.status)") }
        return 100
    }
}

private struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: Load

private struct LoadResult {
    let operations: Int
    let rate: Double
    let errors: Int
}

/// Runs `clients` threads calling `work(slot)` until `seconds` pass or `limit` slots are used;
/// `work` returns how many messages it moved.
private func hammer(clients: Int, seconds: Double, limit: Int, work: @escaping @Sendable (Int) throws -> Int)
    -> LoadResult
{
    let next = Atomic<Int>(0)
    let moved = Atomic<Int>(0)
    let errors = Atomic<Int>(0)
    let group = DispatchGroup()
    let start = Date()
    let deadline = start.addingTimeInterval(seconds)
    for _ in 0..<clients {
        group.enter()
        Thread.detachNewThread {
            while Date() < deadline {
                let slot = next.add(1, ordering: .relaxed).oldValue
                guard slot < limit else { break }
                do {
                    moved.add(try work(slot), ordering: .relaxed)
                } catch {
                    errors.add(1, ordering: .relaxed)
                }
            }
            group.leave()
        }
    }
    group.wait()
    let elapsed = Date().timeIntervalSince(start)
    let total = moved.load(ordering: .relaxed)
    return LoadResult(
        operations: total, rate: Double(total) / elapsed, errors: errors.load(ordering: .relaxed))
}

/// Resident and peak resident memory of `pid` in bytes (`/proc/<pid>/status`).
private func memory(_ pid: Int32) -> (rss: Int, peak: Int) {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
        return (0, 0)
    }
    func field(_ name: String) -> Int {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
    return (field("VmRSS:"), field("VmHWM:"))
}

// MARK: Server child

/// `eleven-bench spaces --serve DB`: runs the space server on a free loopback port, prints
/// `port N`, and stops when standard input closes.
private func serveSpaces(_ arguments: [String]) -> Int32 {
    guard let database = arguments.first else { return 2 }
    var configuration = SpaceHTTPConfiguration(databasePath: database)
    configuration.listenAddresses = [SocketAddress(numericHost: "127.0.0.1", port: 0)!]
    do {
        let server = try SpaceHTTPServer(configuration: configuration)
        try server.start()
        FileHandle.standardOutput.write(Data("port \(server.localAddresses.first?.port ?? 0)\n".utf8))
        _ = FileHandle.standardInput.readDataToEndOfFile()
        server.shutdown()
        return 0
    } catch {
        FileHandle.standardError.write(Data("eleven-bench spaces --serve: \(error)\n".utf8))
        return 1
    }
}
