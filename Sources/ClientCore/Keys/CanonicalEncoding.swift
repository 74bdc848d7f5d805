/// Builds the exact bytes that are signed, hashed or bound as associated data.
///
/// The first field is a domain string naming what is encoded and its version, so a signature made
/// for one purpose can never be valid for another. Every field is prefixed with its length as a
/// 4-byte big-endian integer, so no two different field lists encode to the same bytes.
struct CanonicalEncoder {
    private(set) var bytes: [UInt8] = []

    init(domain: String) {
        append(domain)
    }

    mutating func append(_ field: some Collection<UInt8>) {
        let count = UInt32(field.count)
        bytes.append(UInt8(truncatingIfNeeded: count >> 24))
        bytes.append(UInt8(truncatingIfNeeded: count >> 16))
        bytes.append(UInt8(truncatingIfNeeded: count >> 8))
        bytes.append(UInt8(truncatingIfNeeded: count))
        bytes.append(contentsOf: field)
    }

    mutating func append(_ text: String) {
        append(Array(text.utf8))
    }

    mutating func append(_ value: UInt64) {
        append((0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64($0))) })
    }
}

/// Domain strings; each names one signed or bound structure and its version.
enum Domain {
    static let keyWrap = "eleven/key-wrap/v1"
    static let messageAssociatedData = "eleven/message-aad/v1"
    static let messageSignature = "eleven/message-signature/v1"
    static let membershipEvent = "eleven/membership-event/v1"
    static let membershipEventHash = "eleven/membership-event-hash/v1"
    static let inboxNote = "eleven/inbox-note/v1"
    static let signIn = "eleven/sign-in/v1"
    static let homeRequest = "eleven/home-request/v1"
    static let homeAnchorIndex = "eleven/home-anchor-index/v1"
    static let homeAccount = "eleven/home-account/v1"
    static let vault = "eleven/vault/v1"
    static let vaultKeyProof = "eleven/vault-key-proof/v1"
}
