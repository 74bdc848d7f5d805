import Foundation
import JoinProtocol
import PAKE
import SpaceModel

/// A join in progress, saved at every step so `eleven join --resume` can finish it after the
/// process was killed: the code's words and the seed of the joiner's key agreement (secrets,
/// stored sealed), who is asking, the relay connection's state and the peer messages received.
public struct PendingJoin: Codable, Sendable, CustomStringConvertible {
    public struct Received: Codable, Sendable, Equatable {
        public let phase: Rendezvous.Phase
        public let body: [UInt8]

        public init(phase: Rendezvous.Phase, body: [UInt8]) {
            self.phase = phase
            self.body = body
        }
    }

    public let id: String
    public let relay: String
    public let nameplate: Rendezvous.Nameplate
    public let intent: JoinIntent
    /// The code's words, canonical (secret).
    public let words: String
    /// 32 bytes, base64url (secret): the joiner's SPAKE2 randomness, so a resumed join computes
    /// the same key-agreement message as the one already in the mailbox.
    let seed: String
    public let request: JoinRequest
    public var machine: RendezvousMachine
    /// The attendant's messages seen so far, in order (fed again to a resumed session).
    public var received: [Received] = []
    /// Phases we sent (not sent again by a resumed session; the machine resends what the relay
    /// did not store).
    public var sent: [Rendezvous.Phase] = []
    public let createdAt: Int64
    /// Unix time after which the join is given up.
    public let deadline: Int64

    public init(
        relay: String, nameplate: Rendezvous.Nameplate, intent: JoinIntent = .join, words: String,
        request: JoinRequest, createdAt: Int64, deadline: Int64,
        using random: inout some RandomByteSource
    ) {
        var generator = SystemRandomNumberGenerator()
        id = Base64URL.encode(random.bytes(count: 9))
        self.relay = relay
        self.nameplate = nameplate
        self.intent = intent
        self.words = words
        seed = Base64URL.encode(random.bytes(count: 32))
        self.request = request
        machine = RendezvousMachine(
            appID: intent.appID, side: .random(using: &generator), start: .claim(nameplate))
        self.createdAt = createdAt
        self.deadline = deadline
    }

    var seedBytes: SecretBytes { SecretBytes(Base64URL.decode(seed) ?? []) }
    public var description: String { "PendingJoin(\(id), nameplate \(nameplate), redacted)" }
}

/// Pending joins in the state directory, encrypted at rest (`joins.sealed`, key `joins.key`).
public struct PendingJoinStore: Sendable {
    public let directory: StateDirectory

    public init(directory: StateDirectory) {
        self.directory = directory
    }

    private var file: SealedStateFile<[PendingJoin]> {
        SealedStateFile(
            directory: directory, keyFile: "joins.key", sealedFile: "joins.sealed",
            additionalData: Array("eleven/pending-joins/v1".utf8), what: "pending joins",
            // Rewritten at every step of a join: atomic, but not worth an fsync on the join's
            // critical path (a power loss only loses an interrupted join).
            durable: false)
    }

    public func load() throws(LocalStateError) -> [PendingJoin] {
        try file.load() ?? []
    }

    /// Saves `join` in place of its earlier state.
    public func put(_ join: PendingJoin) throws(LocalStateError) {
        try directory.locked { () throws(LocalStateError) in
            var all = try load()
            all.removeAll { $0.id == join.id }
            try file.save(all + [join])
        }
    }

    /// Forgets the join with `id`.
    public func remove(_ id: String) throws(LocalStateError) {
        try directory.locked { () throws(LocalStateError) in
            let all = try load().filter { $0.id != id }
            try file.save(all.isEmpty ? nil : all)
        }
    }
}

/// A join attempt whose confirmation went out and never checked out (``JoinAttemptReport``),
/// kept until an attendant has heard of it: recorded before the confirmation is sent, removed
/// when the attendant's confirmation verifies, and otherwise finished with how the join ended.
public struct FailedJoinAttempt: Codable, Sendable, Equatable {
    /// The join's id (``PendingJoin/id``).
    public let id: String
    public let relay: String
    public let nameplate: Rendezvous.Nameplate
    public let side: Rendezvous.Side
    public let at: Int64
    /// How the join ended; nil while it may still be resumed.
    public var outcome: String?

    public init(_ join: PendingJoin, at: Int64) {
        id = join.id
        relay = join.relay
        nameplate = join.nameplate
        side = join.machine.side
        self.at = at
        outcome = nil
    }

    /// What the next attendant is told (finished attempts only).
    public var report: JoinAttemptReport? {
        outcome.map { JoinAttemptReport(relay: relay, nameplate: nameplate, side: side, at: at, outcome: $0) }
    }
}

/// The failed attempts this device has not told an attendant about yet (`failed-joins.sealed`,
/// durable: a record must exist before the confirmation it stands for goes out).
public struct FailedJoinAttemptStore: Sendable {
    public let directory: StateDirectory
    /// Kept at most; the oldest go first.
    static let capacity = 32

    public init(directory: StateDirectory) {
        self.directory = directory
    }

    private var file: SealedStateFile<[FailedJoinAttempt]> {
        SealedStateFile(
            directory: directory, keyFile: "joins.key", sealedFile: "failed-joins.sealed",
            additionalData: Array("eleven/failed-joins/v1".utf8), what: "failed join attempts")
    }

    public func load() throws(LocalStateError) -> [FailedJoinAttempt] {
        try file.load() ?? []
    }

    /// Changes the list under the state lock.
    public func update(_ change: (inout [FailedJoinAttempt]) -> Void) throws(LocalStateError) {
        try directory.locked { () throws(LocalStateError) in
            var all = try load()
            change(&all)
            try file.save(all.isEmpty ? nil : Array(all.suffix(Self.capacity)))
        }
    }

    /// The reports to send with the next join (finished attempts, newest last).
    public func reports() throws(LocalStateError) -> [JoinAttemptReport] {
        Array(try load().compactMap(\.report).suffix(JoinAttemptReport.maxPerRequest))
    }
}
