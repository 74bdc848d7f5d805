import PAKE

/// JSON bodies of the home API (`/api/home/...`, see `Sources/SpaceServer/API.md`), shared by
/// `eleven-server --home` and the client. Byte strings are base64url without padding.
public enum HomeWire {
    /// A key anchor as uploaded: its blind id, its kind, its public keys, and its wrap of the
    /// current vault key.
    public struct AnchorUpload: Codable, Sendable, Equatable {
        public let id: AnchorID
        public let kind: AnchorKind
        public let publicKeys: MemberPublicKeys
        public let wrap: String

        public init(id: AnchorID, keys: AnchorKeys, wrap: [UInt8]) {
            self.id = id
            kind = keys.kind
            publicKeys = keys.publicKeys
            self.wrap = Base64URL.encode(wrap)
        }

        public var keys: AnchorKeys { AnchorKeys(kind: kind, publicKeys: publicKeys) }
    }

    /// `POST /api/home/account`: the first anchor, the first vault, and a proof over both.
    public struct CreateAccountRequest: Codable, Sendable {
        public let anchor: AnchorUpload
        public let generation: Int64
        public let vault: String
        public let proof: HomeProof
        /// A ticket from `POST /api/home/email-verify`: the proved address is attached to the new
        /// account.
        public let emailTicket: String?

        public init(
            anchor: AnchorUpload, generation: Int64, vault: [UInt8], proof: HomeProof,
            emailTicket: String? = nil
        ) {
            self.anchor = anchor
            self.generation = generation
            self.vault = Base64URL.encode(vault)
            self.proof = proof
            self.emailTicket = emailTicket
        }

        /// The bytes the proof signs besides its own fields.
        public static func payload(anchor: AnchorUpload, generation: Int64, vault: [UInt8]) -> [UInt8] {
            var encoder = CanonicalEncoder(domain: Domain.homeAccount)
            encoder.append(anchor.id.bytes)
            encoder.append(anchor.kind.rawValue)
            encoder.append(anchor.publicKeys.text)
            encoder.append(anchor.wrap)
            encoder.append(UInt64(bitPattern: generation))
            encoder.append(vault)
            return encoder.bytes
        }
    }

    /// `POST /api/home/session`: a proof for purpose `session` over an empty payload.
    public struct SessionRequest: Codable, Sendable {
        public let proof: HomeProof

        public init(proof: HomeProof) { self.proof = proof }
    }

    /// A short-lived session token (bearer) for one anchor.
    public struct Session: Codable, Sendable {
        public let token: String
        public let expiresAt: Int64
        public let anchor: AnchorID
        /// The vault version (for a new account: 1).
        public let version: Int64

        public init(token: String, expiresAt: Int64, anchor: AnchorID, version: Int64) {
            self.token = token
            self.expiresAt = expiresAt
            self.anchor = anchor
            self.version = version
        }
    }

    /// `GET /api/home/vault`: the sealed vault, its version and generation, and the caller's
    /// wrap of the vault key.
    public struct Vault: Codable, Sendable {
        public let version: Int64
        public let generation: Int64
        public let vault: String
        public let wrap: String

        public init(version: Int64, generation: Int64, vault: String, wrap: String) {
            self.version = version
            self.generation = generation
            self.vault = vault
            self.wrap = wrap
        }
    }

    /// `PUT /api/home/vault`: replace the vault if it is still at `version` (compare-and-swap).
    public struct PutVault: Codable, Sendable {
        public let version: Int64
        public let generation: Int64
        public let vault: String

        public init(version: Int64, generation: Int64, vault: [UInt8]) {
            self.version = version
            self.generation = generation
            self.vault = Base64URL.encode(vault)
        }
    }

    /// The new version after a write.
    public struct Stored: Codable, Sendable {
        public let version: Int64

        public init(version: Int64) { self.version = version }
    }

    /// One anchor as listed.
    public struct Anchor: Codable, Sendable {
        public let id: AnchorID
        public let kind: AnchorKind
        public let publicKeys: MemberPublicKeys
        public let createdAt: Int64
        public let lastUsedAt: Int64?
        public let revokedAt: Int64?
        /// Whether this is the anchor making the request.
        public let isCaller: Bool

        public init(
            id: AnchorID, kind: AnchorKind, publicKeys: MemberPublicKeys, createdAt: Int64,
            lastUsedAt: Int64?,
            revokedAt: Int64?, isCaller: Bool
        ) {
            self.id = id
            self.kind = kind
            self.publicKeys = publicKeys
            self.createdAt = createdAt
            self.lastUsedAt = lastUsedAt
            self.revokedAt = revokedAt
            self.isCaller = isCaller
        }

        public var keys: AnchorKeys { AnchorKeys(kind: kind, publicKeys: publicKeys) }
    }

    public struct AnchorList: Codable, Sendable {
        public let anchors: [Anchor]
        public let generation: Int64

        public init(anchors: [Anchor], generation: Int64) {
            self.anchors = anchors
            self.generation = generation
        }
    }

    /// `POST /api/home/anchors`: enrol another anchor with a wrap of the current key.
    public struct EnrolRequest: Codable, Sendable {
        public let anchor: AnchorUpload
        public let generation: Int64

        public init(anchor: AnchorUpload, generation: Int64) {
            self.anchor = anchor
            self.generation = generation
        }
    }

    /// A wrap of a new vault key for one remaining anchor.
    public struct AnchorWrap: Codable, Sendable {
        public let anchor: AnchorID
        public let wrap: String

        public init(anchor: AnchorID, wrap: [UInt8]) {
            self.anchor = anchor
            self.wrap = Base64URL.encode(wrap)
        }
    }

    /// `POST /api/home/rotate`: revoke anchors, and in the same step replace the vault key
    /// (generation + 1), every remaining anchor's wrap, and the vault (compare-and-swap).
    public struct RotateRequest: Codable, Sendable {
        public let revoke: [AnchorID]
        public let version: Int64
        public let generation: Int64
        public let vault: String
        public let wraps: [AnchorWrap]

        public init(
            revoke: [AnchorID], version: Int64, generation: Int64, vault: [UInt8], wraps: [AnchorWrap]
        ) {
            self.revoke = revoke
            self.version = version
            self.generation = generation
            self.vault = Base64URL.encode(vault)
            self.wraps = wraps
        }
    }

    /// `POST /api/home/email-code`: mail a sign-in code to `address`.
    public struct EmailCodeRequest: Codable, Sendable {
        public let address: String

        public init(address: String) { self.address = address }
    }

    /// The same answer whether or not an account has the address.
    public struct EmailCodeSent: Codable, Sendable {
        public let challenge: String
        public let expiresAt: Int64

        public init(challenge: String, expiresAt: Int64) {
            self.challenge = challenge
            self.expiresAt = expiresAt
        }
    }

    /// `POST /api/home/email-verify`: the code from the mail.
    public struct EmailVerifyRequest: Codable, Sendable {
        public let challenge: String
        public let code: String

        public init(challenge: String, code: String) {
            self.challenge = challenge
            self.code = code
        }
    }

    /// The address is proved: a single-use ticket standing for it, and (only now) whether an
    /// account signs in with it.
    public struct EmailProved: Codable, Sendable {
        public let ticket: String
        public let expiresAt: Int64
        public let hasAccount: Bool

        public init(ticket: String, expiresAt: Int64, hasAccount: Bool) {
            self.ticket = ticket
            self.expiresAt = expiresAt
            self.hasAccount = hasAccount
        }
    }

    /// `POST /api/home/emails` (signed in): attach a proved address to this account.
    public struct EmailAttach: Codable, Sendable {
        public let ticket: String

        public init(ticket: String) { self.ticket = ticket }
    }

    /// `DELETE /api/home/emails` (signed in): detach an address from this account.
    public struct EmailRemove: Codable, Sendable {
        public let address: String

        public init(address: String) { self.address = address }
    }

    public struct EmailChanged: Codable, Sendable {
        public let changed: Bool

        public init(changed: Bool) { self.changed = changed }
    }

    /// `POST /api/home/approvals`: a new device that proved an address asks the account's
    /// devices to approve it. Signed (purpose `approval`) by the device's own key; the proof's
    /// anchor is ``approvalAnchor(_:)`` of those keys.
    public struct ApprovalRequest: Codable, Sendable {
        public let ticket: String
        public let publicKeys: MemberPublicKeys
        public let commitment: String
        public let proof: HomeProof

        public init(ticket: String, publicKeys: MemberPublicKeys, commitment: [UInt8], proof: HomeProof) {
            self.ticket = ticket
            self.publicKeys = publicKeys
            self.commitment = Base64URL.encode(commitment)
            self.proof = proof
        }

        public static func payload(publicKeys: MemberPublicKeys, commitment: [UInt8]) -> [UInt8] {
            var encoder = CanonicalEncoder(domain: Domain.deviceApprovalRequest)
            encoder.append(publicKeys.text)
            encoder.append(commitment)
            return encoder.bytes
        }
    }

    /// The id a new device signs its approval requests under (it has no anchor id yet).
    public static func approvalAnchor(_ keys: MemberPublicKeys) -> AnchorID {
        // Length is right by construction.
        try! AnchorID(bytes: SHA256.hash(Array(keys.text.utf8)).prefix(AnchorID.byteCount))
    }

    public struct ApprovalCreated: Codable, Sendable {
        public let id: String
        public let expiresAt: Int64

        public init(id: String, expiresAt: Int64) {
            self.id = id
            self.expiresAt = expiresAt
        }
    }

    /// `POST /api/home/approvals/ID` by the new device (signed, purpose `approval`, over the id
    /// and the reveal): asks how its request stands and, once offered, reveals its ephemeral key.
    public struct ApprovalPoll: Codable, Sendable {
        public let proof: HomeProof
        public let reveal: String?
        public let nonce: String?
        /// The device's name, sealed under the agreement.
        public let label: String?

        public init(proof: HomeProof, reveal: [UInt8]?, nonce: [UInt8]?, label: [UInt8]?) {
            self.proof = proof
            self.reveal = reveal.map(Base64URL.encode)
            self.nonce = nonce.map(Base64URL.encode)
            self.label = label.map(Base64URL.encode)
        }

        public static func payload(id: String, reveal: String?, nonce: String?, label: String?) -> [UInt8] {
            var encoder = CanonicalEncoder(domain: Domain.deviceApprovalRequest)
            for field in [id, reveal ?? "", nonce ?? "", label ?? ""] { encoder.append(field) }
            return encoder.bytes
        }
    }

    /// One approval as the server holds it. `state`: `waiting` (no offer yet), `offered`,
    /// `approved` (with the sealed `grant`), `declined`.
    public struct Approval: Codable, Sendable {
        public let id: String
        public let publicKeys: MemberPublicKeys
        public let commitment: String
        public let createdAt: Int64
        public let state: String
        public let offer: String?
        public let reveal: String?
        public let nonce: String?
        public let label: String?
        public let grant: String?

        public init(
            id: String, publicKeys: MemberPublicKeys, commitment: String, createdAt: Int64, state: String,
            offer: String?, reveal: String?, nonce: String?, label: String?, grant: String?
        ) {
            self.id = id
            self.publicKeys = publicKeys
            self.commitment = commitment
            self.createdAt = createdAt
            self.state = state
            self.offer = offer
            self.reveal = reveal
            self.nonce = nonce
            self.label = label
            self.grant = grant
        }
    }

    /// `GET /api/home/approvals` (signed in): requests waiting for this account's devices.
    public struct ApprovalList: Codable, Sendable {
        public let approvals: [Approval]

        public init(approvals: [Approval]) { self.approvals = approvals }
    }

    /// `POST /api/home/approvals/ID/offer` (signed in): the enrolled device's ephemeral key.
    public struct ApprovalOffer: Codable, Sendable {
        public let offer: String

        public init(offer: [UInt8]) { self.offer = Base64URL.encode(offer) }
    }

    /// `POST /api/home/approvals/ID/answer` (signed in): the sealed grant, or nil to decline.
    public struct ApprovalAnswer: Codable, Sendable {
        public let grant: String?

        public init(grant: [UInt8]?) { self.grant = grant.map(Base64URL.encode) }
    }
}
