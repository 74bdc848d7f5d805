/// Why a SPAKE2 exchange (RFC 9382 or the Magic Wormhole variant) stopped without a key.
///
/// Every case has a stable machine-readable ``code`` (for `--json` output and exit codes) and a
/// human ``message``. None of them carries secret material. After any of these errors the
/// exchange is over: the state that threw has been consumed and no key exists.
public enum SPAKE2Error: Error, Equatable, Sendable, CustomStringConvertible {
    /// The peer's message has the wrong length for the suite.
    case wrongMessageLength(expected: Int, actual: Int)
    /// A Magic Wormhole message did not start with the symmetric side byte `S` (0x53).
    case unexpectedSideByte(UInt8)
    /// The peer's element is encoded in a form honest implementations never produce
    /// (coordinate not reduced, sign bit on a zero coordinate, compressed or hybrid SEC1 form).
    case nonCanonicalEncoding
    /// The peer's bytes do not decode to a point on the curve.
    case notOnCurve
    /// The peer sent the identity element, or an element that cancels the password blinding.
    case identityElement
    /// The peer's point has a small-order component (edwards25519 torsion): it is not in the
    /// prime-order subgroup.
    case notInPrimeOrderSubgroup
    /// The peer sent back our own message.
    case reflectedMessage
    /// The peer's key confirmation has the wrong length.
    case wrongConfirmationLength(expected: Int, actual: Int)
    /// The peer's key confirmation did not verify: the two sides used different codes (or
    /// identities, or associated data), or someone interfered.
    case confirmationMismatch
    /// A raw password scalar was zero or not below the group order.
    case invalidPasswordScalar

    /// A stable snake_case identifier, e.g. `pake_confirmation_mismatch` (the one spelling every error code uses).
    public var code: String {
        switch self {
        case .wrongMessageLength: "pake_message_length"
        case .unexpectedSideByte: "pake_side_byte"
        case .nonCanonicalEncoding: "pake_non_canonical"
        case .notOnCurve: "pake_not_on_curve"
        case .identityElement: "pake_identity"
        case .notInPrimeOrderSubgroup: "pake_small_subgroup"
        case .reflectedMessage: "pake_reflected"
        case .wrongConfirmationLength: "pake_confirmation_length"
        case .confirmationMismatch: "pake_confirmation_mismatch"
        case .invalidPasswordScalar: "pake_password_scalar"
        }
    }

    /// What went wrong, for a person reading a log or a `--verbose` error.
    public var message: String {
        switch self {
        case .wrongMessageLength(let expected, let actual):
            "The other side's key-exchange message is \(actual) bytes long; expected \(expected)."
        case .unexpectedSideByte(let byte):
            "The other side's key-exchange message starts with byte 0x\(String(byte, radix: 16)), "
                + "not the symmetric marker 'S'."
        case .nonCanonicalEncoding:
            "The other side's key-exchange message is not canonically encoded."
        case .notOnCurve:
            "The other side's key-exchange message is not a point on the curve."
        case .identityElement:
            "The other side's key-exchange message is the identity element (or cancels the code)."
        case .notInPrimeOrderSubgroup:
            "The other side's key-exchange message is not in the prime-order subgroup."
        case .reflectedMessage:
            "The other side sent back our own key-exchange message."
        case .wrongConfirmationLength(let expected, let actual):
            "The other side's key confirmation is \(actual) bytes long; expected \(expected)."
        case .confirmationMismatch:
            "The key confirmation did not match: the codes differ, or someone interfered."
        case .invalidPasswordScalar:
            "The password scalar is zero or not below the group order."
        }
    }

    public var description: String { "\(code): \(message)" }
}
