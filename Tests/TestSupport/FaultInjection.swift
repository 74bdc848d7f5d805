import Foundation

/// A server on a fixed port that a fault-injection test kills with SIGKILL and starts again on
/// the same port and files (`ChildProcess` does the starting and the stopping by process id).
public final class RestartingServer: @unchecked Sendable {
    public let port: UInt16
    private let executable: String
    private let arguments: [String]
    private let lock = NSLock()
    private var current: ChildProcess?

    public init(_ executable: String, _ arguments: [String], port: UInt16) {
        self.executable = executable
        self.arguments = arguments
        self.port = port
    }

    public func start() throws {
        let process = try ChildProcess(executable, arguments, port: port)
        lock.withLock { current = process }
    }

    /// SIGKILL, then start again.
    public func killAndRestart() throws {
        let victim = lock.withLock { current }
        victim?.stop(signal: SIGKILL)
        try start()
    }

    /// Stops the server by process id (SIGTERM).
    public func stop() {
        let process = lock.withLock { () -> ChildProcess? in
            defer { current = nil }
            return current
        }
        process?.stop()
    }
}

/// Kills a ``RestartingServer`` (or anything `killAndRestart` kills and starts again) at random
/// intervals (uniform in `every` milliseconds, from a seeded generator), at most `maxKills` times;
/// run it on its own thread.
public final class RandomKiller: @unchecked Sendable {
    private let killAndRestart: @Sendable () throws -> Void
    private let every: ClosedRange<Int>
    private let maxKills: Int
    private let lock = NSCondition()
    private var state: UInt64
    private var stopped = false
    private var running = false
    private var killCount = 0
    private var failure: String?

    public convenience init(server: RestartingServer, seed: UInt64, every: ClosedRange<Int>, maxKills: Int) {
        self.init(seed: seed, every: every, maxKills: maxKills) { try server.killAndRestart() }
    }

    public init(
        seed: UInt64, every: ClosedRange<Int>, maxKills: Int,
        killAndRestart: @escaping @Sendable () throws -> Void
    ) {
        self.killAndRestart = killAndRestart
        self.every = every
        self.maxKills = maxKills
        state = seed
    }

    public func run() {
        lock.withLock { running = true }
        defer {
            lock.withLock {
                running = false
                lock.broadcast()
            }
        }
        while true {
            let wait: Int = lock.withLock {
                // SplitMix64 step.
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                return every.lowerBound + Int((z ^ (z >> 31)) % UInt64(every.count))
            }
            usleep(UInt32(wait) * 1000)
            guard !isDone else { return }
            do {
                try killAndRestart()
                lock.withLock { killCount += 1 }
            } catch {
                lock.withLock {
                    failure = "\(error)"
                    stopped = true
                }
                return
            }
        }
    }

    /// Stops killing and waits (up to 30 s) for a kill and restart under way to finish, so
    /// that what the caller checks next runs against a server nobody is killing.
    public func stop() {
        lock.withLock {
            stopped = true
            let limit = Date().addingTimeInterval(30)
            while running && lock.wait(until: limit) {}
        }
    }

    /// Stopped, failed, or every kill done.
    public var isDone: Bool { lock.withLock { stopped || killCount >= maxKills } }
    public var kills: Int { lock.withLock { killCount } }
    /// Why a restart failed, if one did.
    public var restartFailure: String? { lock.withLock { failure } }
}
