import Foundation
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

/// An invite left for `eleven approve` (`eleven invite --short --detach`): everything needed to
/// resume attending it after a restart, including the relay connection's state.
public struct PendingInvite: Codable, Sendable {
    public let id: String
    public let space: SpaceID
    public let spaceName: String
    public let relay: String
    public let nameplate: String
    public let secret: InviteSecret
    /// The relay connection's state (side, nameplate, mailbox, what was sent).
    public var machine: RendezvousMachine
    /// Which use comes next (0 for the first), and how many remain after it.
    public var use: Int
    public var usesLeft: Int
    public let createdAt: Int64
    public let expiresAt: Int64
    /// Uses taken and failed attempts so far, and their caps (nil in files written before
    /// `--max-failures`: one use left per `usesLeft`, one failure burns).
    public var policy: InvitePolicy?

    public init(
        id: String, space: SpaceID, spaceName: String, relay: String, nameplate: String, secret: InviteSecret,
        machine: RendezvousMachine, use: Int, usesLeft: Int, createdAt: Int64, expiresAt: Int64,
        policy: InvitePolicy? = nil
    ) {
        self.policy = policy
        self.id = id
        self.space = space
        self.spaceName = spaceName
        self.relay = relay
        self.nameplate = nameplate
        self.secret = secret
        self.machine = machine
        self.use = use
        self.usesLeft = usesLeft
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    /// The code as people type it.
    public var code: String { "\(secret.words)-\(nameplate)" }

    /// The invite's policy (derived for files that have none).
    public var currentPolicy: InvitePolicy {
        policy ?? InvitePolicy(uses: usesLeft + 1, expiresAt: expiresAt)
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
}
