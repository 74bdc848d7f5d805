import Foundation

/// Adaptive busy polling of an ``EventLoop``: after a wakeup that had events, the loop keeps
/// polling `epoll_wait` without blocking for up to ``budget`` before it sleeps, so a busy
/// connection's next message is picked up without a sleep and a wakeup (on a virtual machine
/// whose idle cores halt, each wakeup costs tens of microseconds). A loop with nothing to do
/// blocks at once: no CPU while idle.
public struct BusyPoll: Sendable, Equatable {
    /// How long to keep polling after handling events; zero turns busy polling off.
    public var budget: Duration
    /// Poll only while the cores have room, checked four times a second while the loop is
    /// active: not many more threads are runnable than there are cores (`/proc/loadavg`) and
    /// the loop's own thread was not preempted more than a few times since the last check. A loop that spins while
    /// other threads wait for the CPU takes the core from them, possibly from the very peer it
    /// waits for (measured: with four busy loops on two cores, polling cut throughput). False:
    /// always poll (a machine dedicated to this process, or tests).
    public var onlyWithFreeCores: Bool

    public init(budget: Duration, onlyWithFreeCores: Bool = true) {
        self.budget = budget
        self.onlyWithFreeCores = onlyWithFreeCores
    }

    /// No busy polling: block in `epoll_wait` as soon as there is nothing to do.
    public static let off = BusyPoll(budget: .zero)
    /// The servers' default: 50 µs, only with free cores.
    public static let serverDefault = BusyPoll(budget: .microseconds(50))

    /// The runnable-thread count in `/proc/loadavg` text (its 4th field, `running/total`):
    /// `"0.30 1.02 1.82 3/150 12345"` gives 3; nil when malformed.
    public static func runnableThreads(loadavg text: String) -> Int? {
        var text = text
        return text.withUTF8 { BusyPollGate.parseRunnable($0) }
    }
}

/// Whether the machine has a core to spare for busy polling.
enum BusyPollGate {
    private static let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Preemptions of a loop thread per check interval (250 ms) above which its core is
    /// contended: real contention preempts every few milliseconds, about a hundred times.
    static let contendedPreemptions = 25

    /// Involuntary context switches of the calling thread so far (`RUSAGE_THREAD`).
    static func preemptions() -> Int {
        var usage = rusage()
        guard getrusage(__rusage_who_t(1), &usage) == 0 else { return 0 }  // 1 = RUSAGE_THREAD
        return usage.ru_nivcsw
    }

    /// False when clearly more threads are runnable than there are cores (more than twice as
    /// many: a sample is an instant, and a polling pair of loops plus a passing thread or two
    /// is normal); true if `/proc/loadavg` cannot be read. Contention short of that shows in
    /// the loop's own preemptions.
    static func coresAreFree() -> Bool {
        guard let running = runnableThreads() else { return true }
        return running <= 2 * cores
    }

    /// The number of runnable threads system-wide, from `/proc/loadavg`.
    static func runnableThreads() -> Int? {
        let fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { buffer -> Int? in
            let n = read(fd, buffer.baseAddress, buffer.count)
            guard n > 0 else { return nil }
            return parseRunnable(UnsafeBufferPointer(rebasing: buffer[0..<n]))
        }
    }

    /// The runnable count in `/proc/loadavg` text (the 4th field, `running/total`):
    /// `"0.30 1.02 1.82 3/150 12345"` gives 3; nil if malformed.
    static func parseRunnable(_ text: UnsafeBufferPointer<UInt8>) -> Int? {
        var field = 0
        var value = 0
        var digits = 0
        for byte in text {
            if byte == UInt8(ascii: " ") {
                if field == 3 { return nil }  // no '/' in the field
                field += 1
                continue
            }
            guard field == 3 else { continue }
            if byte == UInt8(ascii: "/") { return digits > 0 ? value : nil }
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"), digits < 9 else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
        }
        return nil
    }
}
