/// Why an invite link could not be read: which ``part`` of it is wrong, a stable ``code``, and
/// a message a person can act on. Messages never quote the link's secret parts.
public struct InviteLinkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable codes; the raw values are part of the public interface (`--json`, exit codes).
    public enum Code: String, Sendable, Equatable, CaseIterable {
        /// Longer than ``InviteReference/maximumLength``.
        case tooLong = "link_too_long"
        /// Not an `http(s)://host/…` address.
        case notALink = "not_a_link"
        /// The host (or port) is malformed.
        case invalidHost = "invalid_host"
        /// Nothing after `#`: the part that carries the invite is missing (often cut off when copying).
        case missingFragment = "missing_fragment"
        /// A slot between delimiters is empty.
        case emptySlot = "empty_slot"
        /// More slots than the format has.
        case extraSlot = "extra_slot"
        /// Fewer slots than the format needs.
        case missingSlot = "missing_slot"
        /// A `%` not followed by two hex digits.
        case invalidPercentEncoding = "invalid_percent_encoding"
        /// The name is not valid UTF-8, has control characters or is too long.
        case invalidName = "invalid_name"
        /// A character outside the base58 alphabet, or far too long.
        case invalidBase58 = "invalid_base58"
        /// The secret decodes to the wrong number of bytes.
        case invalidSecret = "invalid_secret"
        /// The branding key decodes to the wrong number of bytes.
        case invalidBrandingKey = "invalid_branding_key"
        /// The slot holds something like a short code that cannot be read.
        case invalidShortCode = "invalid_short_code"
        /// The link carries a short code; use the short-code join (``InviteReference``).
        case shortCodeLink = "short_code_link"
    }

    /// The part of the link that is wrong.
    public enum Part: String, Sendable, Equatable {
        case link, host, fragment, name, secret
        case brandingKey = "branding_key"
        case shortCode = "short_code"
    }

    public let code: Code
    public let part: Part
    public let message: String

    public init(_ code: Code, part: Part, _ message: String) {
        self.code = code
        self.part = part
        self.message = message
    }

    public var description: String { "\(message) [\(code.rawValue)]" }
}
