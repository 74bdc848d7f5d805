import PAKE

/// The verification words of a join as a short authentication string (SAS) with a commitment,
/// the standard SAS pattern of ZRTP, Bluetooth numeric comparison and MA-DH (Vaudenay's SAS-MCA):
/// after both confirmations verified, over the encrypted channel,
///
/// 1. the joiner draws a random `nA` (32 bytes) and sends `commit` = H(nA);
/// 2. the attendant, once it holds the commitment, sends its random `nB` (32 bytes) as `nonce`;
/// 3. the joiner sends `reveal` = nA; the attendant checks it against the commitment in
///    constant time (a wrong reveal burns the code) before it shows words or lets anyone decide.
///
/// The words are the first 33 bits of H(verifier ‖ nA ‖ nB). A man in the middle has one channel
/// with each side and a different `verifier` on each (a collision of the two would cost it about
/// 2^64 work: they derive from 128-bit session keys). It must commit towards the attendant
/// before it learns `nB`, and send its `nB` to the joiner before it learns `nA`; so whatever it
/// computes, the joiner's words are uniform given everything it chose, and they match the
/// attendant's with probability 2^-33 (`docs/threat-model.md`).
public enum ShortAuthenticationString {
    static let version: UInt8 = 1
    static let nonceByteCount = 32
    /// The bytes shown: three words take their first 33 bits (``VerificationWords``).
    static let byteCount = 5

    static let commitLabel = Array("eleven/join/v1/sas-commit".utf8)
    static let wordsLabel = Array("eleven/join/v1/sas".utf8)

    /// H(label ‖ nA): hides nA (32 random bytes) until it is revealed, and binds the joiner to it.
    static func commitment(to nonce: SecretBytes) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(commitLabel)
        hasher.update(nonce)
        return hasher.finalize()
    }

    /// Whether `nonce` opens `commitment`; compared in constant time.
    static func opens(_ commitment: [UInt8], with nonce: SecretBytes) -> Bool {
        SecretBytes(Self.commitment(to: nonce)).isEqual(toBytes: commitment)
    }

    /// The bytes both people compare as words: H(label ‖ verifier ‖ nA ‖ nB), first 5 bytes.
    static func derive(verifier: [UInt8], joinerNonce: SecretBytes, attendantNonce: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(wordsLabel)
        hasher.update(verifier)
        hasher.update(joinerNonce)
        hasher.update(attendantNonce)
        return Array(hasher.finalize().prefix(byteCount))
    }

    /// The plaintext of a `commit`, `nonce` or `reveal` message: `0x01 ‖ 32 bytes`.
    static func frame(_ bytes: [UInt8]) -> [UInt8] { [version] + bytes }

    static func unframe(_ plaintext: [UInt8]) throws(JoinHandshakeError) -> [UInt8] {
        guard let first = plaintext.first else { throw .badMessage("an empty verification message") }
        guard first == version else {
            throw .badMessage("verification message version \(first) is not supported")
        }
        guard plaintext.count == 1 + nonceByteCount else {
            throw .badMessage("a verification message of \(plaintext.count) bytes")
        }
        return Array(plaintext.dropFirst())
    }
}
