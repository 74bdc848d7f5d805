import Dispatch
import Foundation
import Mailbox
import Support

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
        """,
        // 2: the change feed several nodes follow (positions in commit order), and how much
        // of it the expiry leader has pruned.
        """
        CREATE TABLE relay_changes (
            seq bigserial PRIMARY KEY, node text NOT NULL, ops text NOT NULL,
            created timestamptz NOT NULL DEFAULT now());
        CREATE TABLE relay_feed (
            only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
            pruned_through bigint NOT NULL);
        INSERT INTO relay_feed (pruned_through) VALUES (0);
        """,
        // 3: feed entries are stored without compression: a batch's ops (message bodies are
        // random-looking) barely compress, and compressing them cost the database more CPU,
        // inside the feed lock, than anything else it does for a commit.
        """
        ALTER TABLE relay_changes ALTER COLUMN ops SET STORAGE EXTERNAL;
        """,
    ]

    static var currentVersion: Int { migrations.count }

    /// Serialises migrations of relays starting at the same time on one database
    /// (`pg_advisory_xact_lock` key: "eleven-r" in ASCII).
    static let migrationLockKey = "7308604897068015218"

    /// Serialises every commit of every node ("eleven-t", transaction-level), so feed
    /// positions become visible in commit order. Taken first: transactions of several nodes
    /// then never hold row locks the others wait for, so they cannot deadlock (taken just
    /// before the feed entry, two nodes' batches touching the same rows in different orders
    /// could, and the loser's commit would fail).
    static let feedLockKey = "7308604897068015220"

    /// Held (session-level) by the node that runs expiry ("eleven-x").
    static let expiryLockKey = "7308604897068015224"
}

/// A store in PostgreSQL that several relay nodes share, all serving at once (see
/// `docs/multi-node.md`).
///
/// Every libpq call runs on one of the store's own queues or on the caller's thread at
/// start-up (`init`, `load`), never on a network loop. Connections come from a bounded pool
/// (plus one for the change feed). Writes queued while a transaction is being committed are
/// committed together in the next one (group commit); each completion runs only after the
/// transaction holding its writes has committed. Each transaction also appends its writes to
/// the change feed the other nodes follow (``PostgresChangeFeed``), and the other nodes are
/// told after the commit (``PostgresNotifier``). Nameplates are created in the database
/// (``reserveNameplate(_:completion:)``), unique across nodes; requests queued while a batch
/// of them is in the database go together in the next one. The schema is migrated on start,
/// under an advisory lock.
public final class PostgresRelayStorage: RelayStorage {
    public struct Options: Sendable, Equatable {
        /// Connections the pool may open.
        public var maximumConnections: Int
        /// How long a borrower waits for a free connection before failing.
        public var checkoutTimeoutSeconds: Double
        /// How often the change feed is read even without a notification.
        public var feedPollMilliseconds: Int

        public init(
            maximumConnections: Int = 4, checkoutTimeoutSeconds: Double = 10, feedPollMilliseconds: Int = 1000
        ) {
            self.maximumConnections = maximumConnections
            self.checkoutTimeoutSeconds = checkoutTimeoutSeconds
            self.feedPollMilliseconds = feedPollMilliseconds
        }
    }

    /// Commit counters, for tests and metrics.
    public typealias Statistics = RelayStorageStatistics

    public let url: PostgresURL
    /// This store's name in the change feed (random per process).
    let nodeID: String
    private let pool: PostgresPool
    private let queue = DispatchQueue(label: "eleven.relay.postgres")
    private let queueKey = DispatchSpecificKey<Void>()
    private let pendingReservations = Locked(PendingReservations())
    private let commits: GroupCommit
    private let feed: PostgresChangeFeed
    private let notifier: PostgresNotifier

    private struct PendingReservations {
        typealias Completion = @Sendable (Result<NameplateReservation, RelayStorageError>) -> Void
        typealias Item = (request: NameplateRequest, completion: Completion)
        var items: [Item] = []
        var scheduled = false
    }

    /// Connects, and brings the schema up to date.
    public init(url: PostgresURL, options: Options = Options()) throws(RelayStorageError) {
        let pool = PostgresPool(
            url: url, maximum: options.maximumConnections, checkoutTimeout: options.checkoutTimeoutSeconds,
            setup: Self.sessionSettings)
        try pool.withConnection { connection throws(RelayStorageError) in try Self.migrate(connection) }
        self.url = url
        self.pool = pool
        nodeID = UUID().uuidString.lowercased()
        feed = PostgresChangeFeed(
            url: url, nodeID: nodeID, interval: .milliseconds(max(10, options.feedPollMilliseconds)))
        notifier = PostgresNotifier(url: url, payload: nodeID)
        queue.setSpecific(key: queueKey, value: ())
        commits = GroupCommit(queue: queue)
    }

    public var isShared: Bool { true }

    /// The pool's sessions run only key lookups (by primary key or index) and take one generic
    /// plan per statement: planned once per session instead of on every execution, and never
    /// a sequential scan, which the planner likes on these small tables of short-lived rows
    /// although their pages are mostly dead rows. Loading turns scans back on.
    static let sessionSettings = "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off"

    public func follow(_ follower: any RelayChangeFollower) { feed.start(follower) }

    public var isExpiryLeader: Bool { feed.isLeader }

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
        try loadForServing().snapshot
    }

    /// Runs on the commit queue, so writes queued before are committed first.
    public func loadForServing() throws(RelayStorageError) -> (snapshot: RelaySnapshot, position: Int64) {
        let result: Result<(snapshot: RelaySnapshot, position: Int64), RelayStorageError> = queue.sync {
            [pool] in
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

    private static func load(_ connection: PostgresConnection) throws(RelayStorageError) -> (
        snapshot: RelaySnapshot, position: Int64
    ) {
        // One repeatable-read transaction: a consistent snapshot while other relays write, and
        // the feed position it includes (positions are visible in order).
        try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", code: .read)
        defer { _ = try? connection.execute("COMMIT") }
        try connection.execute("SET LOCAL enable_seqscan = on", code: .read)
        let feed = try connection.execute(
            "SELECT GREATEST((SELECT coalesce(max(seq), 0) FROM relay_changes), "
                + "(SELECT pruned_through FROM relay_feed))", code: .read)
        let position = Int64(feed.text(0, 0) ?? "") ?? 0
        var snapshot = RelaySnapshot()
        var rows = try connection.execute("SELECT app_id, name, mailbox_id FROM nameplates", code: .read)
        for r in 0..<rows.rowCount {
            let key = NameplateKey(
                app: AppID(string(rows, r, 0)), name: Nameplate(string(rows, r, 1)))
            snapshot.nameplates[key] = NameplateRecord(mailbox: MailboxID(string(rows, r, 2)))
        }
        rows = try connection.execute(
            "SELECT app_id, name, side, claimed, added FROM nameplate_sides", code: .read)
        for r in 0..<rows.rowCount {
            let key = NameplateKey(
                app: AppID(string(rows, r, 0)), name: Nameplate(string(rows, r, 1)))
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
        return (snapshot, position)
    }

    // MARK: - Writing

    public func enqueue(_ writes: [StorageOp], completion: @escaping @Sendable (RelayStorageError?) -> Void) {
        commits.enqueue(writes, completion: completion) { [self] in drain() }
    }

    /// On the commit queue: everything queued so far, writes and nameplate requests, in one
    /// transaction and one round trip (pipelined), then the other nodes told and the
    /// completions and answers run. One transaction per round instead of one for the writes
    /// and one for the requests: each takes the feed lock every node's commits queue for.
    private func drain() {
        let requests = pendingReservations.withLock { p in
            let items = p.items
            p.items = []
            p.scheduled = false
            return items
        }
        var committed = false
        commits.commitPending { writes throws(RelayStorageError) in
            committed = true
            try commit(writes, requests)
        }
        if !committed && !requests.isEmpty { try? commit([], requests) }
    }

    /// One transaction: the writes as a few set-based statements (``PostgresWriteBatch``)
    /// with their feed entry, then each nameplate request's statement and the feed position
    /// (the requests see this node's writes, as its core did when it made them).
    private func commit(_ writes: [StorageOp], _ requests: [PendingReservations.Item])
        throws(RelayStorageError)
    {
        let inline = notifier.notifyInline()
        var statements = PostgresStatements()
        if !writes.isEmpty {
            statements = PostgresWriteBatch(writes).statements(
                node: nodeID, ops: StorageOpCoding.encode(writes), notify: inline)
        }
        var tail = PostgresStatements()
        do throws(RelayStorageError) {
            if !requests.isEmpty {
                for request in requests {
                    try Self.addReservation(request.request, node: nodeID, to: &statements)
                }
                if writes.isEmpty && inline { tail.add(Self.notify, [PostgresChangeFeed.channel, nodeID]) }
                tail.add("SELECT coalesce(max(seq), 0) FROM relay_changes", [])
            }
            let results = try pool.withConnection { connection throws(RelayStorageError) in
                try Self.runInFeedTransaction(statements, feedEntry: tail, connection)
            }
            // Rows: the lock's, the writes' feed position, one per request, the notification's,
            // the position's.
            var rows = results.dropFirst()
            var own: [Int64] = []
            if !writes.isEmpty {
                if let position = rows.first?.text(0, 0).flatMap({ Int64($0) }) { own.append(position) }
                rows = rows.dropFirst()
            }
            var answers: [NameplateReservation] = []
            if !requests.isEmpty {
                // A claim's request has two statements: the deletion of a released nameplate,
                // then the request's own.
                let claims = requests.count(where: { !$0.request.isAllocation })
                guard rows.count == requests.count + claims + (writes.isEmpty && inline ? 2 : 1),
                    let position = rows.last?.text(0, 0).flatMap({ Int64($0) })
                else { throw RelayStorageError(.write, "no answer for a nameplate") }
                for request in requests {
                    var deleted: Int64?
                    if !request.request.isAllocation {
                        deleted = rows.first?.text(0, 0).flatMap { Int64($0) }
                        rows = rows.dropFirst()
                    }
                    guard let row = rows.first else {
                        throw RelayStorageError(.write, "no answer for a nameplate")
                    }
                    rows = rows.dropFirst()
                    let (answer, created) = try Self.answer(request.request, row, position: position)
                    answers.append(answer)
                    if let deleted { own.append(deleted) }
                    if let created { own.append(created) }
                }
            }
            if !inline && !own.isEmpty { notifier.committed() }
            // This node's entries need not be read back.
            feed.ownChangesCommitted(own)
            for (request, answer) in zip(requests, answers) { request.completion(.success(answer)) }
            // Read the feed only if the answers wait for other nodes' entries not applied yet.
            if let position = answers.map(\.position).max(), !feed.hasApplied(position) { feed.wake() }
        } catch {
            for request in requests { request.completion(.failure(error)) }
            if !requests.isEmpty { feed.wake() }
            throw error
        }
    }

    /// Tells the other nodes (``PostgresChangeFeed``) at commit; the payload is this node's name.
    private static let notify = "SELECT pg_notify($1, $2)"

    /// Runs `work` then `feedEntry` in one round trip and one transaction holding the feed lock
    /// (so the entry's position becomes visible only after every earlier one's); rolls back
    /// on failure. Returns the rows of every statement that returned any. The transaction is
    /// the pipeline's implicit one: everything up to its sync, committed there, rolled back
    /// on the first error (no `BEGIN` and `COMMIT` to send and run).
    @discardableResult
    private static func runInFeedTransaction(
        _ work: PostgresStatements, feedEntry: PostgresStatements, _ connection: PostgresConnection
    ) throws(RelayStorageError) -> [PostgresResult] {
        var statements = PostgresStatements()
        statements.add("SELECT pg_advisory_xact_lock(\(PostgresRelaySchema.feedLockKey))", [])
        statements.append(work)
        statements.append(feedEntry)
        do throws(RelayStorageError) {
            return try connection.executePipelinedRows(statements.list)
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    // MARK: - Nameplates

    /// Queued for the next transaction on the commit queue (with the writes queued by then).
    public func reserveNameplate(
        _ request: NameplateRequest,
        completion: @escaping @Sendable (Result<NameplateReservation, RelayStorageError>) -> Void
    ) {
        let schedule: Bool = pendingReservations.withLock { p in
            p.items.append((request, completion))
            guard !p.scheduled else { return false }
            p.scheduled = true
            return true
        }
        if schedule { queue.async { [self] in drain() } }
    }

    /// The statement of one request, in the feed lock's transaction: the first free candidate
    /// is created (an allocation) or the one name is created or found (a claim), and a
    /// creation is appended to the feed. The unique key on `nameplates` is the last word even so.
    private static func addReservation(
        _ request: NameplateRequest, node: String, to work: inout PostgresStatements
    ) throws(RelayStorageError) {
        // The feed entry's JSON around the name the database picks (names are digits).
        let placeholder = Nameplate("\u{1}")
        let entry = StorageOpCoding.encode([
            .putNameplate(NameplateKey(app: request.app, name: placeholder), mailbox: request.mailbox)
        ])
        let around = entry.components(separatedBy: "\\u0001")
        guard around.count == 2 else { throw RelayStorageError(.write, "cannot encode a nameplate") }
        if !request.isAllocation, let name = request.candidates.first {
            // A claimed name whose every side has released it is over, as if deleted: two
            // sides releasing on two nodes may each have seen the other still claiming it in
            // its copy, and neither deleted it. Deleted here, under the feed lock, so the claim
            // makes a new one (and a new mailbox) instead of being refused as `crowded`.
            work.add(
                """
                WITH over AS (
                    DELETE FROM nameplates n WHERE n.app_id = $1 AND n.name = $2
                    AND EXISTS (SELECT 1 FROM nameplate_sides s WHERE s.app_id = $1 AND s.name = $2)
                    AND NOT EXISTS (
                        SELECT 1 FROM nameplate_sides s WHERE s.app_id = $1 AND s.name = $2 AND s.claimed)
                    RETURNING n.name),
                sides AS (
                    DELETE FROM nameplate_sides s WHERE s.app_id = $1 AND s.name IN (SELECT name FROM over)),
                logged AS (INSERT INTO relay_changes (node, ops) SELECT $3, $4 FROM over RETURNING seq)
                SELECT (SELECT seq FROM logged)
                """,
                [
                    request.app.value, name.value, node,
                    StorageOpCoding.encode([.deleteNameplate(NameplateKey(app: request.app, name: name))]),
                ])
        }
        work.add(
            """
            WITH made AS (
                INSERT INTO nameplates (app_id, name, mailbox_id)
                SELECT $1, c, $3 FROM unnest($2::text[]) WITH ORDINALITY AS t(c, o)
                WHERE NOT EXISTS (SELECT 1 FROM nameplates n WHERE n.app_id = $1 AND n.name = t.c)
                ORDER BY o LIMIT 1
                ON CONFLICT DO NOTHING RETURNING name),
            logged AS (
                INSERT INTO relay_changes (node, ops) SELECT $4, $5 || name || $6 FROM made RETURNING seq)
            SELECT (SELECT name FROM made),
                (SELECT mailbox_id FROM nameplates WHERE app_id = $1 AND name = $7),
                (SELECT seq FROM logged)
            """,
            [
                request.app.value,
                "{" + request.candidates.map(\.value).joined(separator: ",") + "}",
                request.mailbox.value, node, around[0], around[1],
                request.isAllocation ? nil : request.candidates.first?.value,
            ])
    }

    /// The answer to one request from its statement's row, valid after feed `position`; and
    /// the feed position of the nameplate's creation, if the request created it.
    private static func answer(_ request: NameplateRequest, _ row: PostgresResult, position: Int64)
        throws(RelayStorageError) -> (NameplateReservation, created: Int64?)
    {
        let grant: NameplateGrant
        var created: Int64?
        if let name = row.text(0, 0) {
            created = row.text(0, 2).flatMap { Int64($0) }
            grant = NameplateGrant(
                app: request.app, name: Nameplate(name), mailbox: request.mailbox, created: true)
        } else if !request.isAllocation, let name = request.candidates.first {
            guard let mailbox = row.text(0, 1) else {
                throw RelayStorageError(.write, "nameplate neither created nor found")
            }
            grant = NameplateGrant(
                app: request.app, name: name, mailbox: MailboxID(PostgresText.decode(mailbox)), created: false
            )
        } else {
            grant = NameplateGrant(app: request.app, name: nil, mailbox: request.mailbox, created: false)
        }
        return (NameplateReservation(grant: grant, position: position), created)
    }

    // MARK: - Lifecycle

    public func close() {
        commits.close()
        if DispatchQueue.getSpecific(key: queueKey) == nil {
            // Runs after any drain already scheduled, so queued writes are committed first.
            queue.sync {}
        }
        feed.stop()
        notifier.close()
        pool.close()
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

/// Statements with their parameters, escaped (see ``PostgresText``), to run in one round trip.
struct PostgresStatements {
    private(set) var list: [(sql: String, parameters: [String?])] = []

    mutating func add(_ sql: String, _ parameters: [String?]) {
        list.append((sql, parameters.map { $0.map(PostgresText.encode) }))
    }

    /// As ``add(_:_:)`` with parameters escaped already (array literals of escaped elements).
    mutating func addRaw(_ sql: String, _ parameters: [String?]) {
        list.append((sql, parameters))
    }

    mutating func append(_ other: PostgresStatements) { list += other.list }
}

/// PostgreSQL `text` cannot hold NUL, which JSON strings from clients may contain (`"\u0000"`).
/// Stored strings are escaped reversibly: a backslash becomes two, NUL becomes `\0`.
enum PostgresText {
    // The checks scan bytes: `String.contains` with a string argument goes through
    // Foundation's locale-aware search, a real cost on every parameter of every statement.
    static func encode(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == 0 }) else { return text }
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
        guard text.utf8.contains(UInt8(ascii: "\\")) else { return text }
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
