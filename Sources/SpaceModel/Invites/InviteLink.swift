import PAKE
import WordCodes

/// Which way a link was written. Every format parses forever; only ``current`` is minted.
public enum InviteLinkFormat: String, Sendable, Equatable {
    /// `https://HOST/invite#NAME/T` and, for sealed spaces, `#NAME/T/BRANDINGKEY`.
    case current
    /// `https://HOST/join/join#e1.T~NAME~BRANDINGKEY`.
    case legacyE1 = "legacy_e1"
    /// `https://HOST/join/join#T`: the fragment is the bare secret.
    case legacyRaw = "legacy_raw"
}

/// The 32-byte key that opens a sealed space's branding (its name and avatar are hidden from
/// anyone without the link). Redacted when printed.
public struct BrandingKey: Sendable, Equatable, CustomStringConvertible {
    public static let byteCount = 32
    public let secret: SecretBytes

    public init(secret: SecretBytes) throws(InviteLinkError) {
        guard secret.count == Self.byteCount else {
            throw InviteLinkError(
                .invalidBrandingKey, part: .brandingKey,
                "The branding key has \(secret.count) bytes; it must have \(Self.byteCount).")
        }
        self.secret = secret
    }

    /// A fresh random branding key.
    public static func random() -> BrandingKey {
        BrandingKey(trusted: SecretBytes.random(count: byteCount))
    }

    init(trusted secret: SecretBytes) { self.secret = secret }

    public var description: String { "BrandingKey(redacted)" }
}

/// A full-length invite link: the server that holds the invite, the name shown in the link, the
/// secret `T` and, for sealed spaces, the branding key. Printing it redacts the secrets; the
/// shareable text comes only from ``text()``.
public struct InviteLink: Sendable, Equatable, CustomStringConvertible {
    /// The space server, `scheme://host[:port]`, where the invite is filed.
    public let server: String
    /// The name in the link (a person's name, else the space's); nil in bare legacy links.
    public let name: String?
    public let secret: LinkSecret
    public let brandingKey: BrandingKey?
    /// How the link was written.
    public let format: InviteLinkFormat

    public init(
        server: String, name: String?, secret: LinkSecret, brandingKey: BrandingKey? = nil,
        format: InviteLinkFormat = .current
    ) {
        self.server = server
        self.name = name
        self.secret = secret
        self.brandingKey = brandingKey
        self.format = format
    }

    /// Reads a full-length link in any format. A link that carries a short code instead of a
    /// secret fails with ``InviteLinkError/Code/shortCodeLink``; use ``InviteReference`` to
    /// accept both.
    public init(parsing text: String) throws(InviteLinkError) {
        switch try InviteReference(parsing: text) {
        case .link(let link): self = link
        case .shortCode:
            throw InviteLinkError(
                .shortCodeLink, part: .shortCode,
                "This link carries a short code, not a full-length invite: join with the code instead.")
        }
    }

    /// The link to share, in the current format: `SERVER/invite#NAME/T[/BRANDINGKEY]`. It holds
    /// the secret: show it to the person who shares it, never log it. A bare legacy link has no
    /// name; pass `name` to fill the slot.
    public func text(name override: String? = nil) -> String {
        var fragment = InviteReference.percentEncode(override ?? name ?? "invite") + "/" + secret.base58Text()
        if let brandingKey {
            fragment += "/" + brandingKey.secret.withUnsafeBytes { Base58.encode($0) }
        }
        return server + "/invite#" + fragment
    }

    public var description: String {
        "InviteLink(server: \(server), name: \(name.map { "\"\($0)\"" } ?? "none"), format: \(format.rawValue), "
            + "secret redacted\(brandingKey == nil ? "" : ", sealed"))"
    }
}

/// A short code carried in a link's slot (`https://HOST/invite#Paul/coral-piano-42`): hand it to
/// the short-code join.
public struct ShortCodeLink: Sendable, Equatable {
    public let server: String
    public let name: String
    public let code: WordCodes.Code
}

/// What a pasted link refers to: a full-length invite or a short code.
public enum InviteReference: Sendable, Equatable {
    case link(InviteLink)
    case shortCode(ShortCodeLink)

    /// Links longer than this many UTF-8 bytes are refused before any other work.
    public static let maximumLength = 2048

    /// Reads a link. Detection follows the fragment: it contains `/` → current format; it starts
    /// with `e1.` → legacy e1; otherwise the bare legacy secret. Anything malformed is an
    /// ``InviteLinkError`` naming the part and the reason; nothing is guessed.
    public init(parsing input: String) throws(InviteLinkError) {
        var text = input.trimmingWhitespace()
        guard text.utf8.count <= Self.maximumLength else {
            throw InviteLinkError(
                .tooLong, part: .link,
                "That link is \(text.utf8.count) bytes long; invite links are at most \(Self.maximumLength).")
        }
        if text.lowercased().hasPrefix(Self.appScheme) {
            text = try Self.unwrapAppLink(text)
        }
        guard let hash = text.firstIndex(of: "#") else {
            if text.hasPrefix("http://") || text.hasPrefix("https://") {
                throw InviteLinkError(
                    .missingFragment, part: .fragment,
                    "That link has no part after \"#\", which carries the invite. Copy the whole link.")
            }
            throw Self.notALink
        }
        let server = try Self.server(String(text[..<hash]))
        let fragment = text[text.index(after: hash)...]
        guard !fragment.isEmpty else {
            throw InviteLinkError(
                .missingFragment, part: .fragment,
                "That link has nothing after \"#\", which carries the invite. Copy the whole link.")
        }
        if fragment.contains("/") {
            self = try Self.current(server: server, fragment: fragment)
        } else if fragment.hasPrefix("e1.") {
            self = .link(try Self.legacyE1(server: server, fragment: fragment.dropFirst(3)))
        } else {
            let secret = try Self.secret(fragment, ordinal: "", legacy: true)
            self = .link(InviteLink(server: server, name: nil, secret: secret, format: .legacyRaw))
        }
    }

    /// The app's custom scheme: `elevenmessenger://add?url=<the link, percent-encoded>`.
    public static let appScheme = "elevenmessenger://"

    /// The app link that opens `link` in Eleven (what the welcome page offers).
    public static func appLink(for link: String) -> String {
        appScheme + "add?url=" + percentEncode(link)
    }

    /// The link inside `elevenmessenger://add?url=…`, percent-decoded.
    private static func unwrapAppLink(_ text: String) throws(InviteLinkError) -> String {
        let rest = text.dropFirst(appScheme.count)
        guard rest.lowercased().hasPrefix("add?") else { throw notALink }
        for pair in rest.dropFirst(4).split(separator: "&") where pair.hasPrefix("url=") {
            let inner = try percentDecode(pair.dropFirst(4), part: .link, noun: "link")
            guard !inner.lowercased().hasPrefix(appScheme) else { throw notALink }
            return inner.trimmingWhitespace()
        }
        throw InviteLinkError(
            .notALink, part: .link, "That Eleven app link carries no invite link (\"url=\").")
    }

    private static let notALink = InviteLinkError(
        .notALink, part: .link, "That is not an invite link: it should start with https:// and contain \"#\"."
    )

    /// `scheme://host[:port]` from the part before `#` (the path is not used).
    private static func server(_ base: String) throws(InviteLinkError) -> String {
        let lower = base.lowercased()
        let scheme: String
        if lower.hasPrefix("https://") {
            scheme = "https"
        } else if lower.hasPrefix("http://") {
            scheme = "http"
        } else {
            throw notALink
        }
        let rest = base.dropFirst(scheme.count + 3)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        guard !authority.isEmpty else {
            throw InviteLinkError(.invalidHost, part: .host, "That link names no server.")
        }
        var host = Substring(authority)
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            let port = authority[authority.index(after: colon)...]
            guard port.allSatisfy({ ("0"..."9").contains($0) }), let number = Int(port),
                (1...65535).contains(number)
            else {
                throw InviteLinkError(
                    .invalidHost, part: .host, "The port in that link is not a number from 1 to 65535.")
            }
            host = authority[..<colon]
        }
        let allowed = host.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII
                && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                    || ".-[]:".unicodeScalars.contains(scalar))
        }
        guard !host.isEmpty, allowed, !host.contains("@") else {
            throw InviteLinkError(
                .invalidHost, part: .host,
                "The server name in that link has characters a host name cannot have.")
        }
        return scheme + "://" + authority.lowercased()
    }

    private static func current(server: String, fragment: Substring) throws(InviteLinkError)
        -> InviteReference
    {
        let slots = fragment.split(separator: "/", omittingEmptySubsequences: false)
        guard slots.count <= 3 else {
            throw InviteLinkError(
                .extraSlot, part: .fragment,
                "The invite part of that link has \(slots.count) slots separated by \"/\"; it has at most 3.")
        }
        let names = ["name", "secret", "branding key"]
        for (index, slot) in slots.enumerated() where slot.isEmpty {
            throw InviteLinkError(
                .emptySlot, part: index == 0 ? .name : index == 1 ? .secret : .brandingKey,
                "The \(names[index]) slot of that link is empty.")
        }
        let name = try decodeName(slots[0])
        if slots[1].contains("-") {
            guard slots.count == 2 else {
                throw InviteLinkError(
                    .extraSlot, part: .fragment, "A link with a short code has no slot after the code.")
            }
            do throws(CodeError) {
                let code = try WordCodes.Code(parsing: String(slots[1]))
                return .shortCode(ShortCodeLink(server: server, name: name, code: code))
            } catch {
                throw InviteLinkError(
                    .invalidShortCode, part: .shortCode,
                    "The short code in that link cannot be read (\(error.code)). Ask for the link again.")
            }
        }
        let secret = try secret(slots[1], ordinal: "")
        let brandingKey = slots.count == 3 ? try brandingKey(slots[2]) : nil
        return .link(InviteLink(server: server, name: name, secret: secret, brandingKey: brandingKey))
    }

    private static func legacyE1(server: String, fragment: Substring) throws(InviteLinkError) -> InviteLink {
        let slots = fragment.split(separator: "~", omittingEmptySubsequences: false)
        guard slots.count <= 3 else {
            throw InviteLinkError(
                .extraSlot, part: .fragment,
                "That e1 link has \(slots.count) parts separated by \"~\"; it has at most 3.")
        }
        guard slots.count >= 2 else {
            throw InviteLinkError(
                .missingSlot, part: .name, "That e1 link has no name part after the secret (\"~NAME\").")
        }
        let names = ["secret", "name", "branding key"]
        for (index, slot) in slots.enumerated() where slot.isEmpty {
            throw InviteLinkError(
                .emptySlot, part: index == 0 ? .secret : index == 1 ? .name : .brandingKey,
                "The \(names[index]) part of that e1 link is empty.")
        }
        let secret = try secret(slots[0], ordinal: "", legacy: true)
        let name = try decodeName(slots[1])
        let brandingKey = slots.count == 3 ? try brandingKey(slots[2]) : nil
        return InviteLink(
            server: server, name: name, secret: secret, brandingKey: brandingKey, format: .legacyE1)
    }

    private static func base58(_ text: Substring, part: InviteLinkError.Part, noun: String)
        throws(InviteLinkError)
        -> [UInt8]
    {
        do throws(Base58.DecodeError) {
            return try Base58.decode(text)
        } catch {
            switch error {
            case .tooLong(let length):
                throw InviteLinkError(
                    .invalidBase58, part: part,
                    "The \(noun) in that link is \(length) characters long, far too long.")
            case .invalidCharacter(let offset):
                throw InviteLinkError(
                    .invalidBase58, part: part,
                    "The \(noun) in that link has a character that cannot be in it at position \(offset + 1) "
                        + "(links never contain 0, O, I or l). Copy the link again.")
            }
        }
    }

    /// The secret slot. Legacy links (`e1.` and raw) were minted with `T` in base64url (22
    /// characters, `-` `_` `0` `O` `I` `l` allowed): a canonical base64url text of 16 bytes is read
    /// that way there, anything else as base58. Current links are base58 only.
    private static func secret(_ text: Substring, ordinal: String, legacy: Bool = false)
        throws(InviteLinkError) -> LinkSecret
    {
        if legacy, text.utf8.count == LinkSecret.legacyTextLength,
            var bytes = Base64URL.decode(String(text)), bytes.count == LinkSecret.byteCount
        {
            defer { wipe(&bytes) }
            return LinkSecret(trusted: SecretBytes(bytes))
        }
        if legacy, text.utf8.contains(where: { Array("-_0OIl".utf8).contains($0) }) {
            throw InviteLinkError(
                .invalidSecret, part: .secret,
                "The secret in that link is not \(LinkSecret.legacyTextLength) characters of base64url: "
                    + "it may be cut off or changed. Copy the link again.")
        }
        var bytes = try base58(text, part: .secret, noun: "secret")
        defer { wipe(&bytes) }
        guard bytes.count == LinkSecret.byteCount else {
            throw InviteLinkError(
                .invalidSecret, part: .secret,
                "The secret in that link is \(bytes.count) bytes; it must be \(LinkSecret.byteCount). "
                    + "The link may be cut off or changed.")
        }
        return LinkSecret(trusted: SecretBytes(bytes))
    }

    private static func brandingKey(_ text: Substring) throws(InviteLinkError) -> BrandingKey {
        var bytes = try base58(text, part: .brandingKey, noun: "branding key")
        defer { wipe(&bytes) }
        guard bytes.count == BrandingKey.byteCount else {
            throw InviteLinkError(
                .invalidBrandingKey, part: .brandingKey,
                "The branding key in that link is \(bytes.count) bytes; it must be \(BrandingKey.byteCount).")
        }
        return BrandingKey(trusted: SecretBytes(bytes))
    }

    /// Strict percent-decoding of the name slot to UTF-8 text without control characters.
    static func decodeName(_ slot: Substring) throws(InviteLinkError) -> String {
        let name = try percentDecode(slot, part: .name, noun: "name")
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw InviteLinkError(
                .invalidName, part: .name, "The name in that link contains control characters.")
        }
        guard name.utf8.count <= MemberRecord.maximumNameByteCount else {
            throw InviteLinkError(
                .invalidName, part: .name,
                "The name in that link is \(name.utf8.count) bytes; names are at most "
                    + "\(MemberRecord.maximumNameByteCount).")
        }
        guard !name.trimmingWhitespace().isEmpty else {
            throw InviteLinkError(.emptySlot, part: .name, "The name slot of that link is blank.")
        }
        return name
    }

    /// Strict percent-decoding to UTF-8 text.
    private static func percentDecode(_ slot: Substring, part: InviteLinkError.Part, noun: String)
        throws(InviteLinkError) -> String
    {
        let input = Array(slot.utf8)
        var bytes: [UInt8] = []
        var index = 0
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < input.count, let high = hexValue(input[index + 1]),
                    let low = hexValue(input[index + 2])
                else {
                    throw InviteLinkError(
                        .invalidPercentEncoding, part: part,
                        "The \(noun) in that link has a \"%\" at position \(index + 1) that is not followed by "
                            + "two hex digits.")
                }
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(byte)
                index += 1
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw InviteLinkError(
                part == .name ? .invalidName : .notALink, part: part,
                "The \(noun) in that link is not valid UTF-8 text.")
        }
        return text
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Percent-encodes every byte except the unreserved `A–Z a–z 0–9 - . _ ~`, so `/` and `~`
    /// in a name can never be taken for delimiters.
    static func percentEncode(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            if scalar.isASCII
                && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                    || "-._~".unicodeScalars.contains(scalar))
            {
                output.unicodeScalars.append(scalar)
            } else {
                output +=
                    "%" + String(byte >> 4, radix: 16, uppercase: true)
                    + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return output
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
