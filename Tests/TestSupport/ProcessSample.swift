import Foundation

/// What /proc says about one process: resident memory, open descriptors, threads, CPU time.
public struct ProcessSample: Sendable, CustomStringConvertible {
    public let rssKB: Int
    public let fds: Int
    public let threads: Int
    /// User plus system CPU time so far, in milliseconds.
    public let cpuMilliseconds: Double

    public init(rssKB: Int, fds: Int, threads: Int, cpuMilliseconds: Double = 0) {
        self.rssKB = rssKB
        self.fds = fds
        self.threads = threads
        self.cpuMilliseconds = cpuMilliseconds
    }

    /// Reads /proc/`pid`; zeros where unreadable.
    public init(pid: Int32) {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else {
                return 0
            }
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
        }
        rssKB = field("VmRSS")
        threads = field("Threads")
        fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
        cpuMilliseconds = Self.cpuMilliseconds(pid: pid)
    }

    /// User plus system CPU time of a process from /proc (ms); 0 when unreadable.
    public static func cpuMilliseconds(pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        // After the command name: state is field 3, utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
            return 0
        }
        return (user + system) * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Bytes the process caused to be written to storage so far (`write_bytes` of /proc/PID/io:
    /// its SQLite WAL and checkpoints, its logs; not sockets); 0 when unreadable.
    public static func storageWrittenBytes(pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("write_bytes:") })
        else { return 0 }
        return Double(line.split(separator: " ").last ?? "") ?? 0
    }

    public var description: String {
        String(format: "RSS %.1f MB, %d fds, %d threads", Double(rssKB) / 1024, fds, threads)
    }
}
