import CPostgres
import Foundation

/// Where the PostgreSQL database is: a libpq connection string, either a URI
/// (`postgres://user:password@host:port/db?sslmode=require`) or `key=value` pairs.
/// `description` hides the password, so the value may be logged.
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    /// The string handed to libpq. Holds the password, if any: never print it.
    public let connectionString: String

    public init(_ connectionString: String) {
        self.connectionString = connectionString
    }

    /// Whether the string looks like something libpq could parse (a URI or key=value pairs).
    public var isPlausible: Bool {
        let s = connectionString
        return s.hasPrefix("postgres://") || s.hasPrefix("postgresql://") || s.contains("=")
    }

    public var description: String { Self.redacted(connectionString) }

    /// The connection string as libpq parses it, `key=value` pairs with the password as
    /// `***`; an unparsable string is not echoed at all (it could hold a password).
    static func redacted(_ text: String) -> String {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(text, &error) else {
            if let error { PQfreemem(error) }
            return "(unparsable connection string)"
        }
        defer { PQconninfoFree(options) }
        var parts: [String] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                let key = String(cString: keyword)
                parts.append(key == "password" ? "password=***" : "\(key)=\(String(cString: value))")
            }
            option += 1
        }
        return parts.joined(separator: " ")
    }
}

/// One libpq connection. Not thread-safe: used by one thread at a time (the pool hands it out
/// to one borrower at a time).
final class PostgresConnection {
    private var handle: OpaquePointer?
    /// Statements prepared on this session by ``executePipelined(_:code:)``, by their SQL.
    private var prepared: [String: String] = [:]

    /// Defaults that keep a dead or unreachable database from hanging the storage thread:
    /// give up connecting after 5 s, and notice a silent peer through TCP keepalives (about
    /// 25 s) and unacknowledged sends (`tcp_user_timeout`, 15 s). The connection string may set
    /// any of them differently.
    static let defaults: [(String, String)] = [
        ("connect_timeout", "5"), ("keepalives", "1"), ("keepalives_idle", "10"),
        ("keepalives_interval", "5"), ("keepalives_count", "3"), ("tcp_user_timeout", "15000"),
        ("application_name", "eleven-relay"),
    ]

    init(_ url: PostgresURL) throws(RelayStorageError) {
        // Keywords are applied in order and the expanded `dbname` (the whole connection
        // string) comes last, so what the operator wrote overrides the defaults.
        let pairs = Self.defaults + [("dbname", url.connectionString)]
        let keys = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer { for pointer in keys + values { free(pointer) } }
        let conn: OpaquePointer? = (keys.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { k in
            (values.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { v in
                PQconnectdbParams(k.baseAddress, v.baseAddress, 1)
            }
        }
        guard let conn, PQstatus(conn) == CONNECTION_OK else {
            let message = conn.map { Self.message(PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(conn)
            throw RelayStorageError(.open, "cannot connect to \(url): \(message)")
        }
        handle = conn
        // Notices (such as "relation already exists, skipping") are not errors: drop them
        // instead of letting libpq print them on stderr.
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
    }

    deinit { close() }

    func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        prepared = [:]
    }

    /// The value of one connection option in effect (for tests).
    func option(_ keyword: String) -> String? {
        guard let handle, let options = PQconninfo(handle) else { return nil }
        defer { PQconninfoFree(options) }
        var option = options
        while let key = option.pointee.keyword {
            if String(cString: key) == keyword { return option.pointee.val.map { String(cString: $0) } }
            option += 1
        }
        return nil
    }

    /// The socket, for waiting on notifications (-1 when closed).
    var socket: Int32 {
        guard let handle else { return -1 }
        return PQsocket(handle)
    }

    /// Reads whatever the server sent; false when the connection is broken.
    func consumeInput() -> Bool {
        guard let handle else { return false }
        return PQconsumeInput(handle) == 1
    }

    /// Takes the `NOTIFY`s received so far and says how many there were, leaving out those
    /// whose payload is `ignoredPayload`.
    func takeNotifications(ignoring ignoredPayload: String? = nil) -> Int {
        guard let handle else { return 0 }
        var count = 0
        while let notification = PQnotifies(handle) {
            let payload = notification.pointee.extra.map { String(cString: $0) }
            if ignoredPayload == nil || payload != ignoredPayload { count += 1 }
            PQfreemem(notification)
        }
        return count
    }

    /// Whether the connection is still usable (libpq notices a broken socket on the next call).
    var isHealthy: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Whether the server is in the middle of a transaction on this connection (a borrower
    /// that failed halfway leaves it so).
    var isIdle: Bool {
        guard let handle else { return false }
        return PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    private static func message(_ raw: UnsafePointer<CChar>?) -> String {
        guard let raw else { return "unknown error" }
        return String(cString: raw).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs one statement with text parameters (`$1`, `$2`, …); nil is SQL NULL.
    @discardableResult
    func execute(_ sql: String, _ parameters: [String?] = [], code: RelayStorageError.Code = .write)
        throws(RelayStorageError) -> PostgresResult
    {
        guard let handle else { throw RelayStorageError(.closed, "database connection closed") }
        let copies: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.flatMap { strdup($0) } }
        defer { for copy in copies { free(copy) } }
        let raw: OpaquePointer? = copies.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { values in
                PQexecParams(handle, sql, Int32(parameters.count), nil, values.baseAddress, nil, nil, 0)
            }
        }
        guard let raw else {
            throw RelayStorageError(code, "\(Self.message(PQerrorMessage(handle))) (in: \(sql.prefix(60)))")
        }
        let status = PQresultStatus(raw)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = Self.message(PQresultErrorMessage(raw))
            PQclear(raw)
            throw RelayStorageError(code, "\(message) (in: \(sql.prefix(60)))")
        }
        return PostgresResult(raw)
    }

    /// Runs `statements` in one round trip (libpq pipeline mode); after the first failure the
    /// rest are skipped by the server and that failure is thrown. Returns the rows of the last
    /// statement that returned any.
    @discardableResult
    func executePipelined(
        _ statements: [(sql: String, parameters: [String?])], code: RelayStorageError.Code = .write
    ) throws(RelayStorageError) -> PostgresResult? {
        try executePipelinedRows(statements, code: code).last
    }

    /// As ``executePipelined(_:code:)``, returning the rows of every statement that returned
    /// any (a `SELECT`, or a statement with `RETURNING`), in order.
    func executePipelinedRows(
        _ statements: [(sql: String, parameters: [String?])], code: RelayStorageError.Code = .write
    ) throws(RelayStorageError) -> [PostgresResult] {
        guard let handle else { throw RelayStorageError(.closed, "database connection closed") }
        guard PQenterPipelineMode(handle) == 1 else {
            throw RelayStorageError(code, Self.message(PQerrorMessage(handle)))
        }
        var failure: String?
        for (sql, parameters) in statements {
            // Prepared once per session: the server parses and plans each statement only once.
            let name: String
            if let known = prepared[sql] {
                name = known
            } else {
                name = "eleven_\(prepared.count)"
                guard PQsendPrepare(handle, name, sql, Int32(parameters.count), nil) == 1 else {
                    failure = Self.message(PQerrorMessage(handle))
                    break
                }
                prepared[sql] = name
            }
            let copies: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.flatMap { strdup($0) } }
            defer { for copy in copies { free(copy) } }
            let sent = copies.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { values in
                    PQsendQueryPrepared(
                        handle, name, Int32(parameters.count), values.baseAddress, nil, nil, 0)
                }
            }
            if sent != 1 {
                failure = Self.message(PQerrorMessage(handle))
                break
            }
        }
        guard failure == nil, PQpipelineSync(handle) == 1 else {
            // The connection is in no state to reuse: the pool drops it.
            let message = failure ?? Self.message(PQerrorMessage(handle))
            close()
            throw RelayStorageError(code, message)
        }
        var rows: [PostgresResult] = []
        while true {
            guard let result = PQgetResult(handle) else {
                // Between one statement's results and the next; a broken connection says so.
                guard PQstatus(handle) == CONNECTION_OK else {
                    let message = Self.message(PQerrorMessage(handle))
                    close()
                    throw RelayStorageError(code, failure ?? message)
                }
                continue
            }
            let status = PQresultStatus(result)
            if status == PGRES_FATAL_ERROR, failure == nil {
                failure = Self.message(PQresultErrorMessage(result))
            }
            if status == PGRES_TUPLES_OK {
                rows.append(PostgresResult(result))
            } else {
                PQclear(result)
            }
            if status == PGRES_PIPELINE_SYNC { break }
        }
        _ = PQexitPipelineMode(handle)
        if let failure {
            // Which statements the server prepared before the failure is unknown: this session
            // is not reused (the pool opens a fresh one).
            close()
            throw RelayStorageError(code, failure)
        }
        return rows
    }

    /// Runs several statements without parameters (a migration).
    func executeScript(_ sql: String, code: RelayStorageError.Code) throws(RelayStorageError) {
        guard let handle else { throw RelayStorageError(.closed, "database connection closed") }
        guard let raw = PQexec(handle, sql) else {
            throw RelayStorageError(code, Self.message(PQerrorMessage(handle)))
        }
        defer { PQclear(raw) }
        let status = PQresultStatus(raw)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw RelayStorageError(code, Self.message(PQresultErrorMessage(raw)))
        }
    }
}

/// The rows of one query, in text format. Freed when dropped.
final class PostgresResult {
    private let raw: OpaquePointer

    init(_ raw: OpaquePointer) { self.raw = raw }
    deinit { PQclear(raw) }

    var rowCount: Int { Int(PQntuples(raw)) }
    var columnCount: Int { Int(PQnfields(raw)) }

    /// The text of one field; nil for NULL or out of range.
    func text(_ row: Int, _ column: Int) -> String? {
        guard row >= 0, row < rowCount, column >= 0, column < columnCount else { return nil }
        let r = Int32(row)
        let c = Int32(column)
        if PQgetisnull(raw, r, c) != 0 { return nil }
        guard let value = PQgetvalue(raw, r, c) else { return nil }
        return String(cString: value)
    }
}

/// A bounded pool of connections to one database. A borrower gets a connection to itself for
/// the length of `withConnection`; when every connection is lent out, borrowers wait (up to
/// `checkoutTimeout`). Broken connections (the server restarted, the network dropped) are
/// closed when returned and replaced by fresh ones on the next borrow, so the pool recovers
/// by itself once the database is back.
final class PostgresPool: @unchecked Sendable {
    let url: PostgresURL
    let maximum: Int
    let checkoutTimeout: TimeInterval
    /// Run on every connection the pool opens (session settings), if any.
    let setup: String?

    private let condition = NSCondition()
    private var idle: [PostgresConnection] = []
    private var lent = 0
    private var closed = false

    init(url: PostgresURL, maximum: Int, checkoutTimeout: TimeInterval = 10, setup: String? = nil) {
        self.url = url
        self.maximum = max(1, maximum)
        self.checkoutTimeout = checkoutTimeout
        self.setup = setup
    }

    /// Connections open now (lent and idle).
    var openCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return lent + idle.count
    }

    @discardableResult
    func withConnection<T>(_ body: (PostgresConnection) throws(RelayStorageError) -> T)
        throws(RelayStorageError) -> T
    {
        let connection = try checkOut()
        do throws(RelayStorageError) {
            let value = try body(connection)
            checkIn(connection)
            return value
        } catch {
            checkIn(connection)
            throw error
        }
    }

    private func checkOut() throws(RelayStorageError) -> PostgresConnection {
        condition.lock()
        let deadline = Date().addingTimeInterval(checkoutTimeout)
        while !closed && idle.isEmpty && lent >= maximum {
            guard condition.wait(until: deadline) else {
                condition.unlock()
                throw RelayStorageError(.open, "no free database connection in \(Int(checkoutTimeout)) s")
            }
        }
        guard !closed else {
            condition.unlock()
            throw RelayStorageError(.closed, "the store is closed")
        }
        lent += 1
        let reused = idle.popLast()
        condition.unlock()
        if let reused, reused.isHealthy { return reused }
        reused?.close()
        do throws(RelayStorageError) {
            let connection = try PostgresConnection(url)
            if let setup { try connection.executeScript(setup, code: .open) }
            return connection
        } catch {
            condition.lock()
            lent -= 1
            condition.signal()
            condition.unlock()
            throw error
        }
    }

    private func checkIn(_ connection: PostgresConnection) {
        let keep = connection.isHealthy && connection.isIdle
        if !keep { connection.close() }
        condition.lock()
        lent -= 1
        if keep && !closed { idle.append(connection) } else if keep { connection.close() }
        condition.signal()
        condition.unlock()
    }

    /// Closes idle connections; lent ones are closed when returned. Later borrows fail.
    func close() {
        condition.lock()
        closed = true
        let toClose = idle
        idle = []
        condition.broadcast()
        condition.unlock()
        for connection in toClose { connection.close() }
    }
}
