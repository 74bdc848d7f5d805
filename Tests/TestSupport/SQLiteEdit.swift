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
