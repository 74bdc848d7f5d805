/// Which program a database file belongs to, written in the file's header with
/// `PRAGMA application_id`. Each kind of file has its own; they are listed here, in one place,
/// so they stay distinct and a program can name the owner of a file that is not its own.
public struct ApplicationID: Sendable, Equatable {
    /// The 32-bit value in the header (`PRAGMA application_id`).
    public let rawValue: Int32
    /// The program whose file it is, as people run it (`eleven-relay`).
    public let program: String
    /// What the file is, for messages ("a relay's database").
    public let fileKind: String

    /// The relay's mailbox database (`eleven-relay --db`). "ElR1".
    public static let relay = ApplicationID(0x456C_5231, "eleven-relay", "a relay's database")
    /// The space and home server's database (`eleven-server --db`, with or without `--home`).
    /// "ElS1".
    public static let spaceServer = ApplicationID(0x456C_5331, "eleven-server", "a space server's database")
    /// The sidecar bot's state (`bot.sqlite`). "ElB1".
    public static let bot = ApplicationID(0x456C_4231, "eleven-bot", "a bot's state file")

    public static let known: [ApplicationID] = [.relay, .spaceServer, .bot]

    private init(_ rawValue: Int32, _ program: String, _ fileKind: String) {
        self.rawValue = rawValue
        self.program = program
        self.fileKind = fileKind
    }

    /// The known program with this value, if any.
    public static func known(_ rawValue: Int32) -> ApplicationID? {
        known.first { $0.rawValue == rawValue }
    }
}
