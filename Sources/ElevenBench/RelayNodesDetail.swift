import Foundation
import Support
import TestSupport

// `eleven-bench relay --nodes --detail`: where the CPU of each set-up goes, per process and
// per thread (relay nodes, each PostgreSQL backend, the load generator), per 1000 pairs; how
// the PostgreSQL backends spend their time (sampled `pg_stat_activity`: running, waiting for
// a lock, or idle waiting for the relay); and with `--statements`, the statements per pair
// (`pg_stat_statements`, loaded into the throw-away cluster for this run only: it costs CPU,
// so the CPU figures of such a run are a little higher).

/// CPU seconds (user + system) of every thread of some processes, at one moment.
struct CPUSnapshot {
    /// Per process: its name, and per thread (tid) its name and CPU seconds.
    var processes: [Int32: (name: String, threads: [Int32: (name: String, seconds: Double)])] = [:]

    /// The relays, the load generator, and every child of the PostgreSQL server.
    static func take(relays: [Int32], postmaster: Int32?) -> CPUSnapshot {
        var snapshot = CPUSnapshot()
        for (i, pid) in relays.enumerated() { snapshot.add(pid, name: "relay node \(i + 1)") }
        snapshot.add(getpid(), name: "load generator")
        guard let postmaster else { return snapshot }
        snapshot.add(postmaster, name: "postgres postmaster")
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry), let stat = statFields("/proc/\(pid)/stat"), stat.count > 1,
                Int32(stat[1]) == postmaster
            else { continue }
            let command = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
            snapshot.add(pid, name: command.replacingOccurrences(of: "\0", with: " "))
        }
        return snapshot
    }

    private mutating func add(_ pid: Int32, name: String) {
        var threads: [Int32: (name: String, seconds: Double)] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            guard let tid = Int32(task) else { continue }
            let path = "/proc/\(pid)/task/\(tid)"
            guard let fields = Self.statFields("\(path)/stat"), fields.count > 12,
                let user = Double(fields[11]), let system = Double(fields[12])
            else { continue }
            let comm = (try? String(contentsOfFile: "\(path)/comm", encoding: .utf8)) ?? "?"
            let seconds = (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
            threads[tid] = (name: comm.trimmingCharacters(in: .whitespacesAndNewlines), seconds: seconds)
        }
        processes[pid] = (name, threads)
    }

    /// The fields after the command name of a `stat` file (field 3 of proc(5) is index 0).
    private static func statFields(_ path: String) -> [Substring]? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    /// What each process (and its busiest threads) used between `earlier` and this snapshot,
    /// per 1000 pairs, as lines for the report.
    func report(since earlier: CPUSnapshot, pairs: Int, seconds: Double) -> [String] {
        let per = pairs > 0 ? 1000 / Double(pairs) : 0
        var lines: [String] = []
        var total = 0.0
        var postgresOthers = 0.0
        let sorted = processes.sorted { $0.key < $1.key }
        for (pid, process) in sorted {
            var used: [(name: String, seconds: Double)] = []
            for (tid, thread) in process.threads {
                let before = earlier.processes[pid]?.threads[tid]?.seconds ?? 0
                used.append((thread.name, thread.seconds - before))
            }
            let sum = used.reduce(0) { $0 + $1.seconds }
            total += sum
            if process.name.hasPrefix("postgres:") && !process.name.contains("eleven postgres") {
                postgresOthers += sum
                continue
            }
            guard sum > 0.005 else { continue }
            var line = String(
                format: "    %6.2f CPU-s/1000 pairs %5.0f%% of a core  %@", sum * per, 100 * sum / seconds,
                String(process.name.prefix(60)))
            if used.count > 1 {
                // Threads by name, busiest first.
                var byName: [String: Double] = [:]
                for thread in used { byName[thread.name, default: 0] += thread.seconds }
                let top = byName.sorted { $0.value > $1.value }.prefix(5).filter { $0.value > 0.005 }
                line +=
                    "\n        threads: "
                    + top.map { String(format: "%@ %.0f%%", $0.key, 100 * $0.value / seconds) }.joined(
                        separator: ", ")
            }
            lines.append(line)
        }
        lines.append(
            String(
                format: "    %6.2f CPU-s/1000 pairs %5.0f%% of a core  postgres background processes",
                postgresOthers * per, 100 * postgresOthers / seconds))
        lines.append(
            String(
                format: "    %6.2f CPU-s/1000 pairs %5.0f%% of a core  total (%.2f ms CPU per pair)",
                total * per,
                100 * total / seconds, total * per))
        return lines
    }
}

/// One `psql` session on the cluster, queried line by line (unaligned, tuples only).
final class PsqlSession: @unchecked Sendable {
    private let child: ChildProcess
    private static let marker = "-- eleven-bench end --"

    init?(url: String) {
        guard
            let child = try? ChildProcess("/usr/bin/psql", ["-X", "-q", "-At", "-F", "|", url], input: .open)
        else { return nil }
        self.child = child
    }

    /// The rows `sql` (one statement) returns, as lines with `|` between the columns.
    func query(_ sql: String) -> [String] {
        guard (try? child.send(line: "\(sql);\nSELECT '\(Self.marker)';")) != nil else { return [] }
        var lines: [String] = []
        while let line = try? child.readLine(timeout: 60) {
            if line == Self.marker { return lines }
            lines.append(line)
        }
        return lines
    }

    func close() {
        child.closeInput()
        child.finish(timeout: 30)
    }
}

/// Samples what the relays' PostgreSQL backends are doing, every 20 ms, until stopped.
final class BackendSampler: @unchecked Sendable {
    private let session: PsqlSession
    private let state = Locked((counts: [String: Int](), samples: 0, running: true))
    private let done = DispatchSemaphore(value: 0)

    init?(url: String) {
        guard let session = PsqlSession(url: url) else { return nil }
        self.session = session
        Thread.detachNewThread { [self] in
            while state.withLock({ $0.running }) {
                let rows = session.query(
                    """
                    SELECT CASE WHEN state = 'active'
                        THEN 'running' || coalesce(' / waiting ' || wait_event_type || ':' || wait_event, '')
                        ELSE coalesce(state, '?') || coalesce(' / ' || wait_event, '') END,
                        count(*) FROM pg_stat_activity WHERE application_name = 'eleven-relay' GROUP BY 1
                    """)
                state.withLock {
                    $0.samples += 1
                    for row in rows {
                        let parts = row.split(separator: "|")
                        if parts.count == 2, let n = Int(parts[1]) {
                            $0.counts[String(parts[0]), default: 0] += n
                        }
                    }
                }
                usleep(20_000)
            }
            done.signal()
        }
    }

    /// Stops sampling; the average number of backends in each state.
    func stop() -> [String] {
        state.withLock { $0.running = false }
        done.wait()
        session.close()
        let (counts, samples) = state.withLock { ($0.counts, $0.samples) }
        let n = max(1, samples)
        return counts.sorted { $0.value > $1.value }.map {
            String(format: "    %5.2f backends  %@", Double($0.value) / Double(n), $0.key)
        }
    }
}

/// `pg_stat_statements` in the throw-away cluster: loaded (a restart), reset before a set-up,
/// read after it.
enum StatementCounts {
    static func enable(_ cluster: PostgresCluster) -> Bool {
        guard let session = PsqlSession(url: cluster.url) else { return false }
        _ = session.query("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        session.close()
        cluster.stop()
        do { try cluster.start() } catch { return false }
        guard let again = PsqlSession(url: cluster.url) else { return false }
        defer { again.close() }
        _ = again.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        return again.query("SELECT count(*) FROM pg_stat_statements").count == 1
    }

    static func reset(_ cluster: PostgresCluster) {
        guard let session = PsqlSession(url: cluster.url) else { return }
        _ = session.query("SELECT pg_stat_statements_reset()")
        session.close()
    }

    /// Calls per pair of each statement the relays ran, most frequent first.
    static func report(_ cluster: PostgresCluster, pairs: Int) -> [String] {
        guard let session = PsqlSession(url: cluster.url), pairs > 0 else { return [] }
        defer { session.close() }
        let rows = session.query(
            """
            SELECT calls, round(total_exec_time::numeric, 1),
                regexp_replace(left(query, 70), '\\s+', ' ', 'g')
            FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%' ORDER BY calls DESC
            """)
        var total = 0.0
        var lines: [String] = []
        for row in rows {
            let parts = row.split(separator: "|", maxSplits: 2)
            guard parts.count == 3, let calls = Double(parts[0]), calls > 0 else { continue }
            total += calls
            lines.append(
                String(
                    format: "    %6.2f per pair  %7.1f ms  %@", calls / Double(pairs),
                    Double(parts[1]) ?? 0, String(parts[2])))
        }
        return [
            String(
                format: "    %6.2f statements per pair in all (exec ms: total in the server)",
                total / Double(pairs))
        ]
            + lines.prefix(25)
    }
}

/// The postmaster's process id (first line of `postmaster.pid`).
func postmasterPID(_ cluster: PostgresCluster) -> Int32? {
    let pidFile = cluster.directory.appendingPathComponent("data/postmaster.pid").path
    guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
        let first = text.split(separator: "\n").first
    else { return nil }
    return Int32(first)
}
