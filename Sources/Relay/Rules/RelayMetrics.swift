import Mailbox

/// Counters the core keeps for `/metrics`. Only counts: no codes, no bodies, no addresses.
public struct RelayMetrics: Sendable, Equatable {
    public var connectionsOpened = 0
    /// Connections turned away at open (rate limit or total limit); also in ``errors``.
    public var connectionsRejected = 0
    public var framesReceived = 0
    public var nameplatesAllocated = 0
    public var nameplatesClaimed = 0
    public var mailboxesOpened = 0
    public var messagesAdded = 0
    public var messageBodyBytesAdded = 0
    /// Every `error` reply (and refused connection), by reason.
    public var errors: [RelayError.Code: Int] = [:]
    /// Moods reported in `close`: `happy`, `lonely`, `scary`, `errory`, `unwelcome`, `other`,
    /// `none` (no mood given).
    public var closeMoods: [String: Int] = [:]
    /// How retired mailboxes ended, as the reference's usage records: `happy`, `lonely`,
    /// `quiet`, `scary`, `errory`, `pruney`, `crowded`.
    public var mailboxResults: [String: Int] = [:]
    /// How retired nameplates ended: `happy`, `lonely`, `pruney`, `crowded`.
    public var nameplateResults: [String: Int] = [:]

    public init() {}

    static let knownMoods: Set<String> = ["happy", "lonely", "scary", "errory", "unwelcome"]

    mutating func countMood(_ mood: String?) {
        let label = mood.map { Self.knownMoods.contains($0) ? $0 : "other" } ?? "none"
        closeMoods[label, default: 0] += 1
    }
}

/// Current sizes, read from the core's state.
public struct RelayGauges: Sendable, Equatable {
    public var connections: Int
    public var subscribedConnections: Int
    public var nameplates: Int
    public var mailboxes: Int
    public var messages: Int
    /// Short nameplates deleted too recently to be allocated again.
    public var restingNameplates: Int = 0
}
