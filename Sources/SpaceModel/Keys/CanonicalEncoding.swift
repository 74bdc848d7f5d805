/// Builds the exact bytes that are signed, hashed or bound as associated data.
///
/// The first field is a domain string naming what is encoded and its version, so a signature made
/// for one purpose can never be valid for another. Every field is prefixed with its length as a
/// 4-byte big-endian integer, so no two different field lists encode to the same bytes.
package struct CanonicalEncoder {
    package private(set) var bytes: [UInt8] = []

    package init(domain: String) {
        append(domain)
    }

    package mutating func append(_ field: some Collection<UInt8>) {
        let count = UInt32(field.count)
        bytes.append(UInt8(truncatingIfNeeded: count >> 24))
        bytes.append(UInt8(truncatingIfNeeded: count >> 16))
        bytes.append(UInt8(truncatingIfNeeded: count >> 8))
        bytes.append(UInt8(truncatingIfNeeded: count))
        bytes.append(contentsOf: field)
    }

    package mutating func append(_ text: String) {
        append(Array(text.utf8))
    }

    package mutating func append(_ value: UInt64) {
        append((0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64($0))) })
    }
}

/// Domain strings; each names one signed or bound structure and its version.
package enum Domain {
    package static let keyWrap = "eleven/key-wrap/v1"
    package static let keyWrapBundle = "eleven/key-wrap-bundle/v1"
    package static let keyWrapBundleKey = "eleven/key-wrap-bundle-key/v1"
    package static let keyWrapBundleEntry = "eleven/key-wrap-bundle-entry/v1"
    package static let messageAssociatedData = "eleven/message-aad/v1"
    package static let messageSignature = "eleven/message-signature/v1"
    package static let membershipEvent = "eleven/membership-event/v1"
    package static let membershipEventHash = "eleven/membership-event-hash/v1"
    package static let inboxNote = "eleven/inbox-note/v1"
    package static let memberName = "eleven/member-name/v1"
    package static let memberNameKey = "eleven/member-name-key/v1"
    package static let signIn = "eleven/sign-in/v1"
    package static let signInChallenge = "eleven/sign-in-challenge/v1"
    package static let homeRequest = "eleven/home-request/v1"
    package static let homeAnchorIndex = "eleven/home-anchor-index/v1"
    package static let homeAccount = "eleven/home-account/v1"
    package static let vault = "eleven/vault/v1"
    package static let vaultKeyProof = "eleven/vault-key-proof/v1"
    package static let homeEmailIndex = "eleven/home-email-index/v1"
    package static let deviceApproval = "eleven/device-approval/v1"
    package static let deviceApprovalCommitment = "eleven/device-approval-commitment/v1"
    package static let deviceApprovalRequest = "eleven/device-approval-request/v1"
}
