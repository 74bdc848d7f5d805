import SQLite
import SpaceModel

/// The home tables (migration 4). An account has no identifier a person knows: a random row id,
/// the sealed vault with its version (compare-and-swap) and key generation, and its key anchors
/// filed under blind ids, each with public keys and a sealed wrap of the vault key. Sessions and
/// seen request nonces are kept as hashes.
enum HomeSchema {
    static let migration = """
        CREATE TABLE home_accounts (
            id BLOB PRIMARY KEY,
            version INTEGER NOT NULL,
            generation INTEGER NOT NULL,
            vault BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE home_anchors (
            id BLOB PRIMARY KEY,
            account_id BLOB NOT NULL REFERENCES home_accounts(id),
            kind TEXT NOT NULL,
            encryption_key BLOB NOT NULL,
            signing_key BLOB NOT NULL,
            wrap BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            last_used_at INTEGER,
            revoked_at INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX home_anchors_account ON home_anchors(account_id);
        CREATE TABLE home_sessions (
            token_hash BLOB PRIMARY KEY,
            account_id BLOB NOT NULL REFERENCES home_accounts(id),
            anchor_id BLOB NOT NULL REFERENCES home_anchors(id),
            expires_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX home_sessions_anchor ON home_sessions(anchor_id);
        CREATE TABLE home_nonces (
            nonce_hash BLOB PRIMARY KEY,
            expires_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        """

    /// Migration 5: the email identity anchor. An address is filed only under its blind index
    /// HMAC(pepper, lowercase(address)); the pepper is a file beside the database.
    static let emailMigration = """
        CREATE TABLE home_emails (
            email_index BLOB PRIMARY KEY,
            account_id BLOB NOT NULL REFERENCES home_accounts(id),
            created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX home_emails_account ON home_emails(account_id);
        """
}

/// A stored home account.
struct HomeAccountRow {
    let id: [UInt8]
    let version: Int64
    let generation: Int64
    let vault: [UInt8]
}

/// A stored key anchor.
struct HomeAnchorRow {
    let id: AnchorID
    let account: [UInt8]
    let keys: AnchorKeys
    let wrap: [UInt8]
    let createdAt: Int64
    let lastUsedAt: Int64?
    let revokedAt: Int64?
}

/// A live session.
struct HomeSessionRow {
    let account: [UInt8]
    let anchor: AnchorID
    let expiresAt: Int64
}

extension SpaceStore {
    func insertHomeAccount(id: [UInt8], generation: Int64, vault: [UInt8], now: Int64) throws {
        try db.query(
            """
            INSERT INTO home_accounts (id, version, generation, vault, created_at, updated_at)
            VALUES (?, 1, ?, ?, ?, ?)
            """, [.blob(id), .integer(generation), .blob(vault), .integer(now), .integer(now)])
    }

    func homeAccount(_ id: [UInt8]) throws -> HomeAccountRow? {
        try db.query("SELECT version, generation, vault FROM home_accounts WHERE id = ?", [.blob(id)]).first
            .map {
                HomeAccountRow(
                    id: id, version: $0[0].integer ?? 0, generation: $0[1].integer ?? 0,
                    vault: $0[2].blob ?? [])
            }
    }

    func updateHomeVault(account: [UInt8], version: Int64, generation: Int64, vault: [UInt8], now: Int64)
        throws
    {
        try db.query(
            "UPDATE home_accounts SET version = ?, generation = ?, vault = ?, updated_at = ? WHERE id = ?",
            [.integer(version), .integer(generation), .blob(vault), .integer(now), .blob(account)])
    }

    func insertHomeAnchor(_ upload: HomeWire.AnchorUpload, wrap: [UInt8], account: [UInt8], now: Int64) throws
    {
        try db.query(
            """
            INSERT INTO home_anchors (id, account_id, kind, encryption_key, signing_key, wrap, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .blob(upload.id.bytes), .blob(account), .text(upload.kind.rawValue),
                .blob(upload.publicKeys.encryption.bytes), .blob(upload.publicKeys.signing.bytes),
                .blob(wrap),
                .integer(now),
            ])
    }

    private static let anchorColumns =
        "id, account_id, kind, encryption_key, signing_key, wrap, created_at, last_used_at, revoked_at"

    private func anchorRow(_ row: [SQLValue]) throws -> HomeAnchorRow? {
        guard let kind = AnchorKind(rawValue: row[2].text ?? "") else { return nil }
        let keys = MemberPublicKeys(
            encryption: try EncryptionPublicKey(bytes: row[3].blob ?? []),
            signing: try SigningPublicKey(bytes: row[4].blob ?? []))
        return HomeAnchorRow(
            id: try AnchorID(bytes: row[0].blob ?? []), account: row[1].blob ?? [],
            keys: AnchorKeys(kind: kind, publicKeys: keys), wrap: row[5].blob ?? [],
            createdAt: row[6].integer ?? 0,
            lastUsedAt: row[7].integer, revokedAt: row[8].integer)
    }

    func homeAnchor(_ id: AnchorID) throws -> HomeAnchorRow? {
        try db.query("SELECT \(Self.anchorColumns) FROM home_anchors WHERE id = ?", [.blob(id.bytes)]).first
            .flatMap(anchorRow)
    }

    func homeAnchors(account: [UInt8]) throws -> [HomeAnchorRow] {
        try db.query(
            "SELECT \(Self.anchorColumns) FROM home_anchors WHERE account_id = ? ORDER BY created_at, id",
            [.blob(account)]
        ).compactMap(anchorRow)
    }

    func touchHomeAnchor(_ id: AnchorID, now: Int64) throws {
        try db.query(
            "UPDATE home_anchors SET last_used_at = ? WHERE id = ?", [.integer(now), .blob(id.bytes)])
    }

    func setHomeWrap(_ id: AnchorID, wrap: [UInt8]) throws {
        try db.query("UPDATE home_anchors SET wrap = ? WHERE id = ?", [.blob(wrap), .blob(id.bytes)])
    }

    /// Revokes an anchor: its wrap is forgotten and its sessions end.
    func revokeHomeAnchor(_ id: AnchorID, now: Int64) throws {
        try db.query(
            "UPDATE home_anchors SET revoked_at = ?, wrap = X'' WHERE id = ?",
            [.integer(now), .blob(id.bytes)])
        try db.query("DELETE FROM home_sessions WHERE anchor_id = ?", [.blob(id.bytes)])
    }

    func insertHomeSession(hash: [UInt8], account: [UInt8], anchor: AnchorID, expiresAt: Int64, now: Int64)
        throws
    {
        try db.query("DELETE FROM home_sessions WHERE expires_at <= ?", [.integer(now)])
        try db.query(
            "INSERT INTO home_sessions (token_hash, account_id, anchor_id, expires_at) VALUES (?, ?, ?, ?)",
            [.blob(hash), .blob(account), .blob(anchor.bytes), .integer(expiresAt)])
    }

    func homeSession(hash: [UInt8]) throws -> HomeSessionRow? {
        try db.query(
            "SELECT account_id, anchor_id, expires_at FROM home_sessions WHERE token_hash = ?", [.blob(hash)]
        ).first.map {
            HomeSessionRow(
                account: $0[0].blob ?? [], anchor: try AnchorID(bytes: $0[1].blob ?? []),
                expiresAt: $0[2].integer ?? 0)
        }
    }

    /// Records a request nonce; false when it was seen before (a replay). Forgets nonces whose
    /// proofs can no longer be fresh.
    func recordHomeNonce(hash: [UInt8], expiresAt: Int64, now: Int64) throws -> Bool {
        try db.query("DELETE FROM home_nonces WHERE expires_at < ?", [.integer(now)])
        guard try db.query("SELECT 1 FROM home_nonces WHERE nonce_hash = ?", [.blob(hash)]).isEmpty else {
            return false
        }
        try db.query(
            "INSERT INTO home_nonces (nonce_hash, expires_at) VALUES (?, ?)",
            [.blob(hash), .integer(expiresAt)])
        return true
    }

    // MARK: Email anchors

    /// The account an address's blind index is attached to.
    func homeEmailAccount(index: [UInt8]) throws -> [UInt8]? {
        try db.query("SELECT account_id FROM home_emails WHERE email_index = ?", [.blob(index)]).first?[0]
            .blob
    }

    func homeEmailCount(account: [UInt8]) throws -> Int {
        Int(
            try db.query("SELECT count(*) FROM home_emails WHERE account_id = ?", [.blob(account)]).first?[0]
                .integer ?? 0)
    }

    func insertHomeEmail(index: [UInt8], account: [UInt8], now: Int64) throws {
        try db.query(
            "INSERT INTO home_emails (email_index, account_id, created_at) VALUES (?, ?, ?)",
            [.blob(index), .blob(account), .integer(now)])
    }

    /// Detaches an address from `account`; false when that account did not have it.
    func deleteHomeEmail(index: [UInt8], account: [UInt8]) throws -> Bool {
        let before = db.totalChanges
        try db.query(
            "DELETE FROM home_emails WHERE email_index = ? AND account_id = ?",
            [.blob(index), .blob(account)])
        return db.totalChanges != before
    }
}
