import CSodium
import PAKE

/// The encrypted channel of a confirmed join: per-direction keys derived from the SPAKE2 session
/// key, XChaCha20-Poly1305 with a random nonce per message and the phase name as associated
/// data (so a message cannot be replayed under another phase).
///
/// Body layout: `0x01 ‖ nonce (24) ‖ ciphertext ‖ tag (16)`.
public struct JoinChannel: Sendable {
    static let nonceByteCount = 24
    static let tagByteCount = 16

    private let sendKey: SecretBytes
    private let receiveKey: SecretBytes
    /// 32 bytes both sides compute from the session key: one input of the verification words
    /// (``ShortAuthenticationString``), never shown itself. Full length, so a man in the middle
    /// cannot make its two channels' verifiers collide by searching its SPAKE2 scalars.
    public let verifier: [UInt8]

    init(sessionKey: SecretBytes, role: JoinHandshake.Role) {
        PAKE.Sodium.ensureInitialized()
        let toAttendant = HKDFSHA256.deriveKey(
            from: sessionKey, info: Array("eleven/join/v1/joiner-to-attendant".utf8), byteCount: 32)
        let toJoiner = HKDFSHA256.deriveKey(
            from: sessionKey, info: Array("eleven/join/v1/attendant-to-joiner".utf8), byteCount: 32)
        sendKey = role == .joiner ? toAttendant : toJoiner
        receiveKey = role == .joiner ? toJoiner : toAttendant
        verifier = HKDFSHA256.deriveKey(
            from: sessionKey, info: Array("eleven/join/v1/verifier".utf8), byteCount: 32
        ).unredactedBytes()
    }

    /// Encrypts `plaintext` for the peer under `phase`.
    public func seal(
        _ plaintext: [UInt8], phase: Rendezvous.Phase, using random: inout some RandomByteSource
    ) -> [UInt8] {
        let nonce = random.bytes(count: Self.nonceByteCount)
        let ad = Array(phase.value.utf8)
        var out = [UInt8](repeating: 0, count: 1 + Self.nonceByteCount + plaintext.count + Self.tagByteCount)
        out[0] = JoinHandshake.version
        out.replaceSubrange(1...Self.nonceByteCount, with: nonce)
        var written: UInt64 = 0
        sendKey.withUnsafeBytes { key in
            out.withUnsafeMutableBufferPointer { buffer in
                let cipher = buffer.baseAddress! + 1 + Self.nonceByteCount
                _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                    cipher, &written, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil,
                    nonce, key.bindMemory(to: UInt8.self).baseAddress!)
            }
        }
        return out
    }

    /// Decrypts a body the peer sent under `phase`; throws when it was not sealed with our key
    /// for that phase (tampered, replayed under another phase, or from someone else).
    public func open(_ body: [UInt8], phase: Rendezvous.Phase) throws(JoinHandshakeError) -> [UInt8] {
        guard body.count >= 1 + Self.nonceByteCount + Self.tagByteCount else {
            throw .badMessage("an encrypted message too short to be one")
        }
        guard body[0] == JoinHandshake.version else {
            throw .badMessage("protocol version \(body[0]) is not supported")
        }
        let nonce = Array(body[1...Self.nonceByteCount])
        let cipher = Array(body[(1 + Self.nonceByteCount)...])
        let ad = Array(phase.value.utf8)
        var plain = [UInt8](repeating: 0, count: cipher.count - Self.tagByteCount)
        var written: UInt64 = 0
        let rc = receiveKey.withUnsafeBytes { key in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                &plain, &written, nil, cipher, UInt64(cipher.count), ad, UInt64(ad.count), nonce,
                key.bindMemory(to: UInt8.self).baseAddress!)
        }
        guard rc == 0 else { throw .badMessage("a message that does not decrypt") }
        return plain
    }
}
