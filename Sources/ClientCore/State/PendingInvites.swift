import CSodium
import Foundation
import PAKE

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

/// Pending invites in the state directory, encrypted at rest: `invites.sealed` is
/// `0x01 ‖ nonce (24) ‖ XChaCha20-Poly1305(key, nonce, JSON, ad = "eleven/pending-invites/v1")`
/// under a random 32-byte key in `invites.key` (mode 0600). Writes are atomic.
public struct PendingInviteStore: Sendable {
    public let directory: StateDirectory

    static let keyFile = "invites.key"
    static let sealedFile = "invites.sealed"
    static let additionalData = Array("eleven/pending-invites/v1".utf8)

    public init(directory: StateDirectory) {
        self.directory = directory
    }

    /// Every pending invite (empty when there are none).
    public func load() throws(LocalStateError) -> [PendingInvite] {
        try directory.prepare()
        guard let sealed = try directory.read(Self.sealedFile) else { return [] }
        guard let keyBytes = try directory.read(Self.keyFile), keyBytes.count == 32 else {
            throw LocalStateError(
                .corrupt,
                "\(directory.file(Self.keyFile)) is missing or damaged; pending invites cannot be read.")
        }
        let key = SecretBytes(keyBytes)
        let nonceCount = Int(crypto_aead_xchacha20poly1305_ietf_npubbytes())
        let tagCount = Int(crypto_aead_xchacha20poly1305_ietf_abytes())
        guard sealed.count >= 1 + nonceCount + tagCount, sealed[0] == 1 else { throw corrupt() }
        let nonce = Array(sealed[1...nonceCount])
        let cipher = Array(sealed[(1 + nonceCount)...])
        var plain = [UInt8](repeating: 0, count: cipher.count - tagCount)
        var written: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                &plain, &written, nil, cipher, UInt64(cipher.count), Self.additionalData,
                UInt64(Self.additionalData.count), nonce, k.bindMemory(to: UInt8.self).baseAddress!)
        }
        defer { wipe(&plain) }
        guard rc == 0, let invites = try? JSONDecoder().decode([PendingInvite].self, from: Data(plain)) else {
            throw corrupt()
        }
        return invites
    }

    /// Replaces the pending invites (removes the files when none remain).
    public func save(_ invites: [PendingInvite]) throws(LocalStateError) {
        try directory.prepare()
        if invites.isEmpty {
            unlink(directory.file(Self.sealedFile))
            return
        }
        let key: SecretBytes
        if let existing = try directory.read(Self.keyFile), existing.count == 32 {
            key = SecretBytes(existing)
        } else {
            key = SecretBytes(SecretBytes.randomBytes(32))
            try directory.write(Self.keyFile, key)
        }
        guard var plain = try? JSONEncoder().encode(invites).map({ $0 }) else {
            throw LocalStateError(.unwritable, "could not encode the pending invites")
        }
        defer { wipe(&plain) }
        PAKE.Sodium.ensureInitialized()
        let nonce = SecretBytes.randomBytes(Int(crypto_aead_xchacha20poly1305_ietf_npubbytes()))
        var cipher = [UInt8](
            repeating: 0, count: plain.count + Int(crypto_aead_xchacha20poly1305_ietf_abytes()))
        var written: UInt64 = 0
        key.withUnsafeBytes { k in
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                &cipher, &written, plain, UInt64(plain.count), Self.additionalData,
                UInt64(Self.additionalData.count), nil, nonce, k.bindMemory(to: UInt8.self).baseAddress!)
        }
        try directory.write(Self.sealedFile, [1] + nonce + cipher)
    }

    private func corrupt() -> LocalStateError {
        LocalStateError(
            .corrupt,
            "\(directory.file(Self.sealedFile)) is damaged and cannot be read. "
                + "Move it away to drop the pending invites.")
    }
}
