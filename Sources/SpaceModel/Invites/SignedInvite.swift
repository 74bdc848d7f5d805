import PAKE

extension Domain {
    package static let invite = "eleven/invite/v1"
}

/// Why a grant could not be used. Nothing was saved when this is thrown.
public struct JoinGrantError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Stable codes; the raw values are what `--json` prints (`docs/errors.md`).
    public enum Code: String, CaseIterable, Sendable {
        /// The grant could not be read or checked.
        case grantInvalid = "grant_invalid"
        /// The grant did not verify: a signature or a key that does not belong.
        case grantForged = "grant_forged"
    }

    public let code: Code
    public let message: String

    public init(code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    package static func invalid(_ why: String) -> JoinGrantError {
        JoinGrantError(code: .grantInvalid, "The invitation could not be checked: \(why)")
    }

    package static func forged(_ why: String) -> JoinGrantError {
        JoinGrantError(code: .grantForged, "The invitation did not verify: \(why)")
    }
}

/// The inviter's signed record of an invite: who invited, into which space, for how long and
/// how many uses. Signed with the inviter's Ed25519 key over a domain-separated encoding.
public struct SignedInvite: Codable, Sendable, Hashable {
    public static let currentVersion = 1
    /// The nameplate of the record a full-length link's signer is added with (no relay is
    /// involved): with its inviter as the event's signer it makes the signer a ``Delegation``.
    public static let linkNameplate = "link"

    public let v: Int
    public let space: SpaceID
    public let inviter: MemberID
    /// The inviter's signing key, base64url; must belong to a current member with the right to add.
    public let inviterKey: String
    /// The relay nameplate the code was attended on.
    public let nameplate: String
    /// Seconds since 1970.
    public let createdAt: Int64
    public let expiresAt: Int64
    public let uses: Int
    public let signature: String

    package init(
        v: Int, space: SpaceID, inviter: MemberID, inviterKey: String, nameplate: String, createdAt: Int64,
        expiresAt: Int64, uses: Int, signature: String
    ) {
        self.v = v
        self.space = space
        self.inviter = inviter
        self.inviterKey = inviterKey
        self.nameplate = nameplate
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.uses = uses
        self.signature = signature
    }

    enum CodingKeys: String, CodingKey {
        case v, space, inviter, nameplate, uses, signature
        case inviterKey = "inviter_key"
        case createdAt = "created_at"
        case expiresAt = "expires_at"
    }

    package static func signedBytes(
        space: SpaceID, inviter: MemberID, inviterKey: String, nameplate: String, createdAt: Int64,
        expiresAt: Int64, uses: Int
    ) -> [UInt8] {
        var encoder = CanonicalEncoder(domain: Domain.invite)
        encoder.append(space.bytes)
        encoder.append(inviter.bytes)
        encoder.append(inviterKey)
        encoder.append(nameplate)
        encoder.append(UInt64(bitPattern: createdAt))
        encoder.append(UInt64(bitPattern: expiresAt))
        encoder.append(UInt64(max(0, uses)))
        return encoder.bytes
    }

    /// Checks the signature (through `memo`, when given: not again if this process verified
    /// these very bytes before); returns the inviter's key.
    public func verifySignature(memo: SignatureMemo? = nil) throws(JoinGrantError) -> SigningPublicKey {
        guard v == Self.currentVersion else { throw .invalid("invite record version \(v) is not supported") }
        guard let keyBytes = Base64URL.decode(inviterKey), let key = try? SigningPublicKey(bytes: keyBytes)
        else { throw .invalid("the inviter's key is malformed") }
        try verifySignature(knownKey: key, memo: memo)
        return key
    }

    /// Whether the record names `key` as the inviter's key.
    public func names(_ key: SigningPublicKey) -> Bool {
        inviterKey == Base64URL.encode(key.bytes)
    }

    /// Checks the signature with `key`, the inviter's key as already known and validated (from a
    /// verified roster), which saves decoding and validating the key again for every event of a
    /// chain; the record must name that very key. With `memo`, bytes this process verified
    /// before are not verified again.
    public func verifySignature(knownKey key: SigningPublicKey, memo: SignatureMemo? = nil)
        throws(JoinGrantError)
    {
        guard v == Self.currentVersion else { throw .invalid("invite record version \(v) is not supported") }
        guard names(key) else { throw .forged("the invite record names another inviter key") }
        guard let sigBytes = Base64URL.decode(signature), let sig = try? Signature(bytes: sigBytes) else {
            throw .invalid("the invite signature is malformed")
        }
        let signed = Self.signedBytes(
            space: space, inviter: inviter, inviterKey: inviterKey, nameplate: nameplate,
            createdAt: createdAt, expiresAt: expiresAt, uses: uses)
        guard memo?.isValid(sig, by: key, for: signed) ?? key.isValidSignature(sig, for: signed) else {
            throw .forged("the invite record is not signed by the inviter")
        }
    }
}

extension DeviceIdentity {
    /// Signs an invite record as member `inviter` of `space`.
    public func signInvite(
        space: SpaceID, inviter: MemberID, nameplate: String, createdAt: Int64, expiresAt: Int64, uses: Int
    ) -> SignedInvite {
        let key = Base64URL.encode(publicKeys.signing.bytes)
        let signed = SignedInvite.signedBytes(
            space: space, inviter: inviter, inviterKey: key, nameplate: nameplate, createdAt: createdAt,
            expiresAt: expiresAt, uses: uses)
        return SignedInvite(
            v: SignedInvite.currentVersion, space: space, inviter: inviter, inviterKey: key,
            nameplate: nameplate, createdAt: createdAt, expiresAt: expiresAt, uses: uses,
            signature: Base64URL.encode(sign(signed).bytes))
    }
}
