/// Proof that a member holds their signing key, answering a space server's one-time challenge;
/// the server answers with a device token. This is how a member added by public key (for example
/// with `eleven members add --key`) gets their first token.
public struct SignInProof: Sendable, Equatable {
    /// Length of a server challenge in bytes.
    public static var challengeByteCount: Int { 32 }

    public let space: SpaceID
    public let member: MemberID
    public let challenge: [UInt8]
    public let signature: Signature

    public init(space: SpaceID, member: MemberID, challenge: [UInt8], signature: Signature)
        throws(KeyModelError)
    {
        guard challenge.count == Self.challengeByteCount else {
            throw KeyModelError(.invalidLength, "A sign-in challenge has 32 bytes, not \(challenge.count).")
        }
        self.space = space
        self.member = member
        self.challenge = challenge
        self.signature = signature
    }

    static func signedBytes(space: SpaceID, member: MemberID, challenge: [UInt8]) -> [UInt8] {
        var encoder = CanonicalEncoder(domain: Domain.signIn)
        encoder.append(space.bytes)
        encoder.append(member.bytes)
        encoder.append(challenge)
        return encoder.bytes
    }

    /// Checks the signature against the member's signing key.
    public func verify(signingKey: SigningPublicKey) throws(KeyModelError) {
        guard
            signingKey.isValidSignature(
                signature, for: Self.signedBytes(space: space, member: member, challenge: challenge))
        else {
            throw KeyModelError(.badSignature, "This sign-in proof's signature does not verify.")
        }
    }
}

extension DeviceIdentity {
    /// Answers a space server's sign-in challenge as `member`.
    public func signIn(to space: SpaceID, as member: MemberID, challenge: [UInt8]) throws(KeyModelError)
        -> SignInProof
    {
        let signed = SignInProof.signedBytes(space: space, member: member, challenge: challenge)
        return try SignInProof(space: space, member: member, challenge: challenge, signature: sign(signed))
    }
}

extension SignInProof: Codable {
    private enum CodingKeys: String, CodingKey {
        case space, member, challenge, signature
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            space: c.decode(SpaceID.self, forKey: .space), member: c.decode(MemberID.self, forKey: .member),
            challenge: c.decodeBytes(forKey: .challenge, count: Self.challengeByteCount),
            signature: c.decodeChecked(forKey: .signature) { b throws(KeyModelError) in
                try Signature(bytes: b)
            })
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(space, forKey: .space)
        try c.encode(member, forKey: .member)
        try c.encodeBytes(challenge, forKey: .challenge)
        try c.encodeBytes(signature.bytes, forKey: .signature)
    }
}
