import CSodium
import ClientCore
import Foundation
import JoinProtocol
import PAKE
import SQLite
import SpaceModel
import Support

/// One invite the bot attends, as it is saved (sealed) after every step so a bot killed at any
/// point resumes it: its secret words and key-agreement seed, the inviter's signed record and
/// answers, and its ``InviteAttendant`` (nameplate, current use, counts, how it ended).
public struct BotInvite: Codable, Sendable {
    /// Where the invite stands, as `eleven-bot status` and the store's index show it (derived
    /// from the attendant and the record).
    public enum State: String, Codable, Sendable {
        /// Accepted; no nameplate yet.
        case allocating
        /// The nameplate went back to the inviter; waiting for their signed invite record.
        case awaitingRecord = "awaiting_record"
        /// Attending joiners.
        case open
        case usedUp = "used_up"
        case burned
        case expired
        /// Ended without a joiner: the inviter lost the right to add members, or never signed.
        case cancelled

        public var isOpen: Bool { self == .allocating || self == .awaitingRecord || self == .open }
    }

    /// Unique in the bot: the inviter's member id and the id the inviter chose.
    public let id: String
    public let noteID: String
    public let inviter: MemberID
    public let inviterName: String?
    public let secret: InviteSecret
    public let relay: String
    /// Ask the inviter before letting anyone in.
    public let ask: Bool
    public let createdAt: Int64
    public var record: SignedInvite?
    /// The inviter's answer for use `approvalUse` (policy "ask").
    public var approval: Bool?
    public var approvalUse: Int?
    /// The inviter's signed record was refused: the worker ends the invite.
    public var cancelRequested = false
    /// Joiners' attempts on this invite that the bot never saw, reported by joiners who proved
    /// another code: the invite's worker counts them (``InviteAttendant/Event/attemptReported(side:)``).
    public var reportedSides: [Rendezvous.Side] = []
    public var attendant: InviteAttendant

    public init(
        id: String, noteID: String, inviter: MemberID, inviterName: String?, secret: InviteSecret,
        relay: String,
        ask: Bool, createdAt: Int64, attendant: InviteAttendant, record: SignedInvite? = nil
    ) {
        self.id = id
        self.noteID = noteID
        self.inviter = inviter
        self.inviterName = inviterName
        self.secret = secret
        self.relay = relay
        self.ask = ask
        self.createdAt = createdAt
        self.attendant = attendant
        self.record = record
    }

    public var state: State {
        switch attendant.state {
        case .allocating: .allocating
        case .preparing, .attending, .admitting: record == nil ? .awaitingRecord : .open
        case .ended(.usedUp, _): .usedUp
        case .ended(.burned, _): .burned
        case .ended(.expired, _): .expired
        case .ended(.cancelled, _): .cancelled
        }
    }

    public var nameplate: String? { attendant.nameplate?.value }
    public var uses: Int { attendant.policy.uses }
    public var usesLeft: Int { attendant.usesLeft }
    public var expiresAt: Int64 { attendant.policy.expiresAt }
    /// The current use (a fresh mailbox and key-agreement stream for each).
    public var use: Int { attendant.use ?? 0 }

    /// The code as people type it (secret).
    var code: String? { nameplate.map { "\(secret.words)-\($0)" } }

    private enum CodingKeys: String, CodingKey {
        case id, noteID, inviter, inviterName, secret, relay, ask, createdAt, record, approval, approvalUse
        case cancelRequested, attendant, reportedSides
        // Invites saved before the attendant machine: its pieces one by one.
        case nameplate, machine, use, usesLeft, uses, failures, maxFailures, expiresAt, state, admitting
        case admittingKeys
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        noteID = try c.decode(String.self, forKey: .noteID)
        inviter = try c.decode(MemberID.self, forKey: .inviter)
        inviterName = try c.decodeIfPresent(String.self, forKey: .inviterName)
        secret = try c.decode(InviteSecret.self, forKey: .secret)
        relay = try c.decode(String.self, forKey: .relay)
        ask = try c.decode(Bool.self, forKey: .ask)
        createdAt = try c.decode(Int64.self, forKey: .createdAt)
        record = try c.decodeIfPresent(SignedInvite.self, forKey: .record)
        approval = try c.decodeIfPresent(Bool.self, forKey: .approval)
        approvalUse = try c.decodeIfPresent(Int.self, forKey: .approvalUse)
        cancelRequested = try c.decodeIfPresent(Bool.self, forKey: .cancelRequested) ?? false
        reportedSides = try c.decodeIfPresent([Rendezvous.Side].self, forKey: .reportedSides) ?? []
        if let attendant = try c.decodeIfPresent(InviteAttendant.self, forKey: .attendant) {
            self.attendant = attendant
            return
        }
        let uses = try c.decode(Int.self, forKey: .uses)
        let usesLeft = try c.decode(Int.self, forKey: .usesLeft)
        let use = try c.decode(Int.self, forKey: .use)
        let nameplate = try c.decodeIfPresent(String.self, forKey: .nameplate).map {
            Rendezvous.Nameplate($0)
        }
        let machine = try c.decodeIfPresent(RendezvousMachine.self, forKey: .machine)
        let admitting = try c.decodeIfPresent(Int.self, forKey: .admitting)
        let keys = try c.decodeIfPresent(JoinerKeys.self, forKey: .admittingKeys)
        let state: InviteAttendant.State
        switch try c.decode(State.self, forKey: .state) {
        case .usedUp: state = .ended(.usedUp, nameplate: nameplate)
        case .burned: state = .ended(.burned, nameplate: nameplate)
        case .expired: state = .ended(.expired, nameplate: nameplate)
        case .cancelled: state = .ended(.cancelled, nameplate: nameplate)
        case .allocating, .awaitingRecord, .open:
            if let nameplate, let machine, let keys, admitting == use {
                state = .admitting(nameplate: nameplate, use: use, connection: machine, joinerKeys: keys)
            } else if let nameplate, let machine {
                state = .attending(nameplate: nameplate, use: use, connection: machine, attempt: false)
            } else if let nameplate {
                state = .preparing(nameplate: nameplate, use: use)
            } else {
                state = .allocating
            }
        }
        attendant = InviteAttendant(
            policy: .init(
                uses: uses, maxFailures: try c.decode(Int.self, forKey: .maxFailures),
                expiresAt: try c.decode(Int64.self, forKey: .expiresAt)),
            state: state, taken: uses - usesLeft, failures: try c.decode(Int.self, forKey: .failures))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(noteID, forKey: .noteID)
        try c.encode(inviter, forKey: .inviter)
        try c.encodeIfPresent(inviterName, forKey: .inviterName)
        try c.encode(secret, forKey: .secret)
        try c.encode(relay, forKey: .relay)
        try c.encode(ask, forKey: .ask)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encodeIfPresent(record, forKey: .record)
        try c.encodeIfPresent(approval, forKey: .approval)
        try c.encodeIfPresent(approvalUse, forKey: .approvalUse)
        try c.encode(cancelRequested, forKey: .cancelRequested)
        if !reportedSides.isEmpty { try c.encode(reportedSides, forKey: .reportedSides) }
        try c.encode(attendant, forKey: .attendant)
    }
}

extension BotInvite {
    /// The invite as ``encode(to:)`` writes it, without Foundation's encoder (``StateJSONWriter``):
    /// it is sealed and written at nearly every step of every join. The caller zeroes the bytes
    /// (they hold the secret).
    func storedJSON() -> [UInt8] {
        var parts = StoredParts()
        return storedJSON(reusing: &parts)
    }

    /// The public parts of an open invite's JSON as last encoded, each with the value it
    /// encodes, kept between its writes so that a write encodes only what changed (a join
    /// changes the attendant's state and counts; the record stays, the heard sides grow by one a
    /// join). Reused only while equal, so a failed write leaves nothing stale. No secret.
    struct StoredParts {
        var record: SignedInvite?
        var recordJSON: [UInt8] = []
        var seenSides: [Rendezvous.Side]?
        var seenSidesJSON: [UInt8]?
    }

    /// ``storedJSON()``, with the record and the heard sides taken from `parts` when they did
    /// not change (and `parts` brought up to date when they did).
    func storedJSON(reusing parts: inout StoredParts) -> [UInt8] {
        if let record, record != parts.record {
            var out = StateJSONWriter(capacity: 512)
            out.object { out in
                out.integer("v", record.v)
                out.string("space", record.space.base64URL)
                out.string("inviter", record.inviter.base64URL)
                out.string("inviter_key", record.inviterKey)
                out.string("nameplate", record.nameplate)
                out.integer("created_at", record.createdAt)
                out.integer("expires_at", record.expiresAt)
                out.integer("uses", record.uses)
                out.string("signature", record.signature)
            }
            parts.record = record
            parts.recordJSON = out.bytes
        }
        if attendant.seenSides != parts.seenSides {
            parts.seenSides = attendant.seenSides
            parts.seenSidesJSON = attendant.seenSidesJSON()
        }
        var out = StateJSONWriter(capacity: 1024 + parts.recordJSON.count + (parts.seenSidesJSON?.count ?? 0))
        out.object { out in
            out.string("id", id)
            out.string("noteID", noteID)
            out.string("inviter", inviter.base64URL)
            if let inviterName { out.string("inviterName", inviterName) }
            out.object("secret") { out in
                out.string("words", secret.words)
                out.string("seed", secret.seed)
            }
            out.string("relay", relay)
            out.bool("ask", ask)
            out.integer("createdAt", createdAt)
            if record != nil { out.raw("record", parts.recordJSON) }
            if let approval { out.bool("approval", approval) }
            if let approvalUse { out.integer("approvalUse", approvalUse) }
            out.bool("cancelRequested", cancelRequested)
            if !reportedSides.isEmpty {
                out.array("reportedSides") { out in
                    for side in reportedSides {
                        out.element()
                        out.wrapped(side.value)
                    }
                }
            }
            out.key("attendant")
            attendant.writeJSON(into: &out, seenSides: parts.seenSidesJSON)
        }
        return out.bytes
    }
}

/// One line of the bot's history (`eleven-bot status`): joins, refusals, burned codes. Never a
/// secret: invites are named by nameplate only.
public struct BotLogEntry: Codable, Sendable, Equatable {
    public let at: Int64
    public let kind: String
    public let nameplate: String?
    public let detail: String
}

/// The bot's state: one SQLite file (`bot.sqlite` in the state directory). Private keys, the
/// space's device token and invite secrets are sealed under ``BotSealingKey``; nothing secret is
/// stored in clear. Thread-safe (one connection under a lock).
public final class BotStore: @unchecked Sendable {
    public static let fileName = "bot.sqlite"
    static let schemaVersion = 1
    /// The bot's kind of file (its tables are created on every open, not by migrations).
    static let schema = DatabaseSchema(owner: .bot, tables: ["meta", "invites", "log"], migrations: [])

    public let path: String
    private let key: BotSealingKey
    /// The one connection, and the open invites as last written: reading or changing one needs
    /// no query, unsealing and decoding, only the write. Ended invites are not kept.
    private let state: Locked<(db: SQLiteDatabase, openCache: [String: BotInvite])>
    /// The open invites' public JSON parts as last encoded (``BotInvite/StoredParts``): only
    /// read and changed under `state`'s lock.
    private var parts: [String: BotInvite.StoredParts] = [:]

    /// Opens the state in `directory`. `create` makes the directory and file when missing;
    /// otherwise a missing state is an error. A state sealed under another key is refused.
    public init(directory: String, key: BotSealingKey, create: Bool = false) throws(BotError) {
        path = (directory as NSString).appendingPathComponent(Self.fileName)
        self.key = key
        if !FileManager.default.fileExists(atPath: path) {
            guard create else {
                throw BotError(
                    .state, code: .stateMissing,
                    "There is no bot state in \(directory); run `eleven-bot init --state \(directory)` first."
                )
            }
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                throw BotError(
                    .state, code: .stateUnwritable, "Cannot create the state directory \(directory).")
            }
        }
        let database: SQLiteDatabase
        do {
            database = try Self.open(path)
            try database.execute(
                """
                CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
                CREATE TABLE IF NOT EXISTS invites (
                    id TEXT PRIMARY KEY, state TEXT NOT NULL, expires_at INTEGER NOT NULL, body BLOB NOT NULL);
                CREATE TABLE IF NOT EXISTS log (
                    id INTEGER PRIMARY KEY, at INTEGER NOT NULL, kind TEXT NOT NULL,
                    nameplate TEXT, detail TEXT NOT NULL);
                """)
            chmod(path, 0o600)
        } catch {
            throw Self.corrupt(path, error)
        }
        state = Locked((database, [:]))
        let check = try meta("key_check")
        if let check {
            guard key.open(check, purpose: "key-check") == Array("eleven-bot".utf8) else {
                throw BotError(
                    .key, code: .keyWrong,
                    "The key does not open the bot's state in \(directory) (a different key file?).")
            }
        } else {
            try setMeta("key_check", key.seal(Array("eleven-bot".utf8), purpose: "key-check"))
            try setMeta("schema_version", Array(String(Self.schemaVersion).utf8))
        }
    }

    /// Opens the file, refusing another program's before writing to it.
    private static func open(_ path: String) throws -> SQLiteDatabase {
        do throws(DatabaseOpenError) {
            return try SQLiteDatabase.open(path: path, schema: schema, sync: .normal)
        } catch {
            switch error {
            case .sqlite(let error), .migration(_, let error): throw error
            case .foreign(let foreign):
                throw BotError(.state, reporting: ForeignDatabase.code, foreign.message)
            case .schemaTooNew: throw error
            }
        }
    }

    private static func corrupt(_ path: String, _ error: Error) -> BotError {
        if let refusal = error as? BotError { return refusal }
        // A full disk or a read-only file is not damage: never advise moving the state away.
        if let failure = error as? SQLiteError, failure.isStorageFailure {
            return BotError(
                .state, code: .stateUnwritable,
                "The bot cannot write its state in \(path) (\(failure)): is the disk full or the file "
                    + "read-only? Nothing is lost; the bot retries and carries on once it can write.")
        }
        return BotError(
            .state, code: .stateCorrupt,
            "\(path) is damaged or not an eleven-bot state file (\(error)). Move it away and provision the "
                + "bot again.")
    }

    @discardableResult
    private func run<T>(_ body: (SQLiteDatabase) throws -> T) throws(BotError) -> T {
        try runCaching { db, _ in try body(db) }
    }

    /// ``run(_:)`` with the open invites' cache.
    private func runCaching<T>(_ body: (SQLiteDatabase, inout [String: BotInvite]) throws -> T)
        throws(BotError) -> T
    {
        do {
            return try state.withLock { try body($0.db, &$0.openCache) }
        } catch {
            throw Self.corrupt(path, error)
        }
    }

    private func meta(_ name: String) throws(BotError) -> [UInt8]? {
        try run { try $0.query("SELECT value FROM meta WHERE name = ?", [.text(name)]).first?[0].blob }
    }

    private func setMeta(_ name: String, _ value: [UInt8]) throws(BotError) {
        try run {
            try $0.query(
                "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", [.text(name), .blob(value)])
        }
    }

    private func sealedJSON<T: Decodable>(_ type: T.Type, _ sealed: [UInt8], purpose: String) throws(BotError)
        -> T
    {
        guard var plain = key.open(sealed, purpose: purpose) else {
            throw BotError(
                .state, code: .stateCorrupt, "A sealed record in \(path) does not open (damaged).")
        }
        defer { plain.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
        guard let value = try? JSONDecoder().decode(T.self, from: Data(plain)) else {
            throw BotError(.state, code: .stateCorrupt, "A sealed record in \(path) is damaged.")
        }
        return value
    }

    private func seal(_ value: some Encodable, purpose: String) -> [UInt8] {
        var plain = (try? JSONEncoder().encode(value)).map { Array($0) } ?? []
        defer { plain.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
        return key.seal(plain, purpose: purpose)
    }

    /// An invite is sealed at nearly every step of every join: written by hand
    /// (``BotInvite/storedJSON()``), in the form its `Codable` reads. Under `state`'s lock only
    /// (``parts``).
    private func seal(_ invite: BotInvite) -> [UInt8] {
        var plain = invite.storedJSON(reusing: &parts[invite.id, default: BotInvite.StoredParts()])
        defer { plain.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
        return key.seal(plain, purpose: "invite")
    }

    // MARK: Identity and space

    /// The bot's device identity, made on first use.
    public func identity(create: Bool = false) throws(BotError) -> DeviceIdentity {
        if let sealed = try meta("identity") {
            guard let plain = key.open(sealed, purpose: "identity"),
                let identity = try? DeviceIdentity(storedForm: SecretBytes(plain))
            else {
                throw BotError(.state, code: .stateCorrupt, "The bot's identity in \(path) is damaged.")
            }
            return identity
        }
        guard create else {
            throw BotError(
                .state, code: .stateMissing, "The bot has no identity yet; run `eleven-bot init`.")
        }
        let identity = DeviceIdentity.generate()
        try setMeta("identity", key.seal(identity.storedForm().unredactedBytes(), purpose: "identity"))
        return identity
    }

    /// The space the bot belongs to (nil before `eleven-bot join`).
    public func space() throws(BotError) -> SavedSpace? {
        guard let sealed = try meta("space") else { return nil }
        return try sealedJSON(SavedSpace.self, sealed, purpose: "space")
    }

    public func saveSpace(_ space: SavedSpace) throws(BotError) {
        try setMeta("space", seal(space, purpose: "space"))
    }

    /// The inbox position after the last note handled.
    public func inboxNext() throws(BotError) -> Int64 {
        try meta("inbox_next").flatMap { Int64(String(decoding: $0, as: UTF8.self)) } ?? 0
    }

    public func setInboxNext(_ next: Int64) throws(BotError) {
        try setMeta("inbox_next", Array(String(next).utf8))
    }

    // MARK: Invites

    public func invite(_ id: String) throws(BotError) -> BotInvite? {
        let (cached, row) = try runCaching { db, openCache -> (BotInvite?, [SQLValue]?) in
            if let cached = openCache[id] { return (cached, nil) }
            return (nil, try db.query("SELECT body FROM invites WHERE id = ?", [.text(id)]).first)
        }
        if let cached { return cached }
        guard let row else { return nil }
        return try sealedJSON(BotInvite.self, row[0].blob ?? [], purpose: "invite")
    }

    /// Keeps `invite` as written in `openCache` (under the lock).
    private func remember(_ invite: BotInvite, in openCache: inout [String: BotInvite]) {
        if invite.state.isOpen {
            openCache[invite.id] = invite
        } else {
            openCache[invite.id] = nil
            parts[invite.id] = nil
        }
    }

    /// Every invite still being attended.
    public func openInvites() throws(BotError) -> [BotInvite] {
        try invites(where: "state IN ('allocating', 'awaiting_record', 'open')")
    }

    /// Every invite, open or ended, that had not expired by `time`.
    public func invites(expiringAfter time: Int64) throws(BotError) -> [BotInvite] {
        try invites(where: "expires_at >= ?", [.integer(time)])
    }

    private func invites(where condition: String, _ arguments: [SQLValue] = []) throws(BotError)
        -> [BotInvite]
    {
        let rows = try run {
            try $0.query("SELECT body FROM invites WHERE \(condition) ORDER BY id", arguments)
        }
        var invites: [BotInvite] = []
        for row in rows {
            invites.append(try sealedJSON(BotInvite.self, row[0].blob ?? [], purpose: "invite"))
        }
        return invites
    }

    /// Saves an invite; with `onlyIfNew` returns false (and changes nothing) when it exists.
    @discardableResult
    public func save(_ invite: BotInvite, onlyIfNew: Bool = false) throws(BotError) -> Bool {
        try runCaching { db, openCache in
            let body = seal(invite)
            try db.query(
                onlyIfNew
                    ? "INSERT OR IGNORE INTO invites (id, state, expires_at, body) VALUES (?, ?, ?, ?)"
                    : "INSERT OR REPLACE INTO invites (id, state, expires_at, body) VALUES (?, ?, ?, ?)",
                [.text(invite.id), .text(invite.state.rawValue), .integer(invite.expiresAt), .blob(body)])
            guard db.changes > 0 else { return false }
            remember(invite, in: &openCache)
            return true
        }
    }

    /// Changes a saved invite in place (under the store's lock, so concurrent updates from the
    /// inbox and the invite's worker do not lose each other). Returns the result.
    @discardableResult
    public func update(_ id: String, _ change: (inout BotInvite) -> Void) throws(BotError) -> BotInvite? {
        try runCaching { db, openCache -> BotInvite? in
            var invite: BotInvite
            if let cached = openCache[id] {
                invite = cached
            } else {
                guard let row = try db.query("SELECT body FROM invites WHERE id = ?", [.text(id)]).first,
                    var plain = key.open(row[0].blob ?? [], purpose: "invite")
                else { return nil }
                defer { plain.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
                invite = try JSONDecoder().decode(BotInvite.self, from: Data(plain))
            }
            change(&invite)
            try db.query(
                "UPDATE invites SET state = ?, body = ? WHERE id = ?",
                [.text(invite.state.rawValue), .blob(seal(invite)), .text(id)])
            // Only once written: a failed write (a full disk) leaves the cache as the file is.
            remember(invite, in: &openCache)
            return invite
        }
    }

    /// How many invites are in each state.
    public func inviteCounts() throws(BotError) -> [String: Int] {
        let rows = try run { try $0.query("SELECT state, COUNT(*) FROM invites GROUP BY state") }
        return Dictionary(uniqueKeysWithValues: rows.map { ($0[0].text ?? "", Int($0[1].integer ?? 0)) })
    }

    // MARK: History

    // A line's id is its rowid: lines are never deleted, so each new one takes the highest id
    // plus one, the order `AUTOINCREMENT` gave without writing `sqlite_sequence`'s page at every
    // line (a file made before keeps its `AUTOINCREMENT` table; both read the same).
    public func log(_ kind: String, nameplate: String?, _ detail: String, at: Int64) throws(BotError) {
        try run {
            try $0.query(
                "INSERT INTO log (at, kind, nameplate, detail) VALUES (?, ?, ?, ?)",
                [.integer(at), .text(kind), nameplate.map { .text($0) } ?? .null, .text(detail)])
        }
    }

    /// The latest `limit` history lines, newest last.
    public func recentLog(limit: Int = 20) throws(BotError) -> [BotLogEntry] {
        let rows = try run {
            try $0.query(
                "SELECT at, kind, nameplate, detail FROM log ORDER BY id DESC LIMIT ?",
                [.integer(Int64(limit))])
        }
        return rows.reversed().map {
            BotLogEntry(
                at: $0[0].integer ?? 0, kind: $0[1].text ?? "", nameplate: $0[2].text,
                detail: $0[3].text ?? "")
        }
    }

    /// How many history lines of each kind (counters for `status`).
    public func logCounts() throws(BotError) -> [String: Int] {
        let rows = try run { try $0.query("SELECT kind, COUNT(*) FROM log GROUP BY kind") }
        return Dictionary(uniqueKeysWithValues: rows.map { ($0[0].text ?? "", Int($0[1].integer ?? 0)) })
    }
}
