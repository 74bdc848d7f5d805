import Foundation
import Support
import TestSupport

// `eleven-bench transit`: bytes per second through the transit relay of `eleven-relay
// --transit-listen` and through the reference `magic-wormhole-transit-relay` (`twist
// transitrelay` from the interop virtualenv), measured the same way in one run: pairs of
// loopback TCP clients that give the handshake, wait for `ok`, and push bytes one way.

private let transitUsage = """
    usage: eleven-bench transit [--megabytes N] [--pairs P] [--python PATH] [--relay PATH] [--no-reference]

      --megabytes N     bytes each pair moves, in MB (default 256)
      --pairs P         pairs at once, besides the single pair (default 4)
      --python PATH     the interop virtualenv's python; `twist` is taken from its directory
                        (default $ELEVEN_TEST_PYTHON, else .venv-test/bin/python)
      --relay PATH      the eleven-relay executable (default: next to this one)
      --no-reference    measure only our relay
    """

func runTransitBench(_ arguments: [String]) -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        print(transitUsage)
        return 0
    }
    var megabytes = 256
    var pairs = 4
    var python = defaultInteropPython()
    var relayPath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("eleven-relay").path
    var withReference = true
    var i = 0
    while i < arguments.count {
        let value = i + 1 < arguments.count ? arguments[i + 1] : ""
        switch arguments[i] {
        case "--megabytes": megabytes = min(4096, max(1, Int(value) ?? megabytes))
        case "--pairs": pairs = min(64, max(1, Int(value) ?? pairs))
        case "--python": python = value
        case "--relay": relayPath = value
        case "--no-reference":
            withReference = false
            i -= 1
        default:
            FileHandle.standardError.write(
                Data("eleven-bench transit: unknown option \(arguments[i])\n\n\(transitUsage)\n".utf8))
            return 2
        }
        i += 2
    }
    let workDir = FileManager.default.temporaryDirectory.appendingPathComponent(
        "eleven-bench-transit-\(getpid())")
    try? FileManager.default.createDirectory(at: workDir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: workDir) }

    guard let ourPort = try? TestSupport.freePort(),
        let ours = BenchServer.start(
            relayPath,
            [
                "--listen", "127.0.0.1:0", "--db", workDir.appendingPathComponent("eleven.sqlite").path,
                "--no-limits", "--transit-listen", "127.0.0.1:\(ourPort)",
            ], readyPrefix: "eleven-relay listening on ")
    else {
        print("eleven-bench transit: could not start \(relayPath) (build it: swift build -c release)")
        return 1
    }
    defer { ours.stop() }
    print("ours:      \(relayPath) --no-limits --transit-listen 127.0.0.1:\(ourPort), pid \(ours.pid)")
    let twist = URL(fileURLWithPath: python).deletingLastPathComponent().appendingPathComponent("twist").path
    let referencePort = (try? TestSupport.freePort()) ?? 0
    let reference =
        withReference
        ? BenchServer.start(
            twist, ["transitrelay", "--port=tcp:\(referencePort):interface=127.0.0.1"],
            waitForPort: referencePort)
        : nil
    defer { reference?.stop() }
    if let reference {
        print("reference: \(twist) transitrelay (magic-wormhole-transit-relay), pid \(reference.pid)")
    } else if withReference {
        print("reference: could not start \(twist) (set --python to the interop virtualenv's python)")
    }
    print("load: this process, blocking loopback TCP clients, 64 KiB writes; \(megabytes) MB per pair")
    print("")
    var ratios: [String] = []
    for count in [1, pairs] {
        let mine = measureTransit(port: ourPort, pairs: count, megabytes: megabytes, pid: ours.pid)
        printTransit("eleven", count, mine)
        guard let reference else { continue }
        let theirs = measureTransit(
            port: referencePort, pairs: count, megabytes: megabytes, pid: reference.pid)
        printTransit("reference", count, theirs)
        if let mine, let theirs {
            ratios.append(
                String(
                    format: "%d pair(s): %.2f×", count, mine.megabytesPerSecond / theirs.megabytesPerSecond))
        }
    }
    if !ratios.isEmpty {
        print("")
        print("throughput ratio eleven / reference: " + ratios.joined(separator: ", "))
    }
    return 0
}

private struct TransitResult {
    let megabytesPerSecond: Double
    let seconds: Double
    let serverCPU: Double
}

private func printTransit(_ name: String, _ pairs: Int, _ result: TransitResult?) {
    let label = name.padding(toLength: 10, withPad: " ", startingAt: 0)
    guard let result else {
        print("\(label) \(pairs) pair(s): FAILED")
        return
    }
    print(
        String(
            format: "%@ %d pair(s): %8.1f MB/s in all (%.2f s; relay CPU %.2f s)", label, pairs,
            result.megabytesPerSecond, result.seconds, result.serverCPU))
}

/// `pairs` pairs at once each move `megabytes` from one side to the other; the aggregate rate
/// from the first write to the last byte read.
private func measureTransit(port: UInt16, pairs: Int, megabytes: Int, pid: Int32) -> TransitResult? {
    let total = megabytes * 1_000_000
    var sockets: [(Int32, Int32)] = []
    defer {
        for (a, b) in sockets {
            close(a)
            close(b)
        }
    }
    for _ in 0..<pairs {
        let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        guard let a = try? TestSupport.connectLoopback(port: port, receiveTimeout: 60),
            let b = try? TestSupport.connectLoopback(port: port, receiveTimeout: 60)
        else { return nil }
        sockets.append((a, b))
        transitWrite(a, Array("please relay \(token) for side aaaaaaaaaaaaaaaa\n".utf8))
        transitWrite(b, Array("please relay \(token) for side bbbbbbbbbbbbbbbb\n".utf8))
        guard transitRead(a, 3) == 3, transitRead(b, 3) == 3 else { return nil }
    }
    let cpuBefore = processCPUSeconds(pid)
    let start = DispatchTime.now().uptimeNanoseconds
    let group = DispatchGroup()
    let failures = FailureCount()
    for (a, b) in sockets {
        group.enter()
        Thread.detachNewThread {
            let chunk = [UInt8](repeating: 0x5a, count: 65536)
            var sent = 0
            while sent < total {
                let n = min(chunk.count, total - sent)
                guard transitWrite(a, Array(chunk[0..<n])) else { break }
                sent += n
            }
            group.leave()
        }
        group.enter()
        Thread.detachNewThread {
            if transitRead(b, total) != total { failures.increment() }
            group.leave()
        }
    }
    guard group.wait(timeout: .now() + 600) == .success, failures.value == 0 else { return nil }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    return TransitResult(
        megabytesPerSecond: Double(total * pairs) / 1e6 / seconds, seconds: seconds,
        serverCPU: processCPUSeconds(pid) - cpuBefore)
}

/// A counter several threads bump.
private final class FailureCount: @unchecked Sendable {
    private let count = Locked(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

@discardableResult
private func transitWrite(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes {
            Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
        }
        guard n > 0 else { return false }
        offset += n
    }
    return true
}

/// Reads until `count` bytes came (or the peer closed, or a read timed out); how many came.
private func transitRead(_ fd: Int32, _ count: Int) -> Int {
    var got = 0
    var buffer = [UInt8](repeating: 0, count: 1 << 17)
    while got < count {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, count - got), 0) }
        guard n > 0 else { return got }
        got += n
    }
    return got
}
