import CSodium
import PAKE

/// What a full-length invite carries, sealed under the link's wrap key so the server holds only
/// ciphertext:
/// - setup: the space id to create;
/// - member / DM: the invite's signer identity (it adds the joiner to the roster) and thread keys;
/// - device: the member's identity to adopt.
///
/// Binary, built and read inside ``SecretBytes`` so keys never pass through JSON strings:
/// version (1), shape, space (16); then, except for setup, the owner's signing key (32), a member
/// id (16), a device identity's stored form (69), a thread count and (thread id, key) pairs;
/// in version 2, then the id of the names thread (16), one of those threads, whose key seals
/// members' names (``SealedName``), so a joiner seals their own name and reads everyone's.
package struct InvitePayload: Sendable {
    /// The version without a names thread, still read and written when there is none.
    package static let version: UInt8 = 1
    package static let namesVersion: UInt8 = 2
    package static let nonceByteCount = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    package static let tagByteCount = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
    package static let maximumThreads = 255

    package var shape: InviteShape
    package var space: SpaceID
    package var ownerSigningKey: SigningPublicKey?
    package var member: MemberID?
    package var identity: DeviceIdentity?
    package var threads: [(ThreadID, ThreadKey)] = []
    /// Which of `threads` is the space's names thread (nil in version 1).
    package var namesThread: ThreadID?

    package init(
        shape: InviteShape, space: SpaceID, ownerSigningKey: SigningPublicKey? = nil, member: MemberID? = nil,
        identity: DeviceIdentity? = nil, threads: [(ThreadID, ThreadKey)] = []
    ) {
        self.shape = shape
        self.space = space
        self.ownerSigningKey = ownerSigningKey
        self.member = member
        self.identity = identity
        self.threads = threads
    }

    private static let identityBytes = DeviceIdentity.storedByteCount

    private var byteCount: Int {
        shape == .setup
            ? 18 : 18 + 32 + 16 + Self.identityBytes + 1 + threads.count * 48 + (namesThread == nil ? 0 : 16)
    }

    /// The names thread and its key, when the payload names one it carries.
    package var names: (thread: ThreadID, key: ThreadKey)? {
        guard let namesThread, let key = threads.first(where: { $0.0 == namesThread })?.1 else { return nil }
        return (namesThread, key)
    }

    /// The associated data binding the sealed payload to its invite.
    package static func associatedData(id: KeyInviteID, shape: InviteShape, space: SpaceID) -> [UInt8] {
        var encoder = CanonicalEncoder(domain: "eleven/key-invite-payload/v1")
        encoder.append(id.bytes)
        encoder.append(shape.rawValue)
        encoder.append(space.bytes)
        return encoder.bytes
    }

    /// Nonce followed by the XChaCha20-Poly1305 ciphertext.
    package func seal(id: KeyInviteID, wrapKey: SecretBytes) -> [UInt8] {
        precondition(threads.count <= Self.maximumThreads, "too many thread keys for one invite")
        let plain = plaintext()
        let nonce = SecretBytes.randomBytes(Self.nonceByteCount)
        let aad = Self.associatedData(id: id, shape: shape, space: space)
        var ciphertext = [UInt8](repeating: 0, count: plain.count + Self.tagByteCount)
        var produced: UInt64 = 0
        plain.withUnsafeBytes { p in
            wrapKey.withUnsafeBytes { k in
                _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                    &ciphertext, &produced, p.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    UInt64(p.count),
                    aad, UInt64(aad.count), nil, nonce, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return nonce + ciphertext
    }

    private func plaintext() -> SecretBytes {
        SecretBytes(count: byteCount) { out in
            var offset = 0
            func put(_ bytes: some ReadableBytes) {
                bytes.withReadableBytes { source in
                    UnsafeMutableRawBufferPointer(rebasing: out[offset..<offset + source.count]).copyMemory(
                        from: source)
                    offset += source.count
                }
            }
            put([shape != .setup && namesThread != nil ? Self.namesVersion : Self.version, shape.byte])
            put(space.bytes)
            guard shape != .setup else { return }
            // Present for every other shape by construction (see the minting code).
            put(ownerSigningKey!.bytes)
            put(member!.bytes)
            put(identity!.storedForm())
            put([UInt8(threads.count)])
            for (thread, key) in threads {
                put(thread.bytes)
                put(key.secretBytes)
            }
            if let namesThread { put(namesThread.bytes) }
        }
    }

    /// Opens and parses a sealed payload; any tampering or mismatch is an error, never a guess.
    package static func open(
        _ sealed: [UInt8], id: KeyInviteID, shape: InviteShape, space: SpaceID, wrapKey: SecretBytes
    )
        throws(SpaceClientError) -> InvitePayload
    {
        Sodium.ensureInitialized()
        guard sealed.count >= nonceByteCount + tagByteCount + 18 else { throw unreadable("it is too short") }
        let nonce = Array(sealed.prefix(nonceByteCount))
        let ciphertext = Array(sealed.dropFirst(nonceByteCount))
        let aad = associatedData(id: id, shape: shape, space: space)
        var status: Int32 = -1
        let plain = SecretBytes(count: ciphertext.count - tagByteCount) { out in
            wrapKey.withUnsafeBytes { k in
                var produced: UInt64 = 0
                status = crypto_aead_xchacha20poly1305_ietf_decrypt(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), &produced, nil, ciphertext,
                    UInt64(ciphertext.count), aad, UInt64(aad.count), nonce,
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard status == 0 else { throw unreadable("it does not open with this link's key") }
        return try parse(plain, shape: shape, space: space)
    }

    private static func parse(_ plain: SecretBytes, shape: InviteShape, space: SpaceID)
        throws(SpaceClientError)
        -> InvitePayload
    {
        let header: [UInt8] = plain.withUnsafeBytes { Array($0.prefix(18)) }
        guard header.count == 18, header[0] == version || (header[0] == namesVersion && shape != .setup),
            header[1] == shape.byte,
            Array(header[2..<18]) == space.bytes
        else { throw unreadable("its header does not match the invite") }
        var payload = InvitePayload(shape: shape, space: space)
        if shape == .setup {
            guard plain.count == 18 else { throw unreadable("it has the wrong length") }
            return payload
        }
        let fixed = 18 + 32 + 16 + identityBytes + 1
        guard plain.count >= fixed else { throw unreadable("it is truncated") }
        let count = Int(plain.withUnsafeBytes { $0[fixed - 1] })
        let namesBytes = header[0] == namesVersion ? 16 : 0
        guard plain.count == fixed + count * 48 + namesBytes else {
            throw unreadable("it has the wrong length")
        }
        do throws(KeyModelError) {
            payload.ownerSigningKey = try SigningPublicKey(bytes: plain.slice(18..<50).unredactedBytes())
            payload.member = try MemberID(bytes: plain.slice(50..<66).unredactedBytes())
            payload.identity = try DeviceIdentity(storedForm: plain.slice(66..<66 + identityBytes))
            for index in 0..<count {
                let start = fixed + index * 48
                let thread = try ThreadID(bytes: plain.slice(start..<start + 16).unredactedBytes())
                let key = try ThreadKey(secret: plain.slice(start + 16..<start + 48))
                payload.threads.append((thread, key))
            }
            if namesBytes > 0 {
                let start = fixed + count * 48
                payload.namesThread = try ThreadID(bytes: plain.slice(start..<start + 16).unredactedBytes())
            }
        } catch {
            throw unreadable(error.message)
        }
        if namesBytes > 0, payload.names == nil {
            throw unreadable("its names thread is not among its threads")
        }
        return payload
    }

    package static func unreadable(_ why: String) -> SpaceClientError {
        SpaceClientError(
            .verification, code: "invite_unreadable",
            message: "This invite cannot be opened (\(why)). Ask for a new link.")
    }
}
