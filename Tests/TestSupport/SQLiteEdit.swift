import Foundation

extension TestSupport {
    /// Runs one SQL statement on a SQLite database file (of a stopped server) with Python's
    /// sqlite3 module, e.g. to age a stored row where a server's clock cannot be moved. Returns
    /// the number of rows changed.
    @discardableResult
    public static func runSQL(database: String, _ sql: String) throws -> Int {
        let script = """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1]); n = c.execute(sys.argv[2]).rowcount; c.commit(); print(n)
            """
        let result = try run("/usr/bin/env", ["python3", "-c", script, database, sql], timeout: 30)
        guard result.status == 0,
            let count = Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw TestSupportError.server("python3 sqlite3 failed (\(result.status)): \(result.stderr)")
        }
        return count
    }
}

extension TestSupport {
    /// Runs one query on a SQLite database file (of a stopped server, or a copy) with Python's
    /// sqlite3 module and returns its rows, each value as text (BLOBs as lowercase hex).
    public static func querySQL(database: String, _ sql: String) throws -> [[String]] {
        let script = """
            import json, sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            rows = [[v.hex() if isinstance(v, bytes) else ("" if v is None else str(v)) for v in r]
                    for r in c.execute(sys.argv[2])]
            print(json.dumps(rows))
            """
        let result = try run("/usr/bin/env", ["python3", "-c", script, database, sql], timeout: 30)
        guard result.status == 0,
            let rows = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String]]
        else {
            throw TestSupportError.server("python3 sqlite3 failed (\(result.status)): \(result.stderr)")
        }
        return rows
    }
}
