import Mailbox

/// The durable state of the relay, the same shape in memory and on disk: nameplates pointing at
/// mailboxes, the sides attached to each, and each mailbox's queued messages. What is here is
/// all a relay stores about anyone: no addresses, no client versions, no connection history.
public struct RelaySnapshot: Sendable, Equatable {
    public var nameplates: [NameplateKey: NameplateRecord]
    public var mailboxes: [MailboxKey: MailboxRecord]

    public init(
        nameplates: [NameplateKey: NameplateRecord] = [:], mailboxes: [MailboxKey: MailboxRecord] = [:]
    ) {
        self.nameplates = nameplates
        self.mailboxes = mailboxes
    }

    public static let empty = RelaySnapshot()

    /// Applies one write, exactly as a storage back-end must.
    public mutating func apply(_ op: StorageOp) {
        switch op {
        case .putNameplate(let key, let mailbox):
            if nameplates[key] == nil {
                nameplates[key] = NameplateRecord(mailbox: mailbox, sides: [:])
            } else {
                nameplates[key]?.mailbox = mailbox
            }
        case .putNameplateSide(let key, let side, let record):
            nameplates[key]?.sides[side] = record
        case .deleteNameplate(let key):
            nameplates[key] = nil
        case .putMailbox(let key, let forNameplate, let updated):
            if mailboxes[key] == nil {
                mailboxes[key] = MailboxRecord(forNameplate: forNameplate, updated: updated)
            } else {
                mailboxes[key]?.forNameplate = forNameplate
                mailboxes[key]?.updated = updated
            }
        case .touchMailbox(let key, let updated):
            mailboxes[key]?.updated = updated
        case .putMailboxSide(let key, let side, let record):
            mailboxes[key]?.sides[side] = record
        case .appendMessage(let key, let message):
            mailboxes[key]?.messages.append(message)
        case .deleteMailbox(let key):
            mailboxes[key] = nil
        }
    }

    public mutating func apply(_ ops: [StorageOp]) {
        for op in ops { apply(op) }
    }
}

/// One durable state change. The core emits these; a ``RelayStorage`` commits them in order.
public enum StorageOp: Sendable, Equatable {
    /// Creates the nameplate (with no sides) or repoints it.
    case putNameplate(NameplateKey, mailbox: MailboxID)
    /// Inserts or replaces one side's row of a nameplate.
    case putNameplateSide(NameplateKey, Side, NameplateSideRecord)
    /// Deletes the nameplate and its side rows.
    case deleteNameplate(NameplateKey)
    /// Creates the mailbox (no sides, no messages) or updates its fields.
    case putMailbox(MailboxKey, forNameplate: Bool, updated: RelayInstant)
    /// Sets the last-activity time that expiry looks at.
    case touchMailbox(MailboxKey, updated: RelayInstant)
    /// Inserts or replaces one side's row of a mailbox.
    case putMailboxSide(MailboxKey, Side, MailboxSideRecord)
    /// Appends a message to the mailbox's queue.
    case appendMessage(MailboxKey, StoredMessage)
    /// Deletes the mailbox with its sides and messages.
    case deleteMailbox(MailboxKey)
}

public struct NameplateKey: Hashable, Sendable {
    public let app: AppID
    public let name: Nameplate
    public init(app: AppID, name: Nameplate) {
        self.app = app
        self.name = name
    }
}

public struct MailboxKey: Hashable, Sendable {
    public let app: AppID
    public let id: MailboxID
    public init(app: AppID, id: MailboxID) {
        self.app = app
        self.id = id
    }
}

public struct NameplateRecord: Sendable, Equatable {
    public var mailbox: MailboxID
    public var sides: [Side: NameplateSideRecord]
    public init(mailbox: MailboxID, sides: [Side: NameplateSideRecord] = [:]) {
        self.mailbox = mailbox
        self.sides = sides
    }
}

public struct NameplateSideRecord: Sendable, Equatable {
    /// False once the side has released the nameplate (it may not claim it again).
    public var claimed: Bool
    public var added: RelayInstant
    public init(claimed: Bool, added: RelayInstant) {
        self.claimed = claimed
        self.added = added
    }
}

public struct MailboxRecord: Sendable, Equatable {
    /// Whether a claim created it (rather than a standalone `open`).
    public var forNameplate: Bool
    /// Last activity; drives expiry.
    public var updated: RelayInstant
    public var sides: [Side: MailboxSideRecord]
    /// In arrival order.
    public var messages: [StoredMessage]

    public init(
        forNameplate: Bool, updated: RelayInstant, sides: [Side: MailboxSideRecord] = [:],
        messages: [StoredMessage] = []
    ) {
        self.forNameplate = forNameplate
        self.updated = updated
        self.sides = sides
        self.messages = messages
    }
}

public struct MailboxSideRecord: Sendable, Equatable {
    /// False once the side has closed (re-opening does not set it again, as in the reference).
    public var opened: Bool
    public var added: RelayInstant
    /// The mood the side reported when it closed.
    public var mood: String?
    public init(opened: Bool, added: RelayInstant, mood: String? = nil) {
        self.opened = opened
        self.added = added
        self.mood = mood
    }
}
