import SQLite

/// The SQLite schema, versioned with `PRAGMA user_version`. `migrations[i]` takes a database
/// from version `i` to `i + 1`; opening applies the missing ones, each in its own transaction.
/// Append new migrations; never edit a released one.
enum RelaySchema {
    static let migrations: [String] = [
        // 1: nameplates, mailboxes, their sides, and queued messages. Nothing about clients
        // beyond what the protocol needs (no addresses, no versions, no timestamps of binds).
        """
        CREATE TABLE nameplates (
            app_id TEXT NOT NULL, name TEXT NOT NULL, mailbox_id TEXT NOT NULL,
            PRIMARY KEY (app_id, name)) WITHOUT ROWID;
        CREATE TABLE nameplate_sides (
            app_id TEXT NOT NULL, name TEXT NOT NULL, side TEXT NOT NULL,
            claimed INTEGER NOT NULL, added REAL NOT NULL,
            PRIMARY KEY (app_id, name, side)) WITHOUT ROWID;
        CREATE TABLE mailboxes (
            app_id TEXT NOT NULL, id TEXT NOT NULL, for_nameplate INTEGER NOT NULL,
            updated REAL NOT NULL,
            PRIMARY KEY (app_id, id)) WITHOUT ROWID;
        CREATE TABLE mailbox_sides (
            app_id TEXT NOT NULL, mailbox_id TEXT NOT NULL, side TEXT NOT NULL,
            opened INTEGER NOT NULL, added REAL NOT NULL, mood TEXT,
            PRIMARY KEY (app_id, mailbox_id, side)) WITHOUT ROWID;
        CREATE TABLE messages (
            app_id TEXT NOT NULL, mailbox_id TEXT NOT NULL, side TEXT NOT NULL,
            phase TEXT NOT NULL, body TEXT NOT NULL, server_rx REAL NOT NULL, msg_id TEXT);
        CREATE INDEX messages_by_mailbox ON messages (app_id, mailbox_id);
        """,
        // 2: messages clustered by mailbox. A rowid table with a separate index wrote two
        // b-tree pages per message (the table's and the index's); keyed by (app_id, mailbox_id,
        // seq) without a rowid, a message is one page. `seq` orders a mailbox's messages; queued
        // messages keep their rowid as it (increasing in the order they were added), and new
        // ones take the mailbox's largest plus one.
        """
        CREATE TABLE messages_v2 (
            app_id TEXT NOT NULL, mailbox_id TEXT NOT NULL, seq INTEGER NOT NULL,
            side TEXT NOT NULL, phase TEXT NOT NULL, body TEXT NOT NULL, server_rx REAL NOT NULL, msg_id TEXT,
            PRIMARY KEY (app_id, mailbox_id, seq)) WITHOUT ROWID;
        INSERT INTO messages_v2 (app_id, mailbox_id, seq, side, phase, body, server_rx, msg_id)
            SELECT app_id, mailbox_id, rowid, side, phase, body, server_rx, msg_id FROM messages;
        DROP TABLE messages;
        ALTER TABLE messages_v2 RENAME TO messages;
        """,
    ]

    static var currentVersion: Int { migrations.count }

    /// Every table the migrations create.
    static let tables: Set<String> = [
        "nameplates", "nameplate_sides", "mailboxes", "mailbox_sides", "messages",
    ]

    /// The relay's kind of file; `secureDelete` overwrites deleted content (closed mailboxes'
    /// bodies) instead of leaving it in free pages.
    static func schema(secureDelete: Bool) -> DatabaseSchema {
        DatabaseSchema(
            owner: .relay, tables: tables, migrations: migrations,
            pragmas: ["PRAGMA secure_delete=\(secureDelete ? "ON" : "OFF")"])
    }
}
