import SQLite

/// The space server's database schema, as numbered migrations. `PRAGMA user_version` records how
/// many have run; opening a database runs the missing ones in one transaction. Append new
/// migrations; never edit one that has shipped.
enum SpaceSchema {
    static let migrations: [String] = [
        // 1: spaces, members, tokens, signed events, threads, wraps, messages, inboxes.
        """
        CREATE TABLE spaces (
            id BLOB PRIMARY KEY,
            name TEXT NOT NULL,
            owner_member BLOB NOT NULL,
            owner_signing_key BLOB NOT NULL,
            admin_token_hash BLOB NOT NULL UNIQUE,
            avatar BLOB,
            avatar_type TEXT,
            created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE members (
            space_id BLOB NOT NULL REFERENCES spaces(id),
            member_id BLOB NOT NULL,
            encryption_key BLOB NOT NULL,
            signing_key BLOB NOT NULL,
            rights INTEGER NOT NULL,
            name TEXT NOT NULL,
            added_sequence INTEGER NOT NULL,
            removed_sequence INTEGER,
            PRIMARY KEY (space_id, member_id)
        ) WITHOUT ROWID;
        CREATE TABLE device_tokens (
            id BLOB PRIMARY KEY,
            token_hash BLOB NOT NULL UNIQUE,
            space_id BLOB NOT NULL,
            member_id BLOB NOT NULL,
            label TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            revoked_at INTEGER,
            FOREIGN KEY (space_id, member_id) REFERENCES members(space_id, member_id)
        ) WITHOUT ROWID;
        CREATE INDEX device_tokens_member ON device_tokens(space_id, member_id);
        CREATE TABLE events (
            space_id BLOB NOT NULL REFERENCES spaces(id),
            sequence INTEGER NOT NULL,
            hash BLOB NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (space_id, sequence)
        ) WITHOUT ROWID;
        CREATE TABLE threads (
            space_id BLOB NOT NULL REFERENCES spaces(id),
            thread_id BLOB NOT NULL,
            created_by BLOB NOT NULL,
            metadata BLOB,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (space_id, thread_id)
        ) WITHOUT ROWID;
        CREATE TABLE wraps (
            space_id BLOB NOT NULL,
            thread_id BLOB NOT NULL,
            recipient BLOB NOT NULL,
            signer_key BLOB NOT NULL,
            sealed BLOB NOT NULL,
            signature BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (space_id, thread_id, recipient),
            FOREIGN KEY (space_id, thread_id) REFERENCES threads(space_id, thread_id)
        ) WITHOUT ROWID;
        CREATE INDEX wraps_recipient ON wraps(space_id, recipient);
        CREATE TABLE messages (
            cursor INTEGER PRIMARY KEY AUTOINCREMENT,
            space_id BLOB NOT NULL,
            thread_id BLOB NOT NULL,
            message_id BLOB NOT NULL,
            author BLOB NOT NULL,
            nonce BLOB NOT NULL,
            ciphertext BLOB NOT NULL,
            signature BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            UNIQUE (space_id, thread_id, message_id),
            FOREIGN KEY (space_id, thread_id) REFERENCES threads(space_id, thread_id)
        );
        CREATE INDEX messages_thread ON messages(space_id, thread_id, cursor);
        CREATE TABLE inbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            space_id BLOB NOT NULL,
            recipient BLOB NOT NULL,
            sender BLOB NOT NULL,
            sealed BLOB NOT NULL,
            signature BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            FOREIGN KEY (space_id, recipient) REFERENCES members(space_id, member_id)
        );
        CREATE INDEX inbox_recipient ON inbox(space_id, recipient, id);
        """,
        // 2: one-time sign-in challenges (a member proves their signing key to get a device token).
        """
        CREATE TABLE sign_in_challenges (
            challenge_hash BLOB PRIMARY KEY,
            space_id BLOB NOT NULL REFERENCES spaces(id),
            expires_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 3: full-length invite links. The id is derived from the link's secret; the payload is
        // sealed under a key the server never sees; `verifier` is a hash of the claim secret.
        """
        CREATE TABLE key_invites (
            id BLOB PRIMARY KEY,
            space_id BLOB NOT NULL,
            shape TEXT NOT NULL,
            sealed BLOB NOT NULL,
            verifier BLOB NOT NULL,
            inviter BLOB,
            invite_member BLOB,
            rights INTEGER NOT NULL,
            person_name TEXT,
            space_name TEXT,
            sealed_branding BLOB,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            uses_left INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX key_invites_member ON key_invites(space_id, invite_member);
        """,
        // 4: home accounts (`--home`): an account is its key anchors; see HomeStore.swift.
        HomeSchema.migration,
        // 5: the email identity anchor (blind index only); see HomeStore.swift.
        HomeSchema.emailMigration,
        // 6: wraps clustered by recipient. Keyed by (space, thread, recipient), a joiner's wraps
        // for a space's threads sat on as many b-tree leaves (one per thread) and the recipient
        // index on one more, every page written whole to the WAL: half of what a join wrote. Keyed
        // by (space, recipient, thread) they are neighbours, one or two leaves, and the key
        // serves both the lookups of one wrap and a member's list, so the index goes.
        """
        CREATE TABLE wraps_v2 (
            space_id BLOB NOT NULL,
            thread_id BLOB NOT NULL,
            recipient BLOB NOT NULL,
            signer_key BLOB NOT NULL,
            sealed BLOB NOT NULL,
            signature BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (space_id, recipient, thread_id),
            FOREIGN KEY (space_id, thread_id) REFERENCES threads(space_id, thread_id)
        ) WITHOUT ROWID;
        INSERT INTO wraps_v2 (space_id, thread_id, recipient, signer_key, sealed, signature, created_at)
            SELECT space_id, thread_id, recipient, signer_key, sealed, signature, created_at FROM wraps;
        DROP TABLE wraps;
        ALTER TABLE wraps_v2 RENAME TO wraps;
        """,
        // 7: device tokens keyed by (space, member, id). A token was three b-trees, each keyed by
        // a random value (its id, its hash, and the index by member), so every sign-in wrote three
        // leaves; keyed by its member, the member index goes and a sign-in writes two. A token
        // is found by its hash (every request) or, to revoke it, by its member and id (an
        // operator's lookup by id alone reads the space's tokens).
        """
        CREATE TABLE device_tokens_v2 (
            id BLOB NOT NULL,
            token_hash BLOB NOT NULL UNIQUE,
            space_id BLOB NOT NULL,
            member_id BLOB NOT NULL,
            label TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            revoked_at INTEGER,
            PRIMARY KEY (space_id, member_id, id),
            FOREIGN KEY (space_id, member_id) REFERENCES members(space_id, member_id)
        ) WITHOUT ROWID;
        INSERT INTO device_tokens_v2
            (id, token_hash, space_id, member_id, label, created_at, expires_at, revoked_at)
            SELECT id, token_hash, space_id, member_id, label, created_at, expires_at, revoked_at
            FROM device_tokens;
        DROP TABLE device_tokens;
        ALTER TABLE device_tokens_v2 RENAME TO device_tokens;
        """,
        // 8: an invite's names sealed under its link (the invitee's and the inviter's), instead of
        // person_name in clear, which only invites minted by older clients fill.
        """
        ALTER TABLE key_invites ADD COLUMN sealed_names BLOB;
        """,
        // 9: sign-in challenges the server checks by their tag (`SignInChallenge`), under a
        // secret of its own: asking for one no longer commits; only used ones are kept, keyed
        // by expiry so new ones append at the end and the expired leave from the start.
        """
        DROP TABLE sign_in_challenges;
        CREATE TABLE used_sign_in_challenges (
            expires_at INTEGER NOT NULL,
            nonce BLOB NOT NULL,
            PRIMARY KEY (expires_at, nonce)
        ) WITHOUT ROWID;
        CREATE TABLE server_secrets (
            name TEXT PRIMARY KEY,
            secret BLOB NOT NULL
        ) WITHOUT ROWID;
        """,
        // 10: wrap bundles (`KeyWrapBundle`): one member's keys of several threads under one
        // signature and one ephemeral key. Each thread's box stays a row of `wraps` (found,
        // checked and replaced per thread as before) naming its bundle by the ephemeral key; the
        // bundle's signature is kept once, in the row of its first thread, so a bundle is one
        // member's neighbouring rows and nothing else (a table of its own cost a random leaf per
        // join). Rows from before (`bundle` NULL) are single wraps and are served as they were.
        """
        ALTER TABLE wraps ADD COLUMN bundle BLOB;
        """,
    ]

    /// The space and home server's kind of file (one transaction for the missing migrations).
    static let schema = DatabaseSchema(
        owner: .spaceServer, tables: Set(tables + ["server_secrets", "sign_in_challenges"]),
        migrations: migrations, migratesInOneTransaction: true,
        pragmas: [
            "PRAGMA foreign_keys=ON", "PRAGMA wal_autocheckpoint=\(checkpointFrames)",
            "PRAGMA cache_size=-\(cacheKiB)",
        ],
        newFilePageSize: pageSize)

    /// WAL frames between checkpoints: 4 MiB of WAL at 1 KiB pages, as SQLite's default of 1000
    /// frames was at 4 KiB. A checkpoint copies each page the WAL changed once, however often it
    /// changed (hot leaves, interior pages, the header page), so fewer, larger checkpoints copy
    /// fewer pages for the same commits.
    static let checkpointFrames = 4000

    /// The page cache, in KiB (SQLite's default is 2000). At 1 KiB pages the default held 2000
    /// pages, fewer than a space of a few thousand members touches: the b-trees keyed by random
    /// values (tokens by hash, members, challenges) were read again from the file, about 30
    /// `pread` per join (docs/bot.md, session 16). Taken only as pages are read.
    static let cacheKiB = 32768

    /// The page size of a new file. A commit writes each page it changed, whole, to the WAL, and
    /// a join's commits change a few rows of several tables (a token, a member, an event, a
    /// member's wraps): 1 KiB pages write about a quarter of 4 KiB ones for the same rows. The
    /// storage probe asks the file system for room (``SQLiteDatabase/probeWrite()``), since a
    /// small page fits in room the WAL already has. A file that exists keeps its size.
    static let pageSize = 1024

    /// Every table, for dumps, but `server_secrets` (a dump never shows a secret). The schema
    /// also knows it and the tables earlier versions made (`sign_in_challenges`).
    static let tables = [
        "spaces", "members", "device_tokens", "events", "threads", "wraps", "messages", "inbox",
        "used_sign_in_challenges", "key_invites",
        "home_accounts", "home_anchors", "home_sessions", "home_nonces", "home_emails",
    ]
}
