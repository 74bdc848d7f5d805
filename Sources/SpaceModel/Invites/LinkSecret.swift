import CSodium
import PAKE

/// The 16-byte secret `T` in an invite link's fragment. It never leaves this device: the server
/// only ever sees what ``derive()`` makes from it (the invite id and a proof for claiming).
/// Redacted when printed, compared in constant time, wiped when dropped.
public struct LinkSecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public static let byteCount = 16
    /// Length of the base58 text of a secret minted by this version.
    public static let textLength = 22
    /// Length of the base64url text of a secret in a legacy (`e1.` or raw) link.
    public static let legacyTextLength = 22

    let secret: SecretBytes

    /// Adopts 16 secret bytes.
    public init(secret: SecretBytes) throws(InviteLinkError) {
        guard secret.count == Self.byteCount else {
            throw InviteLinkError(
                .invalidSecret, part: .secret,
                "The invite secret has \(secret.count) bytes; it must have \(Self.byteCount).")
        }
        self.secret = secret
    }

    /// A fresh secret whose base58 text is exactly ``textLength`` characters (about one draw in 30
    /// is shorter and is drawn again, so every minted link has the same length).
    public static func random(using random: inout some RandomByteSource) -> LinkSecret {
        while true {
            let candidate = LinkSecret(trusted: SecretBytes(randomCount: byteCount, using: &random))
            if candidate.base58Length == textLength { return candidate }
        }
    }

    /// A fresh secret from the system's secure random source.
    public static func random() -> LinkSecret {
        var system = SystemRandom()
        return random(using: &system)
    }

    init(trusted secret: SecretBytes) {
        self.secret = secret
    }

    /// The 16 secret bytes (still redacted when printed).
    public var secretBytes: SecretBytes { secret }

    private var base58Length: Int {
        secret.withUnsafeBytes { Base58.encode($0).utf8.count }
    }

    /// The base58 text that goes into a link. Only for building the link a person shares.
    func base58Text() -> String {
        secret.withUnsafeBytes { Base58.encode($0) }
    }

    /// Derives the invite's id, the key that seals its payload and the secret that claims it,
    /// with HKDF-SHA256 and a distinct label for each.
    public func derive() -> LinkKeys {
        func key(_ label: String, _ count: Int) -> SecretBytes {
            HKDFSHA256.deriveKey(
                from: secret, salt: Array(LinkKeys.salt.utf8), info: Array(label.utf8), byteCount: count)
        }
        let id = key(LinkKeys.idLabel, KeyInviteID.byteCount).unredactedBytes()
        // Length is right by construction.
        return LinkKeys(
            id: try! KeyInviteID(bytes: id), wrapKey: key(LinkKeys.wrapKeyLabel, 32),
            claimSecret: key(LinkKeys.claimSecretLabel, 32))
    }

    public static func == (lhs: LinkSecret, rhs: LinkSecret) -> Bool { lhs.secret == rhs.secret }

    public var description: String { "LinkSecret(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// What a link's secret derives (see ``LinkSecret/derive()``).
public struct LinkKeys: Sendable, CustomStringConvertible {
    static let salt = "eleven/key-invite/v1"
    static let idLabel = "eleven/key-invite/id"
    static let wrapKeyLabel = "eleven/key-invite/wrap-key"
    static let claimSecretLabel = "eleven/key-invite/claim-secret"
    static let verifierDomain = "eleven/key-invite/claim-verifier/v1"

    /// The public id the server files the invite under.
    public let id: KeyInviteID
    /// Seals the invite's payload (XChaCha20-Poly1305); never sent.
    public let wrapKey: SecretBytes
    /// Proves knowledge of the link when claiming; sent only in the claim.
    public let claimSecret: SecretBytes

    /// What the server stores to check a claim: SHA-256 over a domain string and the claim secret.
    public var verifier: [UInt8] { Self.verifier(of: claimSecret) }

    /// The verifier of a claim secret.
    public static func verifier(of claimSecret: some ReadableBytes) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(Array(verifierDomain.utf8))
        hasher.update(claimSecret)
        return hasher.finalize()
    }

    public var description: String { "LinkKeys(id: \(id), secrets redacted)" }
}

/// The tag for ``KeyInviteID``.
public enum KeyInviteIDKind: IdentifierKind { public static let noun = "invite id" }
/// The public id of a full-length invite: derived from the link's secret, so only the link's
/// holder can name it.
public typealias KeyInviteID = Identifier<KeyInviteIDKind>
