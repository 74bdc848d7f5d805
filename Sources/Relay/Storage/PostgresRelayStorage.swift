import Dispatch
import Foundation

/// The PostgreSQL schema, versioned in `relay_schema_version`. `migrations[i]` takes a
/// database from version `i` to `i + 1`. Append new migrations; never edit a released one.
enum PostgresRelaySchema {
    static let migrations: [String] = [
        // 1: the same tables as SQLite's version 1; messages keep their order by `seq`.
        """
        CREATE TABLE nameplates (
            app_id text NOT NULL, name text NOT NULL, mailbox_id text NOT NULL,
            PRIMARY KEY (app_id, name));
        CREATE TABLE nameplate_sides (
            app_id text NOT NULL, name text NOT NULL, side text NOT NULL,
            claimed boolean NOT NULL, added double precision NOT NULL,
            PRIMARY KEY (app_id, name, side));
        CREATE TABLE mailboxes (
            app_id text NOT NULL, id text NOT NULL, for_nameplate boolean NOT NULL,
            updated double precision NOT NULL,
            PRIMARY KEY (app_id, id));
        CREATE TABLE mailbox_sides (
            app_id text NOT NULL, mailbox_id text NOT NULL, side text NOT NULL,
            opened boolean NOT NULL, added double precision NOT NULL, mood text,
            PRIMARY KEY (app_id, mailbox_id, side));
        CREATE TABLE messages (
            seq bigserial PRIMARY KEY,
            app_id text NOT NULL, mailbox_id text NOT NULL, side text NOT NULL,
            phase text NOT NULL, body text NOT NULL, server_rx double precision NOT NULL,
            msg_id text);
        CREATE INDEX messages_by_mailbox ON messages (app_id, mailbox_id);
        """
    ]

    static var currentVersion: Int { migrations.count }

    /// Serialises migrations of relays starting at the same time on one database
    /// (`pg_advisory_xact_lock` key: "eleven-r" in ASCII).
    static let migrationLockKey = "7308604897068015218"

    /// Held (session-level) by the one node serving from the database: "eleven-s".
    static let nodeLockKey = "7308604897068015219"

    /// Write fence ("eleven-t"): every commit holds it shared; a node taking over holds it
    /// exclusively for a moment, so the commits of the node it replaces are over before it loads.
    static let fenceKey = "7308604897068015220"
}

/// A store in PostgreSQL, for relays that share one database.
///
/// Every libpq call runs on the store's own serial queue or on the caller's thread at start-up
/// (`init`, `load`), never on a network loop. Connections come from a bounded pool. Writes
/// queued while a transaction is being committed are committed together in the next one
/// (group commit); each completion runs only after the transaction holding its writes has
/// committed. The schema is migrated on start, under an advisory lock.
public final class PostgresRelayStorage: RelayStorage {
    public struct Options: Sendable, Equatable {
        /// Connections the pool may open.
        public var maximumConnections: Int
        /// How long a borrower waits for a free connection before failing.
        public var checkoutTimeoutSeconds: Double

        /// What to do when another relay already serves from the database.
        public enum Exclusivity: Sendable, Equatable {
            /// Refuse to start (the default).
            case refuse
            /// Wait in `init` until the other relay is gone, then take over (a standby).
            case wait
        }
        public var exclusivity: Exclusivity

        public init(
            maximumConnections: Int = 4, checkoutTimeoutSeconds: Double = 10,
            exclusivity: Exclusivity = .refuse
        ) {
            self.maximumConnections = maximumConnections
            self.checkoutTimeoutSeconds = checkoutTimeoutSeconds
            self.exclusivity = exclusivity
        }
    }

    /// Commit counters, for tests and metrics.
    public typealias Statistics = RelayStorageStatistics

    /// The connection holding the node lock, touched only on `lockQueue`.
    private final class LockHolder: @unchecked Sendable {
        var connection: PostgresConnection?
        var watch: DispatchSourceTimer?
    }

    public let url: PostgresURL
    private let pool: PostgresPool
    private let lockQueue = DispatchQueue(label: "eleven.relay.postgres-lock")
    private let lockHolder = LockHolder()
    private let lockQueueKey = DispatchSpecificKey<Void>()
    /// The server process id of the session holding the node lock; every commit checks that
    /// this session still holds it.
    private let lockBackend: String
    private let queue = DispatchQueue(label: "eleven.relay.postgres")
    private let queueKey = DispatchSpecificKey<Void>()
    private let commits: GroupCommit

    /// Connects, and brings the schema up to date.
    public init(url: PostgresURL, options: Options = Options()) throws(RelayStorageError) {
        let pool = PostgresPool(
            url: url, maximum: options.maximumConnections, checkoutTimeout: options.checkoutTimeoutSeconds)
        try pool.withConnection { connection throws(RelayStorageError) in try Self.migrate(connection) }
        let (connection, backend) = try Self.takeNodeLock(url: url, exclusivity: options.exclusivity)
        self.url = url
        self.pool = pool
        self.lockBackend = backend
        lockHolder.connection = connection
        queue.setSpecific(key: queueKey, value: ())
        commits = GroupCommit(queue: queue)
        lockQueue.setSpecific(key: lockQueueKey, value: ())
    }

    /// The server process id of the session holding this relay's node lock (for tests and
    /// operators: `pg_terminate_backend` on it makes a standby take over).
    public var nodeLockBackendPID: String { lockBackend }

    /// One relay serves from a database at a time: each keeps its state in memory and would
    /// not see another's writes. A session-level advisory lock on a dedicated connection marks
    /// the serving relay; it goes away with that relay's connection (process killed, host
    /// gone once TCP notices), which lets a standby take over.
    ///
    /// Fencing: each commit holds the write fence shared and checks, in the same transaction,
    /// that its node's lock session still holds the node lock. A node taking over waits for
    /// the fence exclusively once, after getting the node lock and before loading: commits of
    /// the replaced node still in flight finish first (and are loaded), later ones fail.
    /// Returns the lock's connection and its server process id.
    private static func takeNodeLock(url: PostgresURL, exclusivity: Options.Exclusivity)
        throws(RelayStorageError) -> (PostgresConnection, String)
    {
        let connection = try PostgresConnection(url)
        switch exclusivity {
        case .refuse:
            let result = try connection.execute(
                "SELECT pg_try_advisory_lock(\(PostgresRelaySchema.nodeLockKey))", code: .open)
            guard result.text(0, 0) == "t" else {
                connection.close()
                throw RelayStorageError(
                    .locked,
                    "another eleven-relay already serves from this database (one node at a time; "
                        + "start a standby with --postgres-standby)")
            }
        case .wait:
            try connection.execute("SELECT pg_advisory_lock(\(PostgresRelaySchema.nodeLockKey))", code: .open)
        }
        try connection.execute("SELECT pg_advisory_lock(\(PostgresRelaySchema.fenceKey))", code: .open)
        try connection.execute("SELECT pg_advisory_unlock(\(PostgresRelaySchema.fenceKey))", code: .open)
        let backend = try connection.execute("SELECT pg_backend_pid()", code: .open).text(0, 0) ?? ""
        return (connection, backend)
    }

    /// Checks every `interval` that the connection holding the node lock is alive; if it is
    /// not (the database restarted, the network dropped), the lock may already belong to a
    /// standby, so `lost` runs once (on the lock's own queue): stop serving at once.
    public func watchNodeLock(
        every interval: Duration = .seconds(1), lost: @escaping @Sendable (RelayStorageError) -> Void
    ) {
        let holder = lockHolder
        let timer = DispatchSource.makeTimerSource(queue: lockQueue)
        let milliseconds = Int(
            interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000)
        timer.schedule(deadline: .now() + .milliseconds(milliseconds), repeating: .milliseconds(milliseconds))
        timer.setEventHandler {
            guard let connection = holder.connection else { return }
            do throws(RelayStorageError) {
                try connection.execute("SELECT 1", code: .locked)
            } catch {
                holder.watch?.cancel()
                holder.watch = nil
                connection.close()
                holder.connection = nil
                lost(
                    RelayStorageError(.locked, "lost the connection holding the node lock: \(error.message)"))
            }
        }
        lockQueue.sync {
            holder.watch?.cancel()
            holder.watch = timer
        }
        timer.resume()
    }

    public static var currentSchemaVersion: Int { PostgresRelaySchema.currentVersion }

    /// The schema version the database is at.
    public func schemaVersion() throws(RelayStorageError) -> Int {
        try pool.withConnection { connection throws(RelayStorageError) in
            let result = try connection.execute("SELECT version FROM relay_schema_version", code: .read)
            guard let text = result.text(0, 0), let version = Int(text) else {
                throw RelayStorageError(.read, "relay_schema_version is empty")
            }
            return version
        }
    }

    /// Connections the pool holds open now.
    public var openConnections: Int { pool.openCount }

    /// Whether the database answers a trivial query now (for `/healthz`). Blocking.
    public func ping() -> RelayStorageError? {
        do throws(RelayStorageError) {
            try pool.withConnection { connection throws(RelayStorageError) in
                try connection.execute("SELECT 1", code: .read)
            }
            return nil
        } catch {
            return error
        }
    }

    private static func migrate(_ connection: PostgresConnection) throws(RelayStorageError) {
        try connection.execute("BEGIN", code: .migration)
        do throws(RelayStorageError) {
            try connection.execute(
                "SELECT pg_advisory_xact_lock(\(PostgresRelaySchema.migrationLockKey))", code: .migration)
            try connection.executeScript(
                """
                CREATE TABLE IF NOT EXISTS relay_schema_version (
                    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
                    version integer NOT NULL);
                INSERT INTO relay_schema_version (version) VALUES (0) ON CONFLICT DO NOTHING;
                """, code: .migration)
            let result = try connection.execute("SELECT version FROM relay_schema_version", code: .migration)
            guard let text = result.text(0, 0), let version = Int(text) else {
                throw RelayStorageError(.migration, "relay_schema_version is empty")
            }
            guard version <= PostgresRelaySchema.currentVersion else {
                throw RelayStorageError(
                    .schemaTooNew,
                    "database schema version \(version) is newer than this relay understands "
                        + "(\(PostgresRelaySchema.currentVersion)); use a newer eleven-relay")
            }
            for next in version..<PostgresRelaySchema.currentVersion {
                do throws(RelayStorageError) {
                    try connection.executeScript(PostgresRelaySchema.migrations[next], code: .migration)
                    try connection.execute(
                        "UPDATE relay_schema_version SET version = $1", [String(next + 1)], code: .migration)
                } catch {
                    throw RelayStorageError(.migration, "migrating to version \(next + 1): \(error.message)")
                }
            }
            try connection.execute("COMMIT", code: .migration)
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    // MARK: - Loading

    public func load() throws(RelayStorageError) -> RelaySnapshot {
        let result: Result<RelaySnapshot, RelayStorageError> = queue.sync { [pool] in
            do throws(RelayStorageError) {
                return .success(
                    try pool.withConnection { connection throws(RelayStorageError) in
                        try Self.load(connection)
                    })
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private static func double(_ text: String?) -> Double { text.flatMap(Double.init) ?? 0 }

    /// A stored string column, unescaped.
    private static func string(_ rows: PostgresResult, _ row: Int, _ column: Int) -> String {
        PostgresText.decode(rows.text(row, column) ?? "")
    }

    private static func load(_ connection: PostgresConnection) throws(RelayStorageError) -> RelaySnapshot {
        // One repeatable-read transaction: a consistent snapshot while other relays write.
        try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", code: .read)
        defer { _ = try? connection.execute("COMMIT") }
        var snapshot = RelaySnapshot()
        var rows = try connection.execute("SELECT app_id, name, mailbox_id FROM nameplates", code: .read)
        for r in 0..<rows.rowCount {
            let key = NameplateKey(
                app: AppID(string(rows, r, 0)), name: Nameplate(trusted: string(rows, r, 1)))
            snapshot.nameplates[key] = NameplateRecord(mailbox: MailboxID(string(rows, r, 2)))
        }
        rows = try connection.execute(
            "SELECT app_id, name, side, claimed, added FROM nameplate_sides", code: .read)
        for r in 0..<rows.rowCount {
            let key = NameplateKey(
                app: AppID(string(rows, r, 0)), name: Nameplate(trusted: string(rows, r, 1)))
            snapshot.nameplates[key]?.sides[Side(string(rows, r, 2))] = NameplateSideRecord(
                claimed: rows.text(r, 3) == "t",
                added: RelayInstant(secondsSince1970: double(rows.text(r, 4))))
        }
        rows = try connection.execute("SELECT app_id, id, for_nameplate, updated FROM mailboxes", code: .read)
        for r in 0..<rows.rowCount {
            let key = MailboxKey(app: AppID(string(rows, r, 0)), id: MailboxID(string(rows, r, 1)))
            snapshot.mailboxes[key] = MailboxRecord(
                forNameplate: rows.text(r, 2) == "t",
                updated: RelayInstant(secondsSince1970: double(rows.text(r, 3))))
        }
        rows = try connection.execute(
            "SELECT app_id, mailbox_id, side, opened, added, mood FROM mailbox_sides", code: .read)
        for r in 0..<rows.rowCount {
            let key = MailboxKey(app: AppID(string(rows, r, 0)), id: MailboxID(string(rows, r, 1)))
            snapshot.mailboxes[key]?.sides[Side(string(rows, r, 2))] = MailboxSideRecord(
                opened: rows.text(r, 3) == "t",
                added: RelayInstant(secondsSince1970: double(rows.text(r, 4))),
                mood: rows.text(r, 5).map(PostgresText.decode))
        }
        rows = try connection.execute(
            "SELECT app_id, mailbox_id, side, phase, body, server_rx, msg_id FROM messages ORDER BY seq",
            code: .read)
        for r in 0..<rows.rowCount {
            let key = MailboxKey(app: AppID(string(rows, r, 0)), id: MailboxID(string(rows, r, 1)))
            let id = rows.text(r, 6).flatMap { try? JSONParser.parse(PostgresText.decode($0)) } ?? .null
            snapshot.mailboxes[key]?.messages.append(
                StoredMessage(
                    side: Side(string(rows, r, 2)), phase: Phase(string(rows, r, 3)),
                    body: string(rows, r, 4),
                    serverRX: RelayInstant(secondsSince1970: double(rows.text(r, 5))), messageID: id))
        }
        return snapshot
    }

    // MARK: - Writing

    public func enqueue(_ writes: [StorageOp], completion: @escaping @Sendable (RelayStorageError?) -> Void) {
        commits.enqueue(writes, completion: completion) { [self] in drain() }
    }

    /// Commits everything queued so far in one transaction (fenced by the node lock), then runs
    /// the completions.
    private func drain() {
        let pool = self.pool
        let lockBackend = self.lockBackend
        commits.commitPending { writes throws(RelayStorageError) in
            try pool.withConnection { connection throws(RelayStorageError) in
                try connection.execute("BEGIN")
                do throws(RelayStorageError) {
                    try connection.execute(
                        "SELECT pg_advisory_xact_lock_shared(\(PostgresRelaySchema.fenceKey))")
                    let held = try connection.execute(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $1 "
                            + "AND (classid::bigint << 32 | objid::bigint) = \(PostgresRelaySchema.nodeLockKey)",
                        [lockBackend])
                    guard held.text(0, 0) == "1" else {
                        throw RelayStorageError(
                            .locked,
                            "this relay no longer holds the database's node lock (another node took over)")
                    }
                    for op in writes { try Self.apply(op, to: connection) }
                    try connection.execute("COMMIT")
                } catch {
                    _ = try? connection.execute("ROLLBACK")
                    throw error
                }
            }
        }
    }

    private static func apply(_ op: StorageOp, to connection: PostgresConnection) throws(RelayStorageError) {
        let c = EscapingWriter(connection)
        switch op {
        case .putNameplate(let key, let mailbox):
            try c.execute(
                "INSERT INTO nameplates (app_id, name, mailbox_id) VALUES ($1, $2, $3) "
                    + "ON CONFLICT (app_id, name) DO UPDATE SET mailbox_id = excluded.mailbox_id",
                [key.app.rawValue, key.name.rawValue, mailbox.rawValue])
        case .putNameplateSide(let key, let side, let record):
            try c.execute(
                "INSERT INTO nameplate_sides (app_id, name, side, claimed, added) VALUES ($1, $2, $3, $4, $5) "
                    + "ON CONFLICT (app_id, name, side) DO UPDATE SET claimed = excluded.claimed, "
                    + "added = excluded.added",
                [
                    key.app.rawValue, key.name.rawValue, side.rawValue, record.claimed ? "t" : "f",
                    text(record.added),
                ])
        case .deleteNameplate(let key):
            try c.execute(
                "DELETE FROM nameplate_sides WHERE app_id = $1 AND name = $2",
                [key.app.rawValue, key.name.rawValue])
            try c.execute(
                "DELETE FROM nameplates WHERE app_id = $1 AND name = $2",
                [key.app.rawValue, key.name.rawValue])
        case .putMailbox(let key, let forNameplate, let updated):
            try c.execute(
                "INSERT INTO mailboxes (app_id, id, for_nameplate, updated) VALUES ($1, $2, $3, $4) "
                    + "ON CONFLICT (app_id, id) DO UPDATE SET for_nameplate = excluded.for_nameplate, "
                    + "updated = excluded.updated",
                [key.app.rawValue, key.id.rawValue, forNameplate ? "t" : "f", text(updated)])
        case .touchMailbox(let key, let updated):
            try c.execute(
                "UPDATE mailboxes SET updated = $3 WHERE app_id = $1 AND id = $2",
                [key.app.rawValue, key.id.rawValue, text(updated)])
        case .putMailboxSide(let key, let side, let record):
            try c.execute(
                "INSERT INTO mailbox_sides (app_id, mailbox_id, side, opened, added, mood) "
                    + "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (app_id, mailbox_id, side) DO UPDATE SET "
                    + "opened = excluded.opened, added = excluded.added, mood = excluded.mood",
                [
                    key.app.rawValue, key.id.rawValue, side.rawValue, record.opened ? "t" : "f",
                    text(record.added), record.mood,
                ])
        case .appendMessage(let key, let message):
            try c.execute(
                "INSERT INTO messages (app_id, mailbox_id, side, phase, body, server_rx, msg_id) "
                    + "VALUES ($1, $2, $3, $4, $5, $6, $7)",
                [
                    key.app.rawValue, key.id.rawValue, message.side.rawValue, message.phase.rawValue,
                    message.body, text(message.serverRX),
                    message.messageID == .null ? nil : JSONWriter.string(message.messageID),
                ])
        case .deleteMailbox(let key):
            let parameters = [key.app.rawValue, key.id.rawValue]
            try c.execute("DELETE FROM messages WHERE app_id = $1 AND mailbox_id = $2", parameters)
            try c.execute("DELETE FROM mailbox_sides WHERE app_id = $1 AND mailbox_id = $2", parameters)
            try c.execute("DELETE FROM mailboxes WHERE app_id = $1 AND id = $2", parameters)
        }
    }

    /// Escapes every text parameter (see ``PostgresText``); times and flags are unaffected.
    private struct EscapingWriter {
        let connection: PostgresConnection
        init(_ connection: PostgresConnection) { self.connection = connection }
        func execute(_ sql: String, _ parameters: [String?]) throws(RelayStorageError) {
            try connection.execute(sql, parameters.map { $0.map(PostgresText.encode) })
        }
    }

    /// A time as text that PostgreSQL reads back to the same `Double` (Swift prints the
    /// shortest round-tripping form).
    private static func text(_ instant: RelayInstant) -> String { "\(instant.secondsSince1970)" }

    // MARK: - Lifecycle

    public func close() {
        commits.close()
        if DispatchQueue.getSpecific(key: queueKey) == nil {
            // Runs after any drain already scheduled, so queued writes are committed first.
            queue.sync {}
        }
        pool.close()
        let holder = lockHolder
        let release = {
            holder.watch?.cancel()
            holder.watch = nil
            // Released explicitly: the server ends a closed session asynchronously, and a relay
            // started right after this one closed must find the lock free.
            _ = try? holder.connection?.execute("SELECT pg_advisory_unlock_all()")
            holder.connection?.close()
            holder.connection = nil
        }
        if DispatchQueue.getSpecific(key: lockQueueKey) == nil {
            lockQueue.sync(execute: release)
        } else {
            release()
        }
    }

    public var statistics: Statistics { commits.statistics }

    /// Waits until everything queued so far is committed and its completions have run.
    public func flush() {
        if DispatchQueue.getSpecific(key: queueKey) == nil { queue.sync {} }
    }

    /// Runs `body` while commits are held back, so everything it queues lands in one
    /// transaction. For tests of group commit.
    func withCommitsPaused(_ body: () -> Void) {
        queue.suspend()
        body()
        queue.resume()
    }
}

/// PostgreSQL `text` cannot hold NUL, which JSON strings from clients may contain (`"\u0000"`).
/// Stored strings are escaped reversibly: a backslash becomes two, NUL becomes `\0`.
enum PostgresText {
    static func encode(_ text: String) -> String {
        guard text.contains("\\") || text.contains("\u{0}") else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\u{0}": out += "\\0"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func decode(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        var out = ""
        var escaped = false
        for scalar in text.unicodeScalars {
            if escaped {
                out.unicodeScalars.append(scalar == "0" ? "\u{0}" : scalar)
                escaped = false
            } else if scalar == "\\" {
                escaped = true
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        if escaped { out += "\\" }
        return out
    }
}
