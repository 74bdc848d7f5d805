import Foundation
import JoinProtocol
import PAKE
import SpaceModel

/// The secret half of a pending invite: the code's words and the seed of the attendant's key
/// agreement. Never printed.
public struct InviteSecret: Codable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public let words: String
    /// 32 bytes, base64url in the (encrypted) file.
    public let seed: String

    public init(words: String, seed: SecretBytes) {
        self.words = words
        self.seed = Base64URL.encode(seed.unredactedBytes())
    }

    public var seedBytes: SecretBytes { SecretBytes(Base64URL.decode(seed) ?? []) }
    public var description: String { "InviteSecret(redacted)" }
    public var debugDescription: String { description }
}

/// An invite left for `eleven approve` (`eleven invite --short --detach`): its secret and its
/// ``InviteAttendant`` (the nameplate, the current use's relay connection, the counts), enough to
/// resume attending it after a restart.
public struct PendingInvite: Codable, Sendable {
    public let id: String
    public let space: SpaceID
    public let spaceName: String
    public let relay: String
    public let secret: InviteSecret
    public let createdAt: Int64
    public var attendant: InviteAttendant

    public init(
        id: String, space: SpaceID, spaceName: String, relay: String, secret: InviteSecret, createdAt: Int64,
        attendant: InviteAttendant
    ) {
        self.id = id
        self.space = space
        self.spaceName = spaceName
        self.relay = relay
        self.secret = secret
        self.createdAt = createdAt
        self.attendant = attendant
    }

    public var expiresAt: Int64 { attendant.policy.expiresAt }

    /// The code as people type it (secret); nil before a nameplate was allocated.
    public var code: String? { attendant.nameplate.map { "\(secret.words)-\($0.value)" } }

    private enum CodingKeys: String, CodingKey {
        case id, space, spaceName, relay, secret, createdAt, attendant
        // Files written before the attendant machine: its pieces one by one.
        case nameplate, machine, use, usesLeft, expiresAt, policy
    }

    /// The counts of a file written before the attendant machine (`InvitePolicy`).
    private struct LegacyPolicy: Decodable {
        let uses: Int
        let maxFailures: Int
        let taken: Int?
        let failures: Int?
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        space = try c.decode(SpaceID.self, forKey: .space)
        spaceName = try c.decode(String.self, forKey: .spaceName)
        relay = try c.decode(String.self, forKey: .relay)
        secret = try c.decode(InviteSecret.self, forKey: .secret)
        createdAt = try c.decode(Int64.self, forKey: .createdAt)
        if let attendant = try c.decodeIfPresent(InviteAttendant.self, forKey: .attendant) {
            self.attendant = attendant
            return
        }
        let expiresAt = try c.decode(Int64.self, forKey: .expiresAt)
        let usesLeft = try c.decode(Int.self, forKey: .usesLeft)
        let legacy = try c.decodeIfPresent(LegacyPolicy.self, forKey: .policy)
        attendant = InviteAttendant(
            policy: .init(
                uses: legacy?.uses ?? usesLeft + 1, maxFailures: legacy?.maxFailures ?? 1,
                expiresAt: expiresAt),
            state: .attending(
                nameplate: Rendezvous.Nameplate(try c.decode(String.self, forKey: .nameplate)),
                use: try c.decode(Int.self, forKey: .use),
                connection: try c.decode(RendezvousMachine.self, forKey: .machine), attempt: false),
            taken: legacy?.taken ?? 0, failures: legacy?.failures ?? 0)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(space, forKey: .space)
        try c.encode(spaceName, forKey: .spaceName)
        try c.encode(relay, forKey: .relay)
        try c.encode(secret, forKey: .secret)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(attendant, forKey: .attendant)
    }
}

/// Pending invites in the state directory, encrypted at rest (`invites.sealed` under the key in
/// `invites.key`; see `SealedStateFile`).
public struct PendingInviteStore: Sendable {
    public let directory: StateDirectory

    public init(directory: StateDirectory) {
        self.directory = directory
    }

    private var file: SealedStateFile<[PendingInvite]> {
        SealedStateFile(
            directory: directory, keyFile: "invites.key", sealedFile: "invites.sealed",
            additionalData: Array("eleven/pending-invites/v1".utf8), what: "pending invites")
    }

    /// Every pending invite (empty when there are none).
    public func load() throws(LocalStateError) -> [PendingInvite] {
        try file.load() ?? []
    }

    /// Replaces the pending invites (removes the files when none remain).
    public func save(_ invites: [PendingInvite]) throws(LocalStateError) {
        try file.save(invites.isEmpty ? nil : invites)
    }

    /// Saves `invite` in place of the one with its id, or drops it once it ended.
    public func put(_ invite: PendingInvite) throws(LocalStateError) {
        try directory.locked { () throws(LocalStateError) in
            var all = try load()
            all.removeAll { $0.id == invite.id }
            if invite.attendant.isOpen { all.append(invite) }
            try save(all)
        }
    }
}
