import PAKE
import SpaceModel

/// A sign-in challenge the server checks without having stored it, so asking for one writes
/// nothing: a commit (and its synced pages) fewer per sign-in. Its 32 bytes are a random
/// nonce, the expiry, and a tag: HMAC-SHA256 under the server's own secret over those two, the
/// space and the member it was asked for, cut to 16 bytes (forging one is a 2^-128 guess). Only
/// a challenge that was USED is stored (``SpaceStore/useChallenge``), in the transaction that
/// issues the token, which is what makes it one-time.
struct SignInChallenge: Equatable {
    static let nonceByteCount = 12
    static let expiryByteCount = 4
    static let tagByteCount = 16

    let nonce: [UInt8]
    /// Unix seconds; four bytes on the wire (until 2106).
    let expiresAt: Int64

    init(nonce: [UInt8], expiresAt: Int64) {
        precondition(nonce.count == Self.nonceByteCount && (0...Int64(UInt32.max)).contains(expiresAt))
        self.nonce = nonce
        self.expiresAt = expiresAt
    }

    /// The bytes handed to the client (and signed back by it), bound to `space` and `member`.
    func bytes(space: SpaceID, member: MemberID, key: SecretBytes) -> [UInt8] {
        let body = nonce + Self.expiryBytes(expiresAt)
        return body + Self.tag(body, space: space, member: member, key: key)
    }

    /// The challenge in `bytes` when its tag is the server's for `space` and `member` (compared
    /// in constant time); nil for anything altered, forged, or asked for by someone else.
    init?(checking bytes: [UInt8], space: SpaceID, member: MemberID, key: SecretBytes) {
        let bodyCount = Self.nonceByteCount + Self.expiryByteCount
        guard bytes.count == bodyCount + Self.tagByteCount else { return nil }
        let body = Array(bytes[..<bodyCount])
        let expected = SecretBytes(Self.tag(body, space: space, member: member, key: key))
        guard expected.isEqual(toBytes: Array(bytes[bodyCount...])) else { return nil }
        let expiry = body[Self.nonceByteCount...].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        self.init(nonce: Array(body[..<Self.nonceByteCount]), expiresAt: expiry)
    }

    private static func expiryBytes(_ expiresAt: Int64) -> [UInt8] {
        (0..<expiryByteCount).reversed().map { UInt8(truncatingIfNeeded: expiresAt >> ($0 * 8)) }
    }

    private static func tag(_ body: [UInt8], space: SpaceID, member: MemberID, key: SecretBytes) -> [UInt8] {
        var encoder = CanonicalEncoder(domain: Domain.signInChallenge)
        encoder.append(space.bytes)
        encoder.append(member.bytes)
        encoder.append(body)
        return Array(HMACSHA256.authenticationCode(for: encoder.bytes, key: key).prefix(tagByteCount))
    }
}
