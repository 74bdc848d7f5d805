/// Why a Magic Wormhole text transfer did not complete. None of these carries secret material.
public enum WormholeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The code the person gave cannot be a Wormhole code.
    case invalidCode(String)
    /// A peer message did not decrypt: a different code, or someone guessing. Mood `scary`.
    case codeMismatch
    /// The peer's key-exchange message was malformed or invalid. Mood `scary`.
    case badKeyExchange(String)
    /// The peer (with the right key) sent something we cannot read. Mood `errory`.
    case badPeerMessage(String)
    /// The other side reported an error and stopped (its words, quoted).
    case peerError(String)
    /// The sender offered a file or a directory; only text is supported.
    case offerNotSupported(String)
    /// The receiver did not acknowledge the text.
    case textNotAccepted(String)
    /// The person did not confirm the verifier.
    case verifierRejected
    /// Nothing happened in time.
    case timedOut(String)

    /// A stable machine-readable code for `--json` output.
    public var code: String {
        switch self {
        case .invalidCode: "invalid_code"
        case .codeMismatch: "code_mismatch"
        case .badKeyExchange: "code_mismatch"
        case .badPeerMessage: "peer_protocol"
        case .peerError: "peer_error"
        case .offerNotSupported: "offer_not_supported"
        case .textNotAccepted: "text_not_accepted"
        case .verifierRejected: "verifier_rejected"
        case .timedOut: "timed_out"
        }
    }

    public var description: String {
        switch self {
        case .invalidCode(let why): "that is not a Wormhole code: \(why)"
        case .codeMismatch:
            "the code didn't match (or someone interfered); nothing was sent. Codes work once: "
                + "start again with a new code"
        case .badKeyExchange(let why):
            "the code didn't match (or someone interfered); nothing was sent (\(why))"
        case .badPeerMessage(let why): "the other side sent something unreadable: \(why)"
        case .peerError(let text): "the other side stopped the transfer: \(text)"
        case .offerNotSupported(let kind):
            "the other side offered \(kind); eleven only receives text (ask them for --text)"
        case .textNotAccepted(let why): "the other side did not accept the text: \(why)"
        case .verifierRejected: "the verifier was not confirmed; nothing was sent"
        case .timedOut(let what): what
        }
    }
}
