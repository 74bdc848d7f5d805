import PAKE
import SQLite
import SpaceModel

/// A stored device token's metadata (never the token itself: only its hash is stored).
struct TokenRow {
    let id: [UInt8]
    let space: SpaceID
    let member: MemberID
    let label: String
    let createdAt: Int64
    let expiresAt: Int64
    let revokedAt: Int64?
}

/// A stored space's public facts.
struct SpaceRow {
    let id: SpaceID
    let name: String
    let owner: MemberID
    let avatarType: String?
    let createdAt: Int64
}

/// A stored member.
struct MemberRow {
    let record: MemberRecord
    let addedSequence: Int64
    let removedSequence: Int64?
}

/// A stored thread.
struct ThreadRow {
    let id: ThreadID
    let createdBy: MemberID
    let metadata: [UInt8]?
    let createdAt: Int64
}

/// All SQL of the space server. Every method runs on the caller's thread; ``SpaceAPI`` serialises
/// access and wraps each request's writes in one transaction.
final class SpaceStore {
    let db: SQLiteDatabase

    /// Opens (creating if needed) the database at `path`, switches to WAL and runs missing
    /// migrations. Refuses, before writing to it, a file of another program or from a newer
    /// eleven-server (``SpaceStoreError``); SQLite's own failures are thrown as ``SQLiteError``.
    init(path: String, syncEveryCommit: Bool = true) throws {
        do throws(DatabaseOpenError) {
            db = try SQLiteDatabase.open(
                path: path, schema: SpaceSchema.schema, sync: syncEveryCommit ? .full : .normal)
        } catch {
            switch error {
            case .sqlite(let error), .migration(_, let error): throw error
            case .foreign(let foreign): throw SpaceStoreError.foreignDatabase(foreign)
            case .schemaTooNew(let found, let known):
                throw SpaceStoreError.schemaTooNew(found: found, known: known)
            }
        }
    }

    /// The schema version of the open database.
    func schemaVersion() throws -> Int {
        Int(try db.query("PRAGMA user_version").first?.first?.integer ?? 0)
    }

    // MARK: Spaces

    func space(_ id: SpaceID) throws -> SpaceRow? {
        let rows = try db.query(
            "SELECT name, owner_member, avatar_type, created_at FROM spaces WHERE id = ?", [.blob(id.bytes)])
        guard let row = rows.first else { return nil }
        return SpaceRow(
            id: id, name: row[0].text ?? "", owner: try MemberID(bytes: row[1].blob ?? []),
            avatarType: row[2].text, createdAt: row[3].integer ?? 0)
    }

    func spaceIDs(limit: Int) throws -> [SpaceID] {
        try db.query("SELECT id FROM spaces ORDER BY created_at, id LIMIT ?", [.integer(Int64(limit))])
            .compactMap { try? SpaceID(bytes: $0[0].blob ?? []) }
    }

    func insertSpace(
        _ id: SpaceID, name: String, owner: MemberRecord, adminTokenHash: [UInt8], now: Int64
    ) throws {
        try db.query(
            """
            INSERT INTO spaces (id, name, owner_member, owner_signing_key, admin_token_hash, created_at)
            VALUES (?, ?, ?, ?, ?, ?)
            """,
            [
                .blob(id.bytes), .text(name), .blob(owner.id.bytes), .blob(owner.keys.signing.bytes),
                .blob(adminTokenHash), .integer(now),
            ])
    }

    /// The space whose admin token has this hash.
    func space(adminTokenHash: [UInt8]) throws -> SpaceID? {
        try db.query("SELECT id FROM spaces WHERE admin_token_hash = ?", [.blob(adminTokenHash)]).first
            .flatMap { try? SpaceID(bytes: $0[0].blob ?? []) }
    }

    func setName(_ name: String, space: SpaceID) throws {
        try db.query("UPDATE spaces SET name = ? WHERE id = ?", [.text(name), .blob(space.bytes)])
    }

    func setAvatar(_ avatar: (type: String, bytes: [UInt8])?, space: SpaceID) throws {
        try db.query(
            "UPDATE spaces SET avatar = ?, avatar_type = ? WHERE id = ?",
            [
                avatar.map { .blob($0.bytes) } ?? .null, avatar.map { .text($0.type) } ?? .null,
                .blob(space.bytes),
            ])
    }

    func avatar(space: SpaceID) throws -> (type: String, bytes: [UInt8])? {
        guard
            let row = try db.query(
                "SELECT avatar_type, avatar FROM spaces WHERE id = ?", [.blob(space.bytes)]
            ).first,
            let type = row[0].text, let bytes = row[1].blob
        else { return nil }
        return (type, bytes)
    }

    // MARK: Members

    private static let memberColumns =
        "member_id, encryption_key, signing_key, rights, name, added_sequence, removed_sequence"

    private func memberRow(_ row: [SQLValue]) throws -> MemberRow {
        let keys = MemberPublicKeys(
            encryption: try EncryptionPublicKey(bytes: row[1].blob ?? []),
            signing: try SigningPublicKey(bytes: row[2].blob ?? []))
        let record = MemberRecord(
            id: try MemberID(bytes: row[0].blob ?? []), keys: keys,
            rights: MemberRights(rawValue: UInt64(bitPattern: row[3].integer ?? 0)), name: row[4].text ?? "")
        return MemberRow(record: record, addedSequence: row[5].integer ?? 0, removedSequence: row[6].integer)
    }

    func members(space: SpaceID, includeRemoved: Bool) throws -> [MemberRow] {
        let filter = includeRemoved ? "" : " AND removed_sequence IS NULL"
        return try db.query(
            "SELECT \(Self.memberColumns) FROM members WHERE space_id = ?\(filter) ORDER BY added_sequence",
            [.blob(space.bytes)]
        ).map(memberRow)
    }

    func member(space: SpaceID, id: MemberID) throws -> MemberRow? {
        try db.query(
            "SELECT \(Self.memberColumns) FROM members WHERE space_id = ? AND member_id = ?",
            [.blob(space.bytes), .blob(id.bytes)]
        ).first.map(memberRow)
    }

    func insertMember(_ record: MemberRecord, space: SpaceID, sequence: UInt64) throws {
        try db.query(
            """
            INSERT INTO members (space_id, member_id, encryption_key, signing_key, rights, name, added_sequence)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .blob(space.bytes), .blob(record.id.bytes), .blob(record.keys.encryption.bytes),
                .blob(record.keys.signing.bytes), .integer(Int64(bitPattern: record.rights.rawValue)),
                .text(record.name), .integer(Int64(sequence)),
            ])
    }

    func markRemoved(_ id: MemberID, space: SpaceID, sequence: UInt64) throws {
        try db.query(
            "UPDATE members SET removed_sequence = ? WHERE space_id = ? AND member_id = ?",
            [.integer(Int64(sequence)), .blob(space.bytes), .blob(id.bytes)])
    }

    func setRights(_ rights: MemberRights, of id: MemberID, space: SpaceID) throws {
        try db.query(
            "UPDATE members SET rights = ? WHERE space_id = ? AND member_id = ?",
            [.integer(Int64(bitPattern: rights.rawValue)), .blob(space.bytes), .blob(id.bytes)])
    }

    // MARK: Device tokens

    func insertToken(
        id: [UInt8], hash: [UInt8], space: SpaceID, member: MemberID, label: String, now: Int64,
        expiresAt: Int64
    ) throws {
        try db.query(
            """
            INSERT INTO device_tokens (id, token_hash, space_id, member_id, label, created_at, expires_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .blob(id), .blob(hash), .blob(space.bytes), .blob(member.bytes), .text(label), .integer(now),
                .integer(expiresAt),
            ])
    }

    private static let tokenColumns = "id, space_id, member_id, label, created_at, expires_at, revoked_at"

    private func tokenRow(_ row: [SQLValue]) throws -> TokenRow {
        TokenRow(
            id: row[0].blob ?? [], space: try SpaceID(bytes: row[1].blob ?? []),
            member: try MemberID(bytes: row[2].blob ?? []), label: row[3].text ?? "",
            createdAt: row[4].integer ?? 0,
            expiresAt: row[5].integer ?? 0, revokedAt: row[6].integer)
    }

    func token(hash: [UInt8]) throws -> TokenRow? {
        try db.query("SELECT \(Self.tokenColumns) FROM device_tokens WHERE token_hash = ?", [.blob(hash)])
            .first.map(tokenRow)
    }

    /// The token `id` of `member` (a key lookup), or of any member of `space` (an operator's:
    /// reads the space's tokens).
    func token(id: [UInt8], space: SpaceID, member: MemberID?) throws -> TokenRow? {
        guard let member else {
            return try db.query(
                "SELECT \(Self.tokenColumns) FROM device_tokens WHERE space_id = ? AND id = ?",
                [.blob(space.bytes), .blob(id)]
            ).first.map(tokenRow)
        }
        return try db.query(
            "SELECT \(Self.tokenColumns) FROM device_tokens WHERE space_id = ? AND member_id = ? AND id = ?",
            [.blob(space.bytes), .blob(member.bytes), .blob(id)]
        ).first.map(tokenRow)
    }

    func tokens(space: SpaceID, member: MemberID?) throws -> [TokenRow] {
        if let member {
            return try db.query(
                "SELECT \(Self.tokenColumns) FROM device_tokens WHERE space_id = ? AND member_id = ? ORDER BY created_at, id",
                [.blob(space.bytes), .blob(member.bytes)]
            ).map(tokenRow)
        }
        return try db.query(
            "SELECT \(Self.tokenColumns) FROM device_tokens WHERE space_id = ? ORDER BY created_at, id",
            [.blob(space.bytes)]
        ).map(tokenRow)
    }

    func revokeToken(_ token: TokenRow, now: Int64) throws {
        try db.query(
            """
            UPDATE device_tokens SET revoked_at = ?
            WHERE space_id = ? AND member_id = ? AND id = ? AND revoked_at IS NULL
            """,
            [.integer(now), .blob(token.space.bytes), .blob(token.member.bytes), .blob(token.id)])
    }

    func revokeTokens(space: SpaceID, member: MemberID, now: Int64) throws {
        try db.query(
            "UPDATE device_tokens SET revoked_at = ? WHERE space_id = ? AND member_id = ? AND revoked_at IS NULL",
            [.integer(now), .blob(space.bytes), .blob(member.bytes)])
    }

    // MARK: Sign-in challenges

    /// Records `challenge` as used; false when it already was.
    func useChallenge(_ challenge: SignInChallenge) throws -> Bool {
        let stored = try db.query(
            """
            INSERT INTO used_sign_in_challenges (expires_at, nonce) VALUES (?, ?)
            ON CONFLICT DO NOTHING RETURNING 1
            """,
            [.integer(challenge.expiresAt), .blob(challenge.nonce)])
        return !stored.isEmpty
    }

    /// Forgets used challenges that expired before `now`: their expiry refuses them already.
    func deleteUsedChallenges(expiredBefore now: Int64) throws {
        try db.query("DELETE FROM used_sign_in_challenges WHERE expires_at < ?", [.integer(now)])
    }

    // MARK: The server's own secrets

    /// The secret called `name`, stored from `fresh` the first time it is asked for. It lives in
    /// the database so that it is restored, moved and deleted with what it protects.
    func secret(_ name: String, makingIfMissing fresh: @autoclosure () -> [UInt8]) throws -> SecretBytes {
        let find = "SELECT secret FROM server_secrets WHERE name = ?"
        if let stored = try db.query(find, [.text(name)]).first?[0].blob { return SecretBytes(stored) }
        try db.query(
            "INSERT OR IGNORE INTO server_secrets (name, secret) VALUES (?, ?)",
            [.text(name), .blob(fresh())])
        return SecretBytes(try db.query(find, [.text(name)]).first?[0].blob ?? [])
    }

    // MARK: Membership events

    func insertEvent(space: SpaceID, sequence: UInt64, hash: EventHash, json: String) throws {
        try db.query(
            "INSERT INTO events (space_id, sequence, hash, body) VALUES (?, ?, ?, ?)",
            [.blob(space.bytes), .integer(Int64(sequence)), .blob(hash.bytes), .text(json)])
    }

    /// Event JSON texts in sequence order, from `from` on.
    func events(space: SpaceID, from: UInt64, limit: Int) throws -> [String] {
        try db.query(
            "SELECT body FROM events WHERE space_id = ? AND sequence >= ? ORDER BY sequence LIMIT ?",
            [.blob(space.bytes), .integer(Int64(clamping: from)), .integer(Int64(limit))]
        ).map { $0[0].text ?? "" }
    }

    // MARK: Threads and wraps

    func insertThread(_ id: ThreadID, space: SpaceID, createdBy: MemberID, metadata: [UInt8]?, now: Int64)
        throws
    {
        try db.query(
            "INSERT INTO threads (space_id, thread_id, created_by, metadata, created_at) VALUES (?, ?, ?, ?, ?)",
            [
                .blob(space.bytes), .blob(id.bytes), .blob(createdBy.bytes),
                metadata.map { .blob($0) } ?? .null,
                .integer(now),
            ])
    }

    private func threadRow(_ row: [SQLValue]) throws -> ThreadRow {
        ThreadRow(
            id: try ThreadID(bytes: row[0].blob ?? []), createdBy: try MemberID(bytes: row[1].blob ?? []),
            metadata: row[2].blob, createdAt: row[3].integer ?? 0)
    }

    func thread(_ id: ThreadID, space: SpaceID) throws -> ThreadRow? {
        try db.query(
            "SELECT thread_id, created_by, metadata, created_at FROM threads WHERE space_id = ? AND thread_id = ?",
            [.blob(space.bytes), .blob(id.bytes)]
        ).first.map(threadRow)
    }

    /// The rows of those of `ids` that `space` has, by id, in one statement where
    /// ``thread(_:space:)`` took one per thread (a join's wrap bundle names every thread of the
    /// space; docs/bot.md, session 16).
    func threads(_ ids: [ThreadID], space: SpaceID) throws -> [ThreadID: ThreadRow] {
        var rows: [ThreadID: ThreadRow] = [:]
        try lookUp(
            ids, "SELECT thread_id, created_by, metadata, created_at FROM threads WHERE space_id = ?1",
            [.blob(space.bytes)]
        ) { row in
            let thread = try threadRow(row)
            rows[thread.id] = thread
        }
        return rows
    }

    /// Runs `sql` (which binds `values` as ?1, ?2, … and selects `thread_id` first) for the
    /// threads from the least to the greatest of `ids`, and hands `row` the rows of `ids`. One
    /// range of the key, not a statement per thread nor an `IN` list: SQLite builds a temporary
    /// index for an `IN` list, and ten key lookups or an `IN` list of sixteen cost five to seven
    /// times this range (50–65 µs against 9 µs here). A bundle's threads are usually all of the
    /// space's; a sparse list reads the rows between its ends (at most the space's threads, or
    /// the member's wraps) and keeps its own.
    private func lookUp(
        _ ids: [ThreadID], _ sql: String, _ values: [SQLValue], row: ([SQLValue]) throws -> Void
    ) throws {
        guard let least = ids.min(), let greatest = ids.max() else { return }
        let wanted = Set(ids)
        let range = " AND thread_id BETWEEN ?\(values.count + 1) AND ?\(values.count + 2)"
        for found in try db.query(sql + range, values + [.blob(least.bytes), .blob(greatest.bytes)]) {
            guard let thread = try? ThreadID(bytes: found[0].blob ?? []), wanted.contains(thread) else {
                continue
            }
            try row(found)
        }
    }

    func threads(space: SpaceID) throws -> [ThreadRow] {
        try db.query(
            "SELECT thread_id, created_by, metadata, created_at FROM threads WHERE space_id = ? ORDER BY created_at, thread_id",
            [.blob(space.bytes)]
        ).map(threadRow)
    }

    /// How many threads `space` holds (never fewer than before: threads are not removed).
    func threadCount(space: SpaceID) throws -> Int {
        Int(
            try db.query("SELECT COUNT(*) FROM threads WHERE space_id = ?", [.blob(space.bytes)]).first?[0]
                .integer ?? 0)
    }

    /// How many messages `thread` holds.
    func messageCount(space: SpaceID, thread: ThreadID) throws -> Int {
        Int(
            try db.query(
                "SELECT COUNT(*) FROM messages WHERE space_id = ? AND thread_id = ?",
                [.blob(space.bytes), .blob(thread.bytes)]
            ).first?[0].integer ?? 0)
    }

    /// How many messages each thread of `space` holds (threads without any are left out).
    func messageCounts(space: SpaceID) throws -> [ThreadID: Int] {
        var counts: [ThreadID: Int] = [:]
        for row in try db.query(
            "SELECT thread_id, COUNT(*) FROM messages WHERE space_id = ? GROUP BY thread_id",
            [.blob(space.bytes)])
        {
            if let thread = try? ThreadID(bytes: row[0].blob ?? []) {
                counts[thread] = Int(row[1].integer ?? 0)
            }
        }
        return counts
    }

    func insertWrap(_ wrap: KeyWrap, now: Int64) throws {
        try db.query(
            """
            INSERT INTO wraps (space_id, thread_id, recipient, signer_key, sealed, signature, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .blob(wrap.space.bytes), .blob(wrap.thread.bytes), .blob(wrap.recipient.bytes),
                .blob(wrap.signer.bytes), .blob(wrap.sealed), .blob(wrap.signature.bytes), .integer(now),
            ])
    }

    /// The signing key of the stored wrap for `recipient`, if there is one.
    func wrapSigner(space: SpaceID, thread: ThreadID, recipient: MemberID) throws -> [UInt8]? {
        try db.query(
            "SELECT signer_key FROM wraps WHERE space_id = ? AND thread_id = ? AND recipient = ?",
            [.blob(space.bytes), .blob(thread.bytes), .blob(recipient.bytes)]
        ).first?[0].blob
    }

    /// ``wrapSigner(space:thread:recipient:)`` for several threads: the signing key of each
    /// stored wrap for `recipient` among `threads`, by thread (a thread without one is absent).
    func wrapSigners(space: SpaceID, threads: [ThreadID], recipient: MemberID) throws -> [ThreadID: [UInt8]] {
        var signers: [ThreadID: [UInt8]] = [:]
        try lookUp(
            threads, "SELECT thread_id, signer_key FROM wraps WHERE space_id = ?1 AND recipient = ?2",
            [.blob(space.bytes), .blob(recipient.bytes)]
        ) { row in
            signers[try ThreadID(bytes: row[0].blob ?? [])] = row[1].blob ?? []
        }
        return signers
    }

    func deleteWrap(space: SpaceID, thread: ThreadID, recipient: MemberID) throws {
        try db.query(
            "DELETE FROM wraps WHERE space_id = ? AND thread_id = ? AND recipient = ?",
            [.blob(space.bytes), .blob(thread.bytes), .blob(recipient.bytes)])
    }

    /// Stores a wrap bundle: each thread's box as that thread's row of `wraps` (so a thread's
    /// wraps are found, checked and replaced as before), naming the bundle by its ephemeral key;
    /// the signature goes in the first thread's row only.
    func insertBundle(_ bundle: KeyWrapBundle, now: Int64) throws {
        for (index, entry) in bundle.entries.enumerated() {
            try db.query(
                """
                INSERT INTO wraps (space_id, thread_id, recipient, signer_key, sealed, signature, created_at, bundle)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .blob(bundle.space.bytes), .blob(entry.thread.bytes), .blob(bundle.recipient.bytes),
                    .blob(bundle.signer.bytes), .blob(entry.nonce + entry.sealed),
                    .blob(index == 0 ? bundle.signature.bytes : []), .integer(now), .blob(bundle.ephemeral),
                ])
        }
    }

    /// Wrap bundles addressed to `recipient`, each whole (with every thread it still holds),
    /// optionally only those holding `thread`'s key. A bundle that lost its first thread's row
    /// (replaced because its signer left) has no signature left and is not listed.
    func bundles(space: SpaceID, recipient: MemberID, thread: ThreadID?) throws -> [KeyWrapBundle] {
        var sql = """
            SELECT bundle, signer_key, signature, thread_id, sealed FROM wraps
            WHERE space_id = ?1 AND recipient = ?2 AND bundle IS NOT NULL
            """
        var values: [SQLValue] = [.blob(space.bytes), .blob(recipient.bytes)]
        if let thread {
            sql += """
                 AND bundle IN (SELECT bundle FROM wraps
                    WHERE space_id = ?1 AND recipient = ?2 AND thread_id = ?3 AND bundle IS NOT NULL)
                """
            values.append(.blob(thread.bytes))
        }
        var bundles: [KeyWrapBundle] = []
        var parts: (ephemeral: [UInt8], signer: [UInt8], signature: [UInt8], entries: [KeyWrapBundle.Entry])?
        func finish() throws {
            guard let p = parts, p.signature.count == Signature.byteCount else { return }
            try bundles.append(
                KeyWrapBundle(
                    space: space, recipient: recipient, signer: SigningPublicKey(bytes: p.signer),
                    ephemeral: p.ephemeral, entries: p.entries, signature: Signature(bytes: p.signature)))
        }
        for row in try db.query(sql + " ORDER BY created_at, bundle, thread_id", values) {
            let ephemeral = row[0].blob ?? []
            if parts?.ephemeral != ephemeral {
                try finish()
                parts = (ephemeral, row[1].blob ?? [], [], [])
            }
            if let signature = row[2].blob, !signature.isEmpty { parts?.signature = signature }
            let sealed = row[4].blob ?? []
            parts?.entries.append(
                try KeyWrapBundle.Entry(
                    thread: ThreadID(bytes: row[3].blob ?? []),
                    nonce: Array(sealed.prefix(SecretBox.nonceByteCount)),
                    sealed: Array(sealed.dropFirst(SecretBox.nonceByteCount))))
        }
        try finish()
        return bundles
    }

    func hasWrap(space: SpaceID, thread: ThreadID, recipient: MemberID) throws -> Bool {
        try !db.query(
            "SELECT 1 FROM wraps WHERE space_id = ? AND thread_id = ? AND recipient = ?",
            [.blob(space.bytes), .blob(thread.bytes), .blob(recipient.bytes)]
        ).isEmpty
    }

    /// Single wraps addressed to `recipient`, optionally for one thread (bundles' threads are
    /// listed by ``bundles(space:recipient:thread:)``).
    func wraps(space: SpaceID, recipient: MemberID, thread: ThreadID?) throws -> [KeyWrap] {
        var sql =
            "SELECT thread_id, signer_key, sealed, signature FROM wraps WHERE space_id = ? AND recipient = ? AND bundle IS NULL"
        var values: [SQLValue] = [.blob(space.bytes), .blob(recipient.bytes)]
        if let thread {
            sql += " AND thread_id = ?"
            values.append(.blob(thread.bytes))
        }
        return try db.query(sql + " ORDER BY created_at, thread_id", values).map { row in
            try KeyWrap(
                space: space, thread: ThreadID(bytes: row[0].blob ?? []), recipient: recipient,
                signer: SigningPublicKey(bytes: row[1].blob ?? []), sealed: row[2].blob ?? [],
                signature: Signature(bytes: row[3].blob ?? []))
        }
    }

    // MARK: Messages

    func messageExists(space: SpaceID, thread: ThreadID, id: MessageID) throws -> Bool {
        try !db.query(
            "SELECT 1 FROM messages WHERE space_id = ? AND thread_id = ? AND message_id = ?",
            [.blob(space.bytes), .blob(thread.bytes), .blob(id.bytes)]
        ).isEmpty
    }

    /// Appends a message and returns its cursor.
    func insertMessage(_ message: EncryptedMessage, now: Int64) throws -> Int64 {
        try db.query(
            """
            INSERT INTO messages (space_id, thread_id, message_id, author, nonce, ciphertext, signature, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .blob(message.space.bytes), .blob(message.thread.bytes), .blob(message.id.bytes),
                .blob(message.author.bytes), .blob(message.nonce), .blob(message.ciphertext),
                .blob(message.signature.bytes), .integer(now),
            ])
        return db.lastInsertRowID
    }

    /// Messages of a thread with a cursor greater than `since`, oldest first.
    func messages(space: SpaceID, thread: ThreadID, since: Int64, limit: Int) throws -> [(
        Int64, EncryptedMessage
    )] {
        try db.query(
            """
            SELECT cursor, message_id, author, nonce, ciphertext, signature FROM messages
            WHERE space_id = ? AND thread_id = ? AND cursor > ? ORDER BY cursor LIMIT ?
            """,
            [.blob(space.bytes), .blob(thread.bytes), .integer(since), .integer(Int64(limit))]
        ).map { row in
            let message = try EncryptedMessage(
                space: space, thread: thread, id: MessageID(bytes: row[1].blob ?? []),
                author: MemberID(bytes: row[2].blob ?? []), nonce: row[3].blob ?? [],
                ciphertext: row[4].blob ?? [],
                signature: Signature(bytes: row[5].blob ?? []))
            return (row[0].integer ?? 0, message)
        }
    }

    // MARK: Inbox

    func insertNote(_ note: InboxNote, now: Int64) throws -> Int64 {
        try db.query(
            "INSERT INTO inbox (space_id, recipient, sender, sealed, signature, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .blob(note.space.bytes), .blob(note.recipient.bytes), .blob(note.sender.bytes),
                .blob(note.sealed),
                .blob(note.signature.bytes), .integer(now),
            ])
        return db.lastInsertRowID
    }

    func notes(space: SpaceID, recipient: MemberID, since: Int64, limit: Int) throws -> [(
        Int64, Int64, InboxNote
    )] {
        try db.query(
            """
            SELECT id, sender, sealed, signature, created_at FROM inbox
            WHERE space_id = ? AND recipient = ? AND id > ? ORDER BY id LIMIT ?
            """,
            [.blob(space.bytes), .blob(recipient.bytes), .integer(since), .integer(Int64(limit))]
        ).map { row in
            let note = try InboxNote(
                space: space, sender: MemberID(bytes: row[1].blob ?? []), recipient: recipient,
                sealed: row[2].blob ?? [], signature: Signature(bytes: row[3].blob ?? []))
            return (row[0].integer ?? 0, row[4].integer ?? 0, note)
        }
    }

    /// Deletes one of `recipient`'s notes; false when there is no such note in their inbox.
    func deleteNote(id: Int64, space: SpaceID, recipient: MemberID) throws -> Bool {
        try db.query(
            "DELETE FROM inbox WHERE id = ? AND space_id = ? AND recipient = ?",
            [.integer(id), .blob(space.bytes), .blob(recipient.bytes)])
        return db.changes > 0
    }

    // MARK: Diagnostics

    /// Every row of every table (for operators' diagnostics and for tests that check what is stored).
    func dump() throws -> [String: [[SQLValue]]] {
        var result: [String: [[SQLValue]]] = [:]
        for table in SpaceSchema.tables {
            result[table] = try db.query("SELECT * FROM \(table) ORDER BY 1")
        }
        return result
    }
}

/// Problems opening the store.
public enum SpaceStoreError: Error, CustomStringConvertible {
    case schemaTooNew(found: Int, known: Int)
    /// The file belongs to another program (or to none of ours); nothing was written.
    case foreignDatabase(ForeignDatabase)

    /// The stable machine-readable code.
    public var code: String {
        switch self {
        case .schemaTooNew: "schema_too_new"
        case .foreignDatabase: ForeignDatabase.code
        }
    }

    public var description: String {
        switch self {
        case .schemaTooNew(let found, let known):
            "The database has schema version \(found), but this eleven-server knows only up to \(known). "
                + "Use a newer eleven-server."
        case .foreignDatabase(let foreign): foreign.message
        }
    }
}
