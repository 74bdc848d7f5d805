/// Why a call to a space server failed: a stable ``code`` for scripts, a message a person can act
/// on, and the ``kind`` that decides the exit status.
public struct SpaceClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Broad classes of failure.
    public enum Kind: String, Sendable {
        /// The server could not be reached (refused, unknown host, TLS failure, timeout).
        case unreachable
        /// The server refused the request: not signed in, not a member, removed.
        case refused
        /// The server answered with an error about the request (unknown id, bad input, conflict).
        case rejected
        /// The server answered with something that is not the API (wrong URL, broken proxy).
        case invalidResponse
        /// What the server sent failed verification on this device (forged signature, bad chain).
        case verification
    }

    public let kind: Kind
    /// `connection_refused`, `timed_out`, or the server's own code (`unknown_space`, …).
    public let code: String
    public let message: String
    /// The HTTP status, when the server answered.
    public let status: Int?
    /// How many more tries the server allows the same challenge (its `triesLeft`, sent with
    /// `code_invalid`), so callers never read the count out of the message.
    public let triesLeft: Int?

    public init(_ kind: Kind, code: String, message: String, status: Int? = nil, triesLeft: Int? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.status = status
        self.triesLeft = triesLeft
    }

    public var description: String { message }
}
