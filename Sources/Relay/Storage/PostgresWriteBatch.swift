import Mailbox

/// One group commit's writes for PostgreSQL as a few set-based statements instead of one
/// statement per write.
///
/// A batch holds many small writes (with 40 exchanges in flight, 30 to 100); sent one
/// statement each, PostgreSQL spent most of its time per statement (executor start and end,
/// protocol messages), not per row. The batch keeps only the net effect of its writes, which
/// PostgreSQL then applies with one `DELETE` statement (every nameplate and mailbox deleted in
/// the batch, with their sides and messages) and one statement of upserts and appends (every
/// row's last value, passed as arrays and expanded with `unnest`):
///
/// - a row written twice keeps its last value; a touch merges into a put of the same mailbox
///   made earlier in the batch, and a touch of a mailbox deleted earlier in the batch is
///   dropped (the row is gone, as it would be sequentially);
/// - a deletion drops the writes before it of its rows (sides, messages) and is run first, so
///   rows written after it in the batch are written after it in the database too;
/// - messages keep their order (per mailbox, by `seq`, as they are loaded).
///
/// Applied in one transaction, the result equals running the writes one by one (the tests
/// compare the two on random traffic in random batches).
struct PostgresWriteBatch {
    private var deletedNameplates: [NameplateKey] = []
    private var deletedNameplateSet: Set<NameplateKey> = []
    private var nameplates: [NameplateKey: MailboxID] = [:]
    private var nameplateSides: [NameplateKey: [Side: NameplateSideRecord]] = [:]
    private var deletedMailboxes: [MailboxKey] = []
    private var deletedMailboxSet: Set<MailboxKey> = []
    private var mailboxes: [MailboxKey: (forNameplate: Bool, updated: RelayInstant)] = [:]
    private var touches: [MailboxKey: RelayInstant] = [:]
    private var mailboxSides: [MailboxKey: [Side: MailboxSideRecord]] = [:]
    /// Messages per mailbox in order, and the mailboxes in the order of their first message
    /// (each once, also when its messages were dropped by a deletion and new ones followed).
    private var messages: [MailboxKey: [StoredMessage]] = [:]
    private var messageOrder: [MailboxKey] = []
    private var messageMailboxes: Set<MailboxKey> = []

    init(_ ops: [StorageOp]) {
        for op in ops { add(op) }
    }

    private mutating func add(_ op: StorageOp) {
        switch op {
        case .putNameplate(let key, let mailbox):
            nameplates[key] = mailbox
        case .putNameplateSide(let key, let side, let record):
            nameplateSides[key, default: [:]][side] = record
        case .deleteNameplate(let key):
            if deletedNameplateSet.insert(key).inserted { deletedNameplates.append(key) }
            nameplates[key] = nil
            nameplateSides[key] = nil
        case .putMailbox(let key, let forNameplate, let updated):
            mailboxes[key] = (forNameplate, updated)
            touches[key] = nil
        case .touchMailbox(let key, let updated):
            if mailboxes[key] != nil {
                mailboxes[key]?.updated = updated
            } else if !deletedMailboxSet.contains(key) {
                touches[key] = updated
            }
        case .putMailboxSide(let key, let side, let record):
            mailboxSides[key, default: [:]][side] = record
        case .appendMessage(let key, let message):
            if messageMailboxes.insert(key).inserted { messageOrder.append(key) }
            messages[key, default: []].append(message)
        case .deleteMailbox(let key):
            if deletedMailboxSet.insert(key).inserted { deletedMailboxes.append(key) }
            mailboxes[key] = nil
            touches[key] = nil
            mailboxSides[key] = nil
            messages[key] = nil
        }
    }

    /// Deletes every nameplate and mailbox the batch deletes, with their sides and messages.
    ///
    /// Rows are found key by key through their index (a `LATERAL` subquery per key, kept from
    /// being flattened into a join by `OFFSET 0`) and deleted by `ctid`: joined with the keys
    /// as a set, the planner may pick a sequential scan, and these tables hold many dead rows.
    static let deleteSQL = """
        WITH np AS (SELECT * FROM unnest($1::text[], $2::text[]) AS t(a, n)),
        mb AS (SELECT * FROM unnest($3::text[], $4::text[]) AS t(a, i)),
        d1 AS (DELETE FROM nameplate_sides WHERE ctid = ANY(ARRAY(SELECT x.ctid FROM np, LATERAL (
            SELECT ctid FROM nameplate_sides s WHERE s.app_id = np.a AND s.name = np.n OFFSET 0) x))),
        d2 AS (DELETE FROM nameplates WHERE ctid = ANY(ARRAY(SELECT x.ctid FROM np, LATERAL (
            SELECT ctid FROM nameplates s WHERE s.app_id = np.a AND s.name = np.n OFFSET 0) x))),
        d3 AS (DELETE FROM messages WHERE ctid = ANY(ARRAY(SELECT x.ctid FROM mb, LATERAL (
            SELECT ctid FROM messages s WHERE s.app_id = mb.a AND s.mailbox_id = mb.i OFFSET 0) x))),
        d4 AS (DELETE FROM mailbox_sides WHERE ctid = ANY(ARRAY(SELECT x.ctid FROM mb, LATERAL (
            SELECT ctid FROM mailbox_sides s WHERE s.app_id = mb.a AND s.mailbox_id = mb.i OFFSET 0) x)))
        DELETE FROM mailboxes WHERE ctid = ANY(ARRAY(SELECT x.ctid FROM mb, LATERAL (
            SELECT ctid FROM mailboxes s WHERE s.app_id = mb.a AND s.id = mb.i OFFSET 0) x))
        """

    /// Every row's last value and the appended messages (the sub-statements touch different
    /// tables, or different rows of `mailboxes`, so their order does not matter), then the
    /// feed entry, whose position it returns; notifies the other nodes when `$31` is true.
    /// Touched mailboxes are found as the deleted rows are (see ``deleteSQL``).
    static let writeSQL = """
        WITH np AS (
            INSERT INTO nameplates (app_id, name, mailbox_id)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
            ON CONFLICT (app_id, name) DO UPDATE SET mailbox_id = excluded.mailbox_id),
        nps AS (
            INSERT INTO nameplate_sides (app_id, name, side, claimed, added)
            SELECT * FROM unnest($4::text[], $5::text[], $6::text[], $7::boolean[], $8::float8[])
            ON CONFLICT (app_id, name, side) DO UPDATE SET
                claimed = excluded.claimed, added = excluded.added),
        mb AS (
            INSERT INTO mailboxes (app_id, id, for_nameplate, updated)
            SELECT * FROM unnest($9::text[], $10::text[], $11::boolean[], $12::float8[])
            ON CONFLICT (app_id, id) DO UPDATE SET
                for_nameplate = excluded.for_nameplate, updated = excluded.updated),
        touched AS (
            SELECT x.ctid AS row, t.u FROM unnest($13::text[], $14::text[], $15::float8[]) AS t(a, i, u),
            LATERAL (SELECT ctid FROM mailboxes s WHERE s.app_id = t.a AND s.id = t.i OFFSET 0) x),
        mbt AS (
            UPDATE mailboxes m SET updated = (SELECT t.u FROM touched t WHERE t.row = m.ctid)
            WHERE m.ctid = ANY(ARRAY(SELECT row FROM touched))),
        mbs AS (
            INSERT INTO mailbox_sides (app_id, mailbox_id, side, opened, added, mood)
            SELECT * FROM unnest(
                $16::text[], $17::text[], $18::text[], $19::boolean[], $20::float8[], $21::text[])
            ON CONFLICT (app_id, mailbox_id, side) DO UPDATE SET
                opened = excluded.opened, added = excluded.added, mood = excluded.mood),
        msg AS (
            INSERT INTO messages (app_id, mailbox_id, side, phase, body, server_rx, msg_id)
            SELECT a, i, s, p, b, r, d FROM unnest(
                $22::text[], $23::text[], $24::text[], $25::text[], $26::text[], $27::float8[], $28::text[]
            ) WITH ORDINALITY AS t(a, i, s, p, b, r, d, o) ORDER BY o),
        feed AS (INSERT INTO relay_changes (node, ops) VALUES ($29, $30) RETURNING seq)
        SELECT feed.seq FROM feed LEFT JOIN LATERAL (SELECT pg_notify($32, $29) WHERE $31::boolean) n ON true
        """

    /// The statements, with the feed entry `ops` of `node` (and a notification if `notify`).
    func statements(node: String, ops: String, notify: Bool) -> PostgresStatements {
        var statements = PostgresStatements()
        if !deletedNameplates.isEmpty || !deletedMailboxes.isEmpty {
            statements.addRaw(
                Self.deleteSQL,
                [
                    Self.array(deletedNameplates.map(\.app.value)),
                    Self.array(deletedNameplates.map(\.name.value)),
                    Self.array(deletedMailboxes.map(\.app.value)),
                    Self.array(deletedMailboxes.map(\.id.value)),
                ])
        }
        var p = [[String?]](repeating: [], count: 28)
        for (key, mailbox) in nameplates {
            p[0].append(key.app.value)
            p[1].append(key.name.value)
            p[2].append(mailbox.value)
        }
        for (key, sides) in nameplateSides {
            for (side, record) in sides {
                p[3].append(key.app.value)
                p[4].append(key.name.value)
                p[5].append(side.value)
                p[6].append(record.claimed ? "t" : "f")
                p[7].append(Self.text(record.added))
            }
        }
        for (key, mailbox) in mailboxes {
            p[8].append(key.app.value)
            p[9].append(key.id.value)
            p[10].append(mailbox.forNameplate ? "t" : "f")
            p[11].append(Self.text(mailbox.updated))
        }
        for (key, updated) in touches {
            p[12].append(key.app.value)
            p[13].append(key.id.value)
            p[14].append(Self.text(updated))
        }
        for (key, sides) in mailboxSides {
            for (side, record) in sides {
                p[15].append(key.app.value)
                p[16].append(key.id.value)
                p[17].append(side.value)
                p[18].append(record.opened ? "t" : "f")
                p[19].append(Self.text(record.added))
                p[20].append(record.mood)
            }
        }
        for key in messageOrder {
            for message in messages[key] ?? [] {
                p[21].append(key.app.value)
                p[22].append(key.id.value)
                p[23].append(message.side.value)
                p[24].append(message.phase.value)
                p[25].append(message.body)
                p[26].append(Self.text(message.serverRX))
                p[27].append(message.messageID == .null ? nil : JSONWriter.string(message.messageID))
            }
        }
        statements.addRaw(
            Self.writeSQL,
            p.map(Self.array) + [
                PostgresText.encode(node), PostgresText.encode(ops), notify ? "t" : "f",
                PostgresText.encode(PostgresChangeFeed.channel),
            ])
        return statements
    }

    /// A time as text that PostgreSQL reads back to the same `Double` (Swift prints the
    /// shortest round-tripping form).
    static func text(_ instant: RelayInstant) -> String { "\(instant.secondsSince1970)" }

    /// A PostgreSQL array literal of (``PostgresText``-escaped) strings: each element quoted,
    /// with `"` and `\` escaped; nil is `NULL`. The statement parameter itself is then passed
    /// as is (``PostgresStatements/addRaw(_:_:)``: the elements are escaped already).
    private static func array(_ values: [String?]) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        for (i, value) in values.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            guard let value else {
                bytes += Array("NULL".utf8)
                continue
            }
            bytes.append(UInt8(ascii: "\""))
            for byte in PostgresText.encode(value).utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    bytes.append(UInt8(ascii: "\\"))
                }
                bytes.append(byte)
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }
}
