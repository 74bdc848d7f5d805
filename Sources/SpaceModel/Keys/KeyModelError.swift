/// An error from the key model: a stable machine-readable ``code`` and a message a person can act on.
public struct KeyModelError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable codes; the raw values are part of the public interface (`--json`, API errors).
    public enum Code: String, Sendable, Equatable, CaseIterable {
        /// A byte string has the wrong length.
        case invalidLength = "invalid_length"
        /// Text is not valid base64url (no padding) or a stored form is malformed.
        case invalidEncoding = "invalid_encoding"
        /// A received public key is not a usable curve point.
        case invalidPublicKey = "invalid_public_key"
        /// A stored form names a version this build does not know.
        case unsupportedVersion = "unsupported_version"
        /// A signature does not verify.
        case badSignature = "bad_signature"
        /// A key wrap or note is addressed to someone else.
        case wrongRecipient = "wrong_recipient"
        /// The signer of a wrap, note or message is not a member of the space.
        case signerNotMember = "signer_not_member"
        /// Decryption failed: wrong key, or the ciphertext or its bound data was altered.
        case decryptionFailed = "decryption_failed"
        /// An object belongs to a different space or thread than expected.
        case wrongContext = "wrong_context"
        /// A membership event is out of sequence (reordered, replayed or missing events).
        case eventOutOfOrder = "event_out_of_order"
        /// A membership event does not name the previous event's hash.
        case eventChainBroken = "event_chain_broken"
        /// The signer of a membership event is not allowed to make that change.
        case notAuthorised = "not_authorised"
        /// A membership event is malformed or makes no sense (unknown member, duplicate member).
        case invalidEvent = "invalid_event"
        /// The first event is not signed by the owner key the client expected.
        case ownerKeyMismatch = "owner_key_mismatch"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) [\(code.rawValue)]" }
}
