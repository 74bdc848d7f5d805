/// Signatures this process verified, by their exact bytes (key, signature, message), so that one
/// met again is not verified again: the bot checks the same invite record for every joiner who
/// comes with it, twice each (deciding on the joiner, then applying the event that carries it).
/// Held by whoever checks (the bot's roster cache holds one), not kept inside the types: only
/// what this process itself verified counts, and a record differing in any byte is verified
/// afresh. At most `capacity` entries; when full, it starts over.
public final class SignatureMemo: Sendable {
    private let verified: CheckedBytes

    public init(capacity: Int = 256) {
        verified = CheckedBytes(capacity: capacity)
    }

    /// Whether `signature` is `key`'s over `message`: remembered, or verified now (and remembered
    /// when it holds).
    public func isValid(_ signature: Signature, by key: SigningPublicKey, for message: [UInt8]) -> Bool {
        // Key and signature have fixed lengths: the concatenation names one triple.
        verified.check(key.bytes + signature.bytes + message) { _ in
            key.isValidSignature(signature, for: message)
        }
    }

    /// How many are remembered (for tests).
    package var count: Int { verified.count }
}
