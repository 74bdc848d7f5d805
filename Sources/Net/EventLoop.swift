import CNet
import COpenSSL
import Foundation
import Support
import Synchronization

/// Monotonic time in nanoseconds (CLOCK_MONOTONIC).
@inline(__always) func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

extension Duration {
    var nanoseconds: UInt64 {
        let (s, a) = components
        if s < 0 { return 0 }
        return UInt64(s) &* 1_000_000_000 &+ UInt64(a / 1_000_000_000)
    }
}

/// Something registered with an event loop for readiness events on one descriptor.
/// Loop-confined: every method runs on the loop's thread.
protocol LoopHandler: AnyObject {
    func handleEvents(_ events: UInt32)
}

/// A cancellable timer created by ``EventLoop/schedule(after:_:)``. Cancel from any thread.
public final class LoopTimer: Sendable {
    let cancelled = Atomic<Bool>(false)
    /// Stops the timer from firing (no effect if it already fired).
    public func cancel() { cancelled.store(true, ordering: .relaxed) }
}

/// One thread blocked in `epoll_wait`, with timers and a cross-thread task queue woken through an
/// `eventfd`. Sockets registered with a loop are only touched on its thread.
/// Optionally busy polls for a short while after handling events (see ``BusyPoll``).
public final class EventLoop: @unchecked Sendable {
    private let epfd: Int32
    private let wakeFD: Int32
    private let queue = Locked<[@Sendable () -> Void]>([])
    private let running = Atomic<Bool>(true)
    private let threadToken = Atomic<UInt>(0)
    private let finished = NSCondition()
    private var isFinished = false
    // Loop-confined state.
    private var handlers: [LoopHandler?] = []
    private var generations: [UInt32] = []
    private var timers = TimerHeap()
    private var tickHandlers: [ObjectIdentifier: () -> Void] = [:]
    private var nextTick: UInt64 = 0
    /// Scratch space reads land in; shared by every connection on this loop so an idle
    /// connection owns no buffer.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// Scratch space small outgoing frames are encoded in before the write (loop thread only;
    /// whatever the kernel does not take is copied to the connection's own output).
    let frameBuffer: UnsafeMutableRawBufferPointer
    /// Random bytes for WebSocket masking keys, refilled from OpenSSL's CSPRNG 1 KiB at a time.
    private var randomPool = RandomPool(byteCount: 1024)

    /// A random 32-bit value from the pool (loop thread only).
    func randomUInt32() -> UInt32 { randomPool.nextUInt32() }

    /// The clock read once per loop iteration (cheap "now" for activity stamps).
    private(set) var iterationTime: UInt64 = monotonicNanos()

    /// Interval of the per-loop housekeeping tick that checks connection deadlines.
    let tickInterval: UInt64 = 250_000_000
    /// A name for diagnostics.
    public let name: String
    /// Busy polling after events (off by default).
    public let busyPoll: BusyPoll
    private let busyPollNanos: UInt64

    /// Starts a loop on a new thread.
    public init(name: String = "net-loop", busyPoll: BusyPoll = .off) {
        BrokenPipes.ignore()
        self.name = name
        self.busyPoll = busyPoll
        busyPollNanos = busyPoll.budget.nanoseconds
        epfd = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epfd >= 0, "epoll_create1 failed: errno \(errno)")
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        precondition(wakeFD >= 0, "eventfd failed: errno \(errno)")
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
        frameBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16384, alignment: 16)
        var ev = epoll_event()
        ev.events = EPOLLIN.rawValue
        ev.data.u64 = UInt64(UInt32.max)
        epoll_ctl(epfd, EPOLL_CTL_ADD, wakeFD, &ev)
        let thread = Thread { [self] in self.run() }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    deinit {
        readBuffer.deallocate()
        frameBuffer.deallocate()
        Glibc.close(epfd)
        Glibc.close(wakeFD)
    }

    /// Whether the caller runs on this loop's thread.
    public var inLoop: Bool {
        threadToken.load(ordering: .acquiring) == UInt(bitPattern: Int(bitPattern: pthread_self()))
    }

    /// Runs `task` on the loop thread soon. Safe from any thread.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        let wasEmpty = queue.withLock { q in
            q.append(task)
            return q.count == 1
        }
        // On the loop thread the queue is checked before the loop blocks again: no wake-up
        // (an eventfd write, then its epoll event and read) is needed.
        if wasEmpty && !inLoop { wake() }
    }

    /// Runs `task` on the loop thread after `delay`. Safe from any thread.
    @discardableResult
    public func schedule(after delay: Duration, _ task: @escaping @Sendable () -> Void) -> LoopTimer {
        let timer = LoopTimer()
        let deadline = monotonicNanos() &+ delay.nanoseconds
        if inLoop {
            timers.push(deadline: deadline, timer: timer, task: task)
        } else {
            execute { [self] in timers.push(deadline: deadline, timer: timer, task: task) }
        }
        return timer
    }

    /// Runs blocking `work` on the shared worker pool, then `completion` with its result on this
    /// loop. The loop thread never blocks.
    public func runBlocking<T: Sendable>(
        _ work: @escaping @Sendable () throws -> T,
        then completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        BlockingPool.shared.submit { [self] in
            let result = Result { try work() }
            execute { completion(result) }
        }
    }

    /// Asks the loop to exit after the current iteration. Registered sockets are left as they are.
    public func stop() {
        running.store(false, ordering: .releasing)
        wake()
    }

    /// Blocks until the loop thread has exited (after ``stop()``).
    public func waitUntilStopped() {
        finished.lock()
        while !isFinished { finished.wait() }
        finished.unlock()
    }

    private func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    // MARK: Loop-confined registration

    func register(_ fd: Int32, _ handler: LoopHandler, events: UInt32) -> Bool {
        let index = Int(fd)
        if index >= handlers.count {
            let newCount = max(index + 1, handlers.count * 2, 64)
            handlers.append(contentsOf: repeatElement(nil, count: newCount - handlers.count))
            generations.append(contentsOf: repeatElement(0, count: newCount - generations.count))
        }
        generations[index] &+= 1
        handlers[index] = handler
        var ev = epoll_event()
        ev.events = events
        ev.data.u64 = UInt64(UInt32(bitPattern: fd)) | (UInt64(generations[index]) << 32)
        if epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0 {
            handlers[index] = nil
            return false
        }
        return true
    }

    /// `epoll_ctl(EPOLL_CTL_MOD)` calls so far (loop-confined; for tests).
    private(set) var interestChanges = 0

    func modify(_ fd: Int32, events: UInt32) {
        let index = Int(fd)
        guard index < handlers.count, handlers[index] != nil else { return }
        interestChanges += 1
        var ev = epoll_event()
        ev.events = events
        ev.data.u64 = UInt64(UInt32(bitPattern: fd)) | (UInt64(generations[index]) << 32)
        epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev)
    }

    func deregister(_ fd: Int32) {
        let index = Int(fd)
        guard index < handlers.count, handlers[index] != nil else { return }
        handlers[index] = nil
        generations[index] &+= 1
        epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nil)
    }

    /// Adds a callback run on every housekeeping tick (deadlines); keyed by the owner.
    func addTick(_ owner: AnyObject, _ body: @escaping () -> Void) {
        tickHandlers[ObjectIdentifier(owner)] = body
    }

    func removeTick(_ owner: AnyObject) {
        tickHandlers[ObjectIdentifier(owner)] = nil
    }

    /// Connections with output gathered this turn (loop-confined).
    private var flushQueue: [Connection] = []

    /// Sends `connection`'s gathered output once this turn's events, tasks and timers are done.
    func flushAtEndOfTurn(_ connection: Connection) {
        flushQueue.append(connection)
    }

    /// Flushes what this turn gathered, including output that flushing itself causes (a
    /// drained handler that writes more).
    private func flushGatheredOutput() {
        var i = 0
        while i < flushQueue.count {
            let connection = flushQueue[i]
            i += 1
            connection.flushCoalesced()
        }
        flushQueue.removeAll(keepingCapacity: true)
    }

    /// Loop-confined timer for internal use (no hop).
    func scheduleInLoop(after nanos: UInt64, _ task: @escaping () -> Void) -> LoopTimer {
        let timer = LoopTimer()
        timers.push(deadline: monotonicNanos() &+ nanos, timer: timer, task: task)
        return timer
    }

    // MARK: The loop

    private func run() {
        let token = UInt(bitPattern: Int(bitPattern: pthread_self()))
        threadToken.store(token, ordering: .releasing)
        loopThreads.withLock { _ = $0.insert(token) }
        defer { loopThreads.withLock { _ = $0.remove(token) } }
        let capacity = 512
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        nextTick = monotonicNanos() &+ tickInterval
        // Busy polling continues until this time (0: block when there is nothing to do).
        var pollUntil: UInt64 = 0
        let gated = busyPoll.onlyWithFreeCores
        var pollAllowed = busyPollNanos > 0 && (!gated || BusyPollGate.coresAreFree())
        var activeSinceTick = false
        var preemptions = BusyPollGate.preemptions()
        while running.load(ordering: .acquiring) {
            var now = monotonicNanos()
            var wakeAt = nextTick
            if let first = timers.firstDeadline, first < wakeAt { wakeAt = first }
            let pendingWork = queue.withLock { !$0.isEmpty }
            let timeoutMs: Int32 =
                pendingWork ? 0 : (wakeAt <= now ? 0 : Int32(min((wakeAt - now + 999_999) / 1_000_000, 1000)))
            var n: Int32
            if timeoutMs != 0 && now < pollUntil {
                // Poll without blocking until something arrives, a timer is due, or the budget
                // is spent; cross-thread tasks arrive through the eventfd, which epoll reports.
                // No sched_yield between polls: under EEVDF each yield pushes the thread's
                // deadline back, and the debt outlives the spin (the loop is then starved when
                // it has work). A peer waiting for this core is the gate's concern.
                repeat {
                    n = epoll_wait(epfd, events, Int32(capacity), 0)
                    if n != 0 { break }
                    now = monotonicNanos()
                } while now < pollUntil && now < wakeAt && running.load(ordering: .relaxed)
                if n == 0 {
                    pollUntil = 0
                    continue
                }
            } else {
                n = epoll_wait(epfd, events, Int32(capacity), timeoutMs)
            }
            iterationTime = monotonicNanos()
            if n > 0 {
                activeSinceTick = true
                if pollAllowed { pollUntil = iterationTime &+ busyPollNanos }
                for i in 0..<Int(n) {
                    let ev = events[i]
                    let key = ev.data.u64
                    let fdBits = UInt32(truncatingIfNeeded: key)
                    if fdBits == UInt32.max {
                        var value: UInt64 = 0
                        _ = Glibc.read(wakeFD, &value, 8)
                        continue
                    }
                    let index = Int(Int32(bitPattern: fdBits))
                    guard index < handlers.count, let handler = handlers[index],
                        generations[index] == UInt32(truncatingIfNeeded: key >> 32)
                    else { continue }
                    handler.handleEvents(ev.events)
                }
            }
            let tasks = queue.withLock { q -> [@Sendable () -> Void] in
                if q.isEmpty { return [] }
                let taken = q
                q.removeAll(keepingCapacity: true)
                return taken
            }
            for task in tasks { task() }
            now = monotonicNanos()
            while let (timer, task) = timers.popExpired(now: now) {
                if !timer.cancelled.load(ordering: .relaxed) { task() }
            }
            if now >= nextTick {
                nextTick = now &+ tickInterval
                if busyPollNanos > 0 && gated && activeSinceTick {
                    let count = BusyPollGate.preemptions()
                    let contended = count - preemptions > BusyPollGate.contendedPreemptions
                    preemptions = count
                    pollAllowed = !contended && BusyPollGate.coresAreFree()
                }
                activeSinceTick = false
                for body in Array(tickHandlers.values) { body() }
            }
            if !flushQueue.isEmpty { flushGatheredOutput() }
        }
        threadToken.store(0, ordering: .releasing)
        finished.lock()
        isFinished = true
        finished.broadcast()
        finished.unlock()
    }
}

/// Threads that run an event loop (to refuse blocking calls there instead of deadlocking).
private let loopThreads = Locked<Set<UInt>>([])

extension EventLoop {
    /// Whether the calling thread runs any event loop.
    public static var currentThreadIsLoop: Bool {
        let token = UInt(bitPattern: Int(bitPattern: pthread_self()))
        return loopThreads.withLock { $0.contains(token) }
    }
}

/// A binary min-heap of timers ordered by deadline then insertion order.
struct TimerHeap {
    private struct Entry {
        var deadline: UInt64
        var sequence: UInt64
        var timer: LoopTimer
        var task: () -> Void
    }
    private var entries: [Entry] = []
    private var sequence: UInt64 = 0

    var firstDeadline: UInt64? { entries.first?.deadline }

    private static func less(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.sequence < b.sequence)
    }

    mutating func push(deadline: UInt64, timer: LoopTimer, task: @escaping () -> Void) {
        sequence &+= 1
        entries.append(Entry(deadline: deadline, sequence: sequence, timer: timer, task: task))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            if Self.less(entries[child], entries[parent]) {
                entries.swapAt(child, parent)
                child = parent
            } else {
                break
            }
        }
    }

    mutating func popExpired(now: UInt64) -> (LoopTimer, () -> Void)? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < entries.count && Self.less(entries[left], entries[smallest]) { smallest = left }
                if right < entries.count && Self.less(entries[right], entries[smallest]) { smallest = right }
                if smallest == parent { break }
                entries.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return (first.timer, first.task)
    }
}

/// A small pool of threads for blocking work (SQLite, libpq, CPU-heavy crypto) so event loops
/// never block.
public final class BlockingPool: @unchecked Sendable {
    /// The process-wide pool used by ``EventLoop/runBlocking(_:then:)``.
    public static let shared = BlockingPool(threads: 4)
    private let condition = NSCondition()
    private var work: [@Sendable () -> Void] = []

    /// Starts `threads` worker threads.
    public init(threads: Int) {
        for i in 0..<max(1, threads) {
            let thread = Thread { [self] in self.worker() }
            thread.name = "net-blocking-\(i)"
            thread.start()
        }
    }

    /// Queues `job` to run on a worker thread.
    public func submit(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        work.append(job)
        condition.signal()
        condition.unlock()
    }

    private func worker() {
        while true {
            condition.lock()
            while work.isEmpty { condition.wait() }
            let job = work.removeFirst()
            condition.unlock()
            job()
        }
    }
}

/// A fixed set of event loops; connections are spread over them.
public final class EventLoopGroup: Sendable {
    /// The loops, one thread each.
    public let loops: [EventLoop]
    private let next = Atomic<Int>(0)

    /// Starts `count` loops (default: one per core), busy polling as `busyPoll` says.
    public init(
        loopCount count: Int = ProcessInfo.processInfo.activeProcessorCount, name: String = "net-loop",
        busyPoll: BusyPoll = .off
    ) {
        loops = (0..<max(1, count)).map { EventLoop(name: "\(name)-\($0)", busyPoll: busyPoll) }
    }

    /// The next loop, round robin.
    public func nextLoop() -> EventLoop {
        let i = next.add(1, ordering: .relaxed).oldValue
        return loops[i % loops.count]
    }

    /// Stops every loop and waits for their threads to exit.
    public func shutdown() {
        for loop in loops { loop.stop() }
        for loop in loops { loop.waitUntilStopped() }
    }

    /// A process-wide group (one loop) for clients.
    public static let clients = EventLoopGroup(loopCount: 1, name: "net-client")
}
