import CSodium
import PAKE
import SpaceModel

extension SpaceClient {
    /// `POST /api/key-invite`: files a full-length invite.
    public func mintKeyInvite(_ request: KeyInviteWire.MintRequest) throws(SpaceClientError)
        -> KeyInviteWire.Minted
    {
        try call(.post, "/api/key-invite", body: request)
    }

    /// `GET /api/key-invite/{id}`: the sealed payload and public branding; consumes nothing.
    public func keyInvite(_ id: KeyInviteID) throws(SpaceClientError) -> KeyInviteWire.Invite {
        try call(.get, "/api/key-invite/\(id.base64URL)")
    }

    /// `GET /api/key-invite/stale/{space}`: invite signers left in the roster by invites that can
    /// no longer be claimed (the server's word: check before acting on it).
    public func staleInviteSigners(_ space: SpaceID) throws(SpaceClientError) -> [MemberID] {
        let answer: KeyInviteWire.StaleSigners = try call(.get, "/api/key-invite/stale/\(space.base64URL)")
        return answer.members
    }

    /// `POST /api/key-invite/{id}/claim`.
    public func claimKeyInvite(_ id: KeyInviteID, _ request: KeyInviteWire.ClaimRequest)
        throws(SpaceClientError)
        -> KeyInviteWire.Claimed
    {
        try call(.post, "/api/key-invite/\(id.base64URL)/claim", body: request)
    }
}

/// Sealing a sealed space's branding (its name) under the link's branding key.
enum SealedBranding {
    static func associatedData(_ id: KeyInviteID) -> [UInt8] {
        var encoder = CanonicalEncoder(domain: "eleven/key-invite-branding/v1")
        encoder.append(id.bytes)
        return encoder.bytes
    }

    static func seal(_ name: String, key: BrandingKey, id: KeyInviteID) -> [UInt8] {
        Sodium.ensureInitialized()
        let plain = Array(name.utf8)
        let nonce = SecretBytes.randomBytes(InvitePayload.nonceByteCount)
        let aad = associatedData(id)
        var ciphertext = [UInt8](repeating: 0, count: plain.count + InvitePayload.tagByteCount)
        var produced: UInt64 = 0
        key.secret.withUnsafeBytes { k in
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                &ciphertext, &produced, plain, UInt64(plain.count), aad, UInt64(aad.count), nil, nonce,
                k.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return nonce + ciphertext
    }

    static func open(_ sealed: [UInt8], key: BrandingKey, id: KeyInviteID) -> String? {
        Sodium.ensureInitialized()
        let n = InvitePayload.nonceByteCount
        guard sealed.count >= n + InvitePayload.tagByteCount else { return nil }
        let ciphertext = Array(sealed.dropFirst(n))
        let aad = associatedData(id)
        var plain = [UInt8](repeating: 0, count: ciphertext.count - InvitePayload.tagByteCount)
        var produced: UInt64 = 0
        let status = key.secret.withUnsafeBytes { k in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                &plain, &produced, nil, ciphertext, UInt64(ciphertext.count), aad, UInt64(aad.count),
                Array(sealed.prefix(n)), k.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard status == 0 else { return nil }
        return String(validating: plain, as: UTF8.self)
    }
}

/// A device token as `GET /api/spaces/{space}/tokens` lists it (never the secret).
public struct DeviceTokenInfo: Codable, Sendable, Equatable {
    public let id: String
    public let member: MemberID
    public let label: String
    public let createdAt: Int64
    public let expiresAt: Int64
    public let revokedAt: Int64?
}

extension SpaceClient {
    private struct DeviceTokenList: Codable {
        let tokens: [DeviceTokenInfo]
    }

    /// The caller's device tokens (all of them for the admin token): the member's device list.
    public func deviceTokens(_ space: SpaceID) throws(SpaceClientError) -> [DeviceTokenInfo] {
        let list: DeviceTokenList = try call(.get, "/api/spaces/\(space.base64URL)/tokens")
        return list.tokens
    }
}
