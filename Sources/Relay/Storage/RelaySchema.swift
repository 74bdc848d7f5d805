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
        // 3: nameplates, mailboxes and their sides in one table, each side keyed right after its
        // nameplate or mailbox. Four tables were four b-trees: a first claim wrote a leaf of each
        // (the nameplate, its side, the mailbox, its side); now a side lands on its parent's
        // leaf, so a claim, an open, a release or a close writes the one or two leaves of the
        // nameplate and the mailbox it changes. A row is a nameplate (`kind` 0) or a mailbox
        // (`kind` 1) when `part` is 0 (with `side` empty), one of its sides when `part` is 1:
        //   nameplate: mailbox_id;              its side: flag = claimed, at = added
        //   mailbox:   flag = for_nameplate, at = updated; its side: flag = opened, at = added, mood
        """
        CREATE TABLE channels (
            app_id TEXT NOT NULL, kind INTEGER NOT NULL, id TEXT NOT NULL, part INTEGER NOT NULL,
            side TEXT NOT NULL, mailbox_id TEXT, flag INTEGER NOT NULL, at REAL NOT NULL, mood TEXT,
            PRIMARY KEY (app_id, kind, id, part, side)) WITHOUT ROWID;
        INSERT INTO channels (app_id, kind, id, part, side, mailbox_id, flag, at)
            SELECT app_id, 0, name, 0, '', mailbox_id, 0, 0 FROM nameplates;
        INSERT INTO channels (app_id, kind, id, part, side, flag, at)
            SELECT app_id, 0, name, 1, side, claimed, added FROM nameplate_sides;
        INSERT INTO channels (app_id, kind, id, part, side, flag, at)
            SELECT app_id, 1, id, 0, '', for_nameplate, updated FROM mailboxes;
        INSERT INTO channels (app_id, kind, id, part, side, flag, at, mood)
            SELECT app_id, 1, mailbox_id, 1, side, opened, added, mood FROM mailbox_sides;
        DROP TABLE nameplates;
        DROP TABLE nameplate_sides;
        DROP TABLE mailboxes;
        DROP TABLE mailbox_sides;
        """,
    ]

    static var currentVersion: Int { migrations.count }

    /// Every table the migrations create (those a later one dropped too: a file from before
    /// application ids may still hold them).
    static let tables: Set<String> = [
        "nameplates", "nameplate_sides", "mailboxes", "mailbox_sides", "messages", "channels",
    ]

    /// The relay's kind of file; `secureDelete` overwrites deleted content (closed mailboxes'
    /// bodies) instead of leaving it in free pages.
    static func schema(secureDelete: Bool) -> DatabaseSchema {
        DatabaseSchema(
            owner: .relay, tables: tables, migrations: migrations,
            pragmas: ["PRAGMA secure_delete=\(secureDelete ? "ON" : "OFF")"], newFilePageSize: pageSize)
    }

    /// The page size of a new file. Every commit writes each page it changed whole to the WAL,
    /// and a relay's commits are small (a side, a message, a few rows): with 4 KiB pages most of
    /// each page written was unchanged. A file made with another size keeps it.
    static let pageSize = 1024
}
