import Dispatch
import Foundation
import Mailbox
import SQLite

/// The default store: one SQLite file in WAL mode.
///
/// Every SQLite call runs on the store's own serial queue, never on the caller's thread.
/// Writes queued while a transaction is being committed are committed together in the next
/// one (group commit), so a burst of messages costs one fsync, not one each; each completion
/// runs only after the transaction holding its writes is durable.
public final class SQLiteRelayStorage: RelayStorage {
    public struct Options: Sendable, Equatable {
        /// `FULL` (default) survives power loss; `NORMAL` survives a crash of the process
        /// (`kill -9`) but may lose the last commits on power loss.
        public typealias Synchronous = SyncPolicy
        public var synchronous: Synchronous
        /// Overwrite deleted content (closed mailboxes' bodies) instead of leaving it in free
        /// pages.
        public var secureDelete: Bool

        public init(synchronous: Synchronous = .full, secureDelete: Bool = true) {
            self.synchronous = synchronous
            self.secureDelete = secureDelete
        }
    }

    /// Commit counters, for tests and metrics.
    public typealias Statistics = RelayStorageStatistics

    /// The connection, touched only on `queue`; and the key that tells code it runs there.
    private final class Confined: @unchecked Sendable {
        var database: SQLiteDatabase?
        /// The file's page size, read once at open (it never changes after): `PRAGMA page_size`
        /// is prepared again at every step, and reading it after every commit parsed SQL each
        /// time.
        var pageSize = 4096
        let queueKey = DispatchSpecificKey<Void>()
    }

    public let path: String
    private let queue: DispatchQueue
    private let commits: GroupCommit
    private let confined = Confined()

    /// Opens (creating if needed) the database and brings its schema up to date.
    public init(path: String, options: Options = Options()) throws(RelayStorageError) {
        self.path = path
        self.queue = DispatchQueue(label: "eleven.relay.sqlite")
        commits = GroupCommit(queue: queue, spacing: Self.commitSpacing, costFactor: Self.commitCostFactor)
        queue.setSpecific(key: confined.queueKey, value: ())
        let confined = self.confined
        let result: Result<Void, RelayStorageError> = queue.sync {
            do throws(DatabaseOpenError) {
                let database = try SQLiteDatabase.open(
                    path: path, schema: RelaySchema.schema(secureDelete: options.secureDelete),
                    sync: options.synchronous)
                confined.database = database
                confined.pageSize = (try? database.integer("PRAGMA page_size")).map(Int.init) ?? 4096
                do throws(SQLiteError) { try database.checkpointManually() } catch {
                    return .failure(RelayStorageError(error, .open))
                }
                return .success(())
            } catch {
                return .failure(RelayStorageError(error, path: path))
            }
        }
        try result.get()
    }

    deinit {
        // Every block queued on `queue` holds `self`, so none is running now; closing here
        // (not with `queue.sync`, which would deadlock if the last reference went away on the
        // queue itself) touches the connection alone.
        confined.database?.close()
    }

    /// The schema version the file is at.
    public func schemaVersion() throws(RelayStorageError) -> Int {
        try onQueue(failing: .write) { db throws(SQLiteError) in Int(try db.integer("PRAGMA user_version")) }
    }

    public static var currentSchemaVersion: Int { RelaySchema.currentVersion }

    private func onQueue<T>(_ body: (SQLiteDatabase) throws(RelayStorageError) -> T) throws(RelayStorageError)
        -> T
    {
        let confined = self.confined
        let result: Result<T, RelayStorageError> = queue.sync {
            guard let db = confined.database else {
                return .failure(RelayStorageError(.closed, "the store is closed"))
            }
            do throws(RelayStorageError) { return .success(try body(db)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// ``onQueue(_:)`` for a body that fails only with SQLite's errors: they become `code`.
    private func onQueue<T>(
        failing code: RelayStorageError.Code, _ body: (SQLiteDatabase) throws(SQLiteError) -> T
    ) throws(RelayStorageError) -> T {
        try onQueue { db throws(RelayStorageError) in
            do throws(SQLiteError) { return try body(db) } catch { throw RelayStorageError(error, code) }
        }
    }

    // MARK: - Loading

    public func load() throws(RelayStorageError) -> RelaySnapshot {
        try onQueue { db throws(RelayStorageError) in try Self.load(db) }
    }

    private static func load(_ db: SQLiteDatabase) throws(RelayStorageError) -> RelaySnapshot {
        // One read transaction: a consistent snapshot even while another process writes.
        do throws(SQLiteError) { try db.execute("BEGIN DEFERRED") } catch {
            throw RelayStorageError(error, .read)
        }
        defer { try? db.execute("COMMIT") }
        do throws(SQLiteError) {
            var snapshot = RelaySnapshot()
            // In key order: a nameplate's or a mailbox's row comes before its sides' rows.
            var st = try db.statement(
                "SELECT app_id, kind, id, part, side, mailbox_id, flag, at, mood FROM channels "
                    + "ORDER BY app_id, kind, id, part, side")
            while try st.step() {
                let app = AppID(st.text(0))
                let isSide = st.bool(3)
                let flag = st.bool(6)
                let at = RelayInstant(secondsSince1970: st.double(7))
                if st.int64(1) == ChannelKind.nameplate {
                    let key = NameplateKey(app: app, name: Nameplate(st.text(2)))
                    if isSide {
                        snapshot.nameplates[key]?.sides[Side(st.text(4))] = NameplateSideRecord(
                            claimed: flag, added: at)
                    } else {
                        snapshot.nameplates[key] = NameplateRecord(mailbox: MailboxID(st.text(5)))
                    }
                } else {
                    let key = MailboxKey(app: app, id: MailboxID(st.text(2)))
                    if isSide {
                        snapshot.mailboxes[key]?.sides[Side(st.text(4))] = MailboxSideRecord(
                            opened: flag, added: at, mood: st.optionalText(8))
                    } else {
                        snapshot.mailboxes[key] = MailboxRecord(forNameplate: flag, updated: at)
                    }
                }
            }
            st = try db.statement(
                "SELECT app_id, mailbox_id, side, phase, body, server_rx, msg_id FROM messages "
                    + "ORDER BY app_id, mailbox_id, seq"
            )
            while try st.step() {
                let key = MailboxKey(app: AppID(st.text(0)), id: MailboxID(st.text(1)))
                let id = st.optionalText(6).flatMap { try? JSONParser.parse($0) } ?? .null
                let body: String
                if case .blob(let bytes) = st.value(4) {
                    body = StoredBody.hex(bytes)
                } else {
                    body = st.text(4)
                }
                snapshot.mailboxes[key]?.messages.append(
                    StoredMessage(
                        side: Side(st.text(2)), phase: Phase(st.text(3)), body: body,
                        serverRX: RelayInstant(secondsSince1970: st.double(5)), messageID: id))
            }
            // A mailbox was last touched no earlier than its newest message or side (`drain`
            // writes no touch that only repeats the time of a message or a side it adds).
            for (key, mailbox) in snapshot.mailboxes {
                let newest = ([mailbox.updated] + mailbox.sides.values.map(\.added)).max() ?? mailbox.updated
                snapshot.mailboxes[key]?.updated = max(newest, mailbox.messages.last?.serverRX ?? newest)
            }
            return snapshot
        } catch {
            throw RelayStorageError(error.kind == .closed ? .closed : .read, error.detail)
        }
    }

    // MARK: - Writing

    public func enqueue(_ writes: [StorageOp], completion: @escaping @Sendable (RelayStorageError?) -> Void) {
        commits.enqueue(writes, completion: completion) { [self] in drain() }
    }

    /// Commits everything queued so far in one transaction, then runs the completions.
    private func drain() {
        let database = confined.database
        commits.commitPending { writes throws(RelayStorageError) in
            guard let db = database else { throw RelayStorageError(.closed, "the store is closed") }
            do throws(SQLiteError) {
                try db.writeTransaction { () throws(SQLiteError) in
                    for (index, op) in writes.enumerated() where !Self.touchIsImplied(writes, at: index) {
                        try Self.apply(op, to: db)
                    }
                }
            } catch {
                throw RelayStorageError(error, .write)
            }
        }
        checkpointIfFull(database)
    }

    /// The WAL's size, in bytes of pages, past which a checkpoint copies it into the database
    /// file. A checkpoint writes each page the WAL holds once, whole (a scattered 1 KiB page
    /// dirties a 4 KiB page of the file system's cache), however many commits rewrote it since
    /// the last: the relay's file is small and its hot pages (the tables' leaves, the freelist)
    /// are rewritten by nearly every commit, so a larger WAL means fewer copies of the same
    /// pages. SQLite's default (1,000 pages) copied the whole file every thirty joins or so.
    static let checkpointWALBytes = 8 << 20

    /// After a commit's completions have run (so no reply waits for it): a checkpoint once the
    /// WAL holds ``checkpointWALBytes``. `PASSIVE`: it copies what no reader still needs and
    /// never waits; the next commit after a complete one starts the WAL over. A failed one
    /// (disk full) is tried again after the next commit, which reports the failure if the disk
    /// refuses it too.
    private func checkpointIfFull(_ database: SQLiteDatabase?) {
        guard let db = database, db.walFrameCount > 0 else { return }
        guard db.walFrameCount * confined.pageSize >= Self.checkpointWALBytes else { return }
        try? db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    }

    /// Whether `writes[index]` touches a mailbox at the time another write beside it already
    /// records: the message just appended to it (`add`), or the side about to be attached to it
    /// (`open`). `load` takes the newest of the three times, so the mailbox's row need not be
    /// written in that commit.
    static func touchIsImplied(_ writes: [StorageOp], at index: Int) -> Bool {
        guard case .touchMailbox(let key, let updated) = writes[index] else { return false }
        if index > 0, case .appendMessage(let appendedTo, let message) = writes[index - 1],
            appendedTo == key, message.serverRX == updated
        {
            return true
        }
        if index + 1 < writes.count, case .putMailboxSide(let attachedTo, _, let side) = writes[index + 1],
            attachedTo == key, side.added == updated
        {
            return true
        }
        return false
    }

    private static func apply(_ op: StorageOp, to db: SQLiteDatabase) throws(SQLiteError) {
        switch op {
        case .putNameplate(let key, let mailbox):
            let st = try db.statement(
                "INSERT INTO channels (app_id, kind, id, part, side, mailbox_id, flag, at) "
                    + "VALUES (?1, \(ChannelKind.nameplate), ?2, 0, '', ?3, 0, 0) "
                    + "ON CONFLICT (app_id, kind, id, part, side) DO UPDATE SET mailbox_id = excluded.mailbox_id"
            )
            st.bind(1, key.app.value)
            st.bind(2, key.name.value)
            st.bind(3, mailbox.value)
            try st.step()
        case .putNameplateSide(let key, let side, let record):
            try putSide(
                kind: ChannelKind.nameplate, app: key.app, id: key.name.value, side: side,
                flag: record.claimed, added: record.added, mood: nil, to: db)
        case .deleteNameplate(let key):
            try deleteChannel(kind: ChannelKind.nameplate, app: key.app, id: key.name.value, from: db)
        case .putMailbox(let key, let forNameplate, let updated):
            let st = try db.statement(
                "INSERT INTO channels (app_id, kind, id, part, side, flag, at) "
                    + "VALUES (?1, \(ChannelKind.mailbox), ?2, 0, '', ?3, ?4) "
                    + "ON CONFLICT (app_id, kind, id, part, side) DO UPDATE SET flag = excluded.flag, "
                    + "at = excluded.at")
            st.bind(1, key.app.value)
            st.bind(2, key.id.value)
            st.bind(3, forNameplate)
            st.bind(4, updated.secondsSince1970)
            try st.step()
        case .touchMailbox(let key, let updated):
            let st = try db.statement(
                "UPDATE channels SET at = ?3 "
                    + "WHERE app_id = ?1 AND kind = \(ChannelKind.mailbox) AND id = ?2 AND part = 0 AND side = ''"
            )
            st.bind(1, key.app.value)
            st.bind(2, key.id.value)
            st.bind(3, updated.secondsSince1970)
            try st.step()
        case .putMailboxSide(let key, let side, let record):
            try putSide(
                kind: ChannelKind.mailbox, app: key.app, id: key.id.value, side: side, flag: record.opened,
                added: record.added, mood: record.mood, to: db)
        case .appendMessage(let key, let message):
            let st = try db.statement(
                "INSERT INTO messages (app_id, mailbox_id, seq, side, phase, body, server_rx, msg_id) "
                    + "VALUES (?1, ?2, (SELECT coalesce(max(seq), 0) + 1 FROM messages "
                    + "WHERE app_id = ?1 AND mailbox_id = ?2), ?3, ?4, ?5, ?6, ?7)")
            st.bind(1, key.app.value)
            st.bind(2, key.id.value)
            st.bind(3, message.side.value)
            st.bind(4, message.phase.value)
            if let bytes = StoredBody.bytes(message.body) {
                try st.bind(5, .blob(bytes))
            } else {
                st.bind(5, message.body)
            }
            st.bind(6, message.serverRX.secondsSince1970)
            st.bind(7, message.messageID == .null ? nil : JSONWriter.string(message.messageID))
            try st.step()
        case .deleteMailbox(let key):
            let st = try db.statement("DELETE FROM messages WHERE app_id = ?1 AND mailbox_id = ?2")
            st.bind(1, key.app.value)
            st.bind(2, key.id.value)
            try st.step()
            try deleteChannel(kind: ChannelKind.mailbox, app: key.app, id: key.id.value, from: db)
        }
    }

    /// `channels.kind`: what a row (and the sides keyed after it) belongs to.
    enum ChannelKind {
        static let nameplate: Int64 = 0
        static let mailbox: Int64 = 1
    }

    /// Inserts or replaces one side's row of a nameplate or a mailbox.
    private static func putSide(
        kind: Int64, app: AppID, id: String, side: Side, flag: Bool, added: RelayInstant, mood: String?,
        to db: SQLiteDatabase
    ) throws(SQLiteError) {
        let st = try db.statement(
            "INSERT OR REPLACE INTO channels (app_id, kind, id, part, side, flag, at, mood) "
                + "VALUES (?1, \(kind), ?2, 1, ?3, ?4, ?5, ?6)")
        st.bind(1, app.value)
        st.bind(2, id)
        st.bind(3, side.value)
        st.bind(4, flag)
        st.bind(5, added.secondsSince1970)
        st.bind(6, mood)
        try st.step()
    }

    /// Deletes a nameplate or a mailbox with its sides.
    private static func deleteChannel(kind: Int64, app: AppID, id: String, from db: SQLiteDatabase)
        throws(SQLiteError)
    {
        let st = try db.statement("DELETE FROM channels WHERE app_id = ?1 AND kind = \(kind) AND id = ?2")
        st.bind(1, app.value)
        st.bind(2, id)
        try st.step()
    }

    // MARK: - Lifecycle

    public func close() {
        commits.close()
        let confined = self.confined
        let closeDatabase = {
            confined.database?.close()
            confined.database = nil
        }
        if isOnQueue {
            // Called from a completion (e.g. the service stopping after a failed commit):
            // between transactions already; waiting for the queue would deadlock.
            closeDatabase()
        } else {
            // Runs after any drain already scheduled, so queued writes are committed first.
            queue.sync(execute: closeDatabase)
        }
    }

    private var isOnQueue: Bool { DispatchQueue.getSpecific(key: confined.queueKey) != nil }

    public var statistics: Statistics { commits.statistics }

    /// Waits until everything queued so far is committed and its completions have run.
    public func flush() {
        if !isOnQueue { queue.sync {} }
    }

    /// Whether the file takes a write now (``SQLiteDatabase/probeWrite()``: a real write and
    /// room on the disk), so a relay whose commits failed (disk full, read-only file) recovers
    /// only once it can commit again, instead of reloading and failing anew.
    public func ping() -> RelayStorageError? {
        do throws(RelayStorageError) {
            try onQueue(failing: .write) { db throws(SQLiteError) in try db.probeWrite() }
            return nil
        } catch {
            return error
        }
    }

    /// How long after a busy commit starts the next may start (``GroupCommit``): at most 15 ms,
    /// and at most five times what that commit took (``commitCostFactor``). A disk's sync takes
    /// a few milliseconds, so without a hold a busy relay committed back to back, about three
    /// commits per join in `eleven-bench bot`, and each commit rewrites the WAL's last 4 KiB
    /// page and the leaves and interior pages that every join touches. Where a sync costs
    /// nothing (tmpfs) the hold shrinks with it: it would save no bytes there and only add its
    /// wait. A write waits at most this long beyond its own commit, and only while three or
    /// more mailboxes are busy (docs/bot.md, session 12).
    static let commitSpacing: Duration = .milliseconds(15)
    static let commitCostFactor = 5

    /// Copies the WAL into the main file and truncates the WAL.
    public func checkpoint() throws(RelayStorageError) {
        try onQueue(failing: .write) { db throws(SQLiteError) in
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }

    /// Runs `body` while commits are held back, so everything it queues lands in one
    /// transaction. For tests of group commit.
    func withCommitsPaused(_ body: () -> Void) {
        queue.suspend()
        body()
        queue.resume()
    }
}

extension RelayStorageError {
    /// A SQLite failure as the relay reports it: `code` for where it happened, `closed` when the
    /// connection was closed.
    init(_ error: SQLiteError, _ code: Code) {
        self.init(error.kind == .closed ? .closed : code, error.detail)
    }

    /// A failure opening the relay's SQLite file.
    init(_ error: DatabaseOpenError, path: String) {
        switch error {
        case .sqlite(let error) where error.kind == .closed || error.context == nil:
            self.init(.open, "cannot open \(path): \(error.message)")
        case .sqlite(let error):
            self.init(.open, error.detail)
        case .foreign(let foreign):
            self.init(.foreignDatabase, foreign.message)
        case .schemaTooNew(let found, let known):
            self.init(
                .schemaTooNew,
                "database schema version \(found) is newer than this relay understands (\(known)); "
                    + "use a newer eleven-relay")
        case .migration(let version, let error):
            self.init(.migration, "migrating to version \(version): \(error.detail)")
        }
    }
}
