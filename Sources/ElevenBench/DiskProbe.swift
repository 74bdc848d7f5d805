import Foundation
import Support

/// The disk's own sync latency while a benchmark row runs, measured beside it: every 20 ms a
/// 4 KiB write to a file in `directory` (the file system the databases are on) and one
/// `fdatasync`. What a durable commit of the relay or the space server waits for at least, so a
/// row's tail can be read against the disk's.
final class DiskProbe: @unchecked Sendable {
    private let state = Locked((syncs: [Double](), running: true))
    private let finished = DispatchSemaphore(value: 0)
    private let path: String

    init(directory: URL) {
        path = directory.appendingPathComponent("disk-probe-\(UUID().uuidString)").path
        let path = self.path
        Thread.detachNewThread { [self] in
            defer { finished.signal() }
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            guard fd >= 0 else { return }
            defer {
                close(fd)
                unlink(path)
            }
            let block = [UInt8](repeating: 0x5a, count: 4096)
            var offset: off_t = 0
            while state.withLock({ $0.running }) {
                let began = ContinuousClock.now
                let written = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, offset) }
                guard written == block.count, fdatasync(fd) == 0 else { return }
                let took = milliseconds(ContinuousClock.now - began)
                state.withLock { $0.syncs.append(took) }
                // A file of at most 1 MiB, rewritten in a ring: each sync writes a new block.
                offset = (offset + 4096) % (1 << 20)
                usleep(20_000)
            }
        }
    }

    /// Stops the probe and says what it saw ("N syncs of 4 KiB, p50 …").
    func stop() -> String {
        state.withLock { $0.running = false }
        finished.wait()
        let seen = state.withLock { $0.syncs }
        guard !seen.isEmpty else { return "no sync measured" }
        return String(
            format:
                "%d syncs of 4 KiB, p50 %.1f ms, p99 %.1f ms, max %.1f ms, %d over 100 ms",
            seen.count, percentile(seen, 0.5), percentile(seen, 0.99), seen.max() ?? 0,
            seen.filter { $0 > 100 }.count)
    }
}

private let diskUsage = """
    usage: eleven-bench disk [--seconds S]

    A 4 KiB write and one fdatasync every 20 ms in $TMPDIR (default /tmp) for S seconds
    (default 15), nothing else running: the sync latency every durable commit of the relay and
    the space server waits for at least, as `eleven-bench bot` measures it beside each row.
    """

func runDiskBench(_ arguments: [String]) -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        print(diskUsage)
        return 0
    }
    var seconds = 15.0
    if arguments.count == 2, arguments[0] == "--seconds", let value = Double(arguments[1]), value > 0 {
        seconds = min(value, 600)
    } else if !arguments.isEmpty {
        FileHandle.standardError.write(Data(benchUsageError("bad options", usage: diskUsage).utf8))
        return 2
    }
    let directory = FileManager.default.temporaryDirectory
    let probe = DiskProbe(directory: directory)
    Thread.sleep(forTimeInterval: seconds)
    print("eleven-bench disk: \(directory.path), \(seconds) s")
    print(probe.stop())
    return 0
}
