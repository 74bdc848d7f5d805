/// A program's kind of database: who owns it, the tables it may hold, and its numbered
/// migrations (`PRAGMA user_version` counts how many have run). Append migrations; never edit
/// one that has shipped.
public struct DatabaseSchema: Sendable {
    public let owner: ApplicationID
    /// Every table the program creates (SQLite's own `sqlite_*` tables aside): a file without an
    /// application id is the program's own, written before ids, only if it holds no other table.
    public let tables: Set<String>
    public let migrations: [String]
    /// Run every missing migration in one transaction (else one transaction each).
    public let migratesInOneTransaction: Bool
    /// Pragmas set on every open, after the sync policy and before the migrations.
    public let pragmas: [String]
    /// The page size of a file this creates (nil: SQLite's default). A file that exists keeps
    /// its own: in WAL mode the size is fixed once the file has its first page.
    public let newFilePageSize: Int?

    public init(
        owner: ApplicationID, tables: Set<String>, migrations: [String],
        migratesInOneTransaction: Bool = false,
        pragmas: [String] = [], newFilePageSize: Int? = nil
    ) {
        self.owner = owner
        self.tables = tables
        self.migrations = migrations
        self.migratesInOneTransaction = migratesInOneTransaction
        self.pragmas = pragmas
        self.newFilePageSize = newFilePageSize
    }

    public var currentVersion: Int { migrations.count }
}

/// A database file that belongs to another program, or to none of ours. Refused before anything
/// is written to it.
public struct ForeignDatabase: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable machine-readable code every program reports.
    public static let code = "foreign_database"

    public let path: String
    /// The program that tried to open it.
    public let expected: ApplicationID
    /// The application id found in the file (0: none).
    public let foundID: Int32
    /// The tables the expected program does not know (for a file without an id).
    public let unknownTables: [String]

    /// The known program the file belongs to, if its id says so.
    public var owner: ApplicationID? { ApplicationID.known(foundID) }

    public var message: String {
        let whose: String
        if let owner {
            whose = "belongs to \(owner.program) (it is \(owner.fileKind))"
        } else if foundID != 0 {
            whose = "belongs to another program (application id \(foundID))"
        } else {
            let shown = unknownTables.prefix(5).joined(separator: ", ")
            whose =
                "holds tables \(expected.program) does not know (\(shown)\(unknownTables.count > 5 ? ", …" : ""))"
        }
        return "\(path) is not \(expected.fileKind): it \(whose). Nothing in it was changed. "
            + "Give \(expected.program) its own file."
    }

    public var description: String { message }
}

/// Why a program's database could not be opened.
public enum DatabaseOpenError: Error, Sendable, CustomStringConvertible {
    /// SQLite failed (cannot open the file, disk full, damaged file, …).
    case sqlite(SQLiteError)
    /// The file belongs to another program or to none of ours; nothing was written.
    case foreign(ForeignDatabase)
    /// The file was written by a newer version of the program; nothing was written.
    case schemaTooNew(found: Int, known: Int)
    /// Migration `version` (counting from 1) failed and was rolled back.
    case migration(version: Int, SQLiteError)

    public var description: String {
        switch self {
        case .sqlite(let error): "\(error)"
        case .foreign(let foreign): foreign.message
        case .schemaTooNew(let found, let known):
            "schema version \(found) is newer than this program's (\(known))"
        case .migration(let version, let error): "migrating to version \(version): \(error.detail)"
        }
    }
}

extension SQLiteDatabase {
    /// Opens `path` as `schema`'s database: refuses, before writing anything, a file that
    /// belongs to another program (another application id, or no id and tables `schema` does not
    /// know) or is newer than `schema`; then sets WAL and `sync`, `schema.pragmas`, runs the
    /// missing migrations and marks the file with `schema.owner` (files from before application
    /// ids get theirs now).
    public static func open(path: String, schema: DatabaseSchema, sync: SyncPolicy) throws(DatabaseOpenError)
        -> SQLiteDatabase
    {
        let db: SQLiteDatabase
        do throws(SQLiteError) {
            db = try SQLiteDatabase(path: path)
        } catch {
            throw .sqlite(error)
        }
        try db.prepare(schema, path: path, sync: sync)
        return db
    }

    private func prepare(_ schema: DatabaseSchema, path: String, sync: SyncPolicy) throws(DatabaseOpenError) {
        let found: Int32
        let tables: [String]
        let version: Int
        do throws(SQLiteError) {
            found = Int32(truncatingIfNeeded: try integer("PRAGMA application_id"))
            tables = found == 0 ? try tableNames() : []
            version = Int(try integer("PRAGMA user_version"))
        } catch {
            throw .sqlite(error)
        }
        let unknown = tables.filter { !schema.tables.contains($0) }
        guard found == 0 || found == schema.owner.rawValue, unknown.isEmpty else {
            throw .foreign(
                ForeignDatabase(path: path, expected: schema.owner, foundID: found, unknownTables: unknown))
        }
        let marked = found == schema.owner.rawValue
        guard version <= schema.currentVersion else {
            throw .schemaTooNew(found: version, known: schema.currentVersion)
        }
        do throws(SQLiteError) {
            // Before WAL mode writes the first page (a no-op on a file that has one).
            if let size = schema.newFilePageSize, found == 0, tables.isEmpty, version == 0 {
                try execute("PRAGMA page_size=\(size)")
            }
            try apply(sync)
            for pragma in schema.pragmas { try execute(pragma) }
        } catch {
            throw .sqlite(error)
        }
        try migrate(schema, from: version, marked: marked)
    }

    /// The names of the file's tables, SQLite's own aside.
    public func tableNames() throws(SQLiteError) -> [String] {
        let statement = try statement(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
                + "ORDER BY name")
        var names: [String] = []
        while try statement.step() { names.append(statement.text(0)) }
        return names
    }

    private func migrate(_ schema: DatabaseSchema, from version: Int, marked: Bool) throws(DatabaseOpenError)
    {
        let mark = "PRAGMA application_id=\(schema.owner.rawValue)"
        if version == schema.currentVersion {
            guard !marked else { return }
            do throws(SQLiteError) {
                try writeTransaction { () throws(SQLiteError) in try execute(mark) }
            } catch {
                throw .sqlite(error)
            }
            return
        }
        if schema.migratesInOneTransaction {
            var step = version
            do throws(SQLiteError) {
                try writeTransaction { () throws(SQLiteError) in
                    try execute(mark)
                    for next in version..<schema.currentVersion {
                        step = next
                        try execute(schema.migrations[next])
                    }
                    try execute("PRAGMA user_version=\(schema.currentVersion)")
                }
            } catch {
                throw .migration(version: step + 1, error)
            }
            return
        }
        for next in version..<schema.currentVersion {
            do throws(SQLiteError) {
                try writeTransaction { () throws(SQLiteError) in
                    if next == version { try execute(mark) }
                    try execute(schema.migrations[next])
                    try execute("PRAGMA user_version=\(next + 1)")
                }
            } catch {
                throw .migration(version: next + 1, error)
            }
        }
    }
}
