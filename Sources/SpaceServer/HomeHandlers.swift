import CSodium
import Foundation
import PAKE
import SpaceModel

// The home API (`/api/home/...`, enabled by `eleven-server --home`; see API.md). An account is
// its key anchors: a device signs a fresh request (timestamp and nonce, never accepted twice) to
// get a short-lived session token; the vault is stored sealed with a version for compare-and-swap;
// each anchor holds its own sealed wrap of the vault key. Nothing stored here is readable.
extension SpaceService {
    /// Lifetime of a home session token, in seconds.
    static let homeSessionLifetime: Int64 = 600
    /// Largest sealed vault, in bytes.
    static let maximumVaultBytes = 6 << 20
    /// Most anchors (current and revoked) one account may have.
    static let maximumAnchors = 200

    /// `/api/home/account|session|vault|anchors|rotate|email-code|email-verify|emails`.
    func routeHome(_ request: APIRequest, _ rest: [Substring], method: String) throws -> APIResponse {
        guard configuration.homeEnabled, !rest.isEmpty else { throw Self.unknownRoute }
        if rest[0] == "approvals" {
            return try routeApprovals(request, Array(rest.dropFirst()), method: method)
        }
        guard rest.count == 1 else { throw Self.unknownRoute }
        let allowed: [String]
        switch rest[0] {
        case "account", "session", "rotate", "email-code", "email-verify": allowed = ["POST"]
        case "emails": allowed = ["POST", "DELETE"]
        case "vault": allowed = ["GET", "PUT"]
        case "anchors": allowed = ["GET", "POST"]
        default: throw Self.unknownRoute
        }
        guard allowed.contains(method) else {
            throw APIError(
                405, .methodNotAllowed, "Use \(allowed.joined(separator: " or ")) for this endpoint.")
        }
        switch (rest[0], method) {
        case ("account", _): return try createHomeAccount(request)
        case ("session", _): return try homeSession(request)
        case ("email-code", _): return try emailCode(request)
        case ("email-verify", _): return try emailVerify(request)
        default: break
        }
        let session = try homeAuthenticate(request)
        switch (rest[0], method) {
        case ("vault", "GET"): return try getVault(session)
        case ("vault", _): return try putVault(request, session)
        case ("anchors", "GET"): return try listAnchors(session)
        case ("anchors", _): return try enrolAnchor(request, session)
        case ("emails", "POST"): return try addEmail(request, session)
        case ("emails", _): return try removeEmail(request, session)
        default: return try rotate(request, session)
        }
    }

    // MARK: Signed requests

    /// Checks a proof's freshness and signature and records its nonce. Refuses, in this order: a
    /// timestamp outside the window (401 `signature_expired`), a bad signature (401
    /// `signature_invalid`), a nonce seen before (409 `replayed_signature`).
    func checkProof(
        _ proof: HomeProof, _ purpose: HomeProof.Purpose, payload: [UInt8], signingKey: SigningPublicKey
    ) throws {
        guard abs(proof.timestamp - now) <= HomeProof.window else {
            throw APIError.unauthorised(
                .signatureExpired,
                "The request was signed at a time too far from the server's clock; check this device's clock."
            )
        }
        do {
            try proof.verify(purpose, payload: payload, signingKey: signingKey)
        } catch {
            throw APIError.unauthorised(.signatureInvalid, "The request's signature does not verify.")
        }
        let hash = SHA256.hash(proof.anchor.bytes + proof.nonce)
        guard try store.recordHomeNonce(hash: hash, expiresAt: proof.timestamp + HomeProof.window, now: now)
        else {
            throw APIError.conflict(
                .replayedSignature, "That signed request was already used; sign a new one.")
        }
    }

    private func issueHomeSession(account: [UInt8], anchor: AnchorID, version: Int64) throws -> APIResponse {
        var raw = Self.randomBytes(32)
        defer { sodium_memzero(&raw, raw.count) }
        let expiresAt = now + Self.homeSessionLifetime
        try store.insertHomeSession(
            hash: Self.hashToken(raw), account: account, anchor: anchor, expiresAt: expiresAt, now: now)
        try store.touchHomeAnchor(anchor, now: now)
        return .json(
            HomeWire.Session(
                token: Base64URL.encode(raw), expiresAt: expiresAt, anchor: anchor, version: version),
            status: 201)
    }

    private func checkWrap(_ text: String, field: String) throws(APIError) -> [UInt8] {
        let wrap = try bytes(text, field: field)
        guard wrap.count == VaultKey.wrapByteCount else {
            throw APIError.badRequest(
                .invalidField, "Field \(field) must be \(VaultKey.wrapByteCount) bytes.")
        }
        return wrap
    }

    private func checkVault(_ text: String, generation: Int64) throws(APIError) -> [UInt8] {
        let vault = try bytes(text, field: "vault")
        guard vault.count <= Self.maximumVaultBytes else {
            throw APIError(
                413, .vaultTooLarge, "The vault is larger than \(Self.maximumVaultBytes) bytes.")
        }
        guard VaultKey.generation(of: vault) == generation else {
            throw APIError.badRequest(
                .invalidField, "Field vault is not a sealed vault of generation \(generation).")
        }
        return vault
    }

    // MARK: Account and session

    func createHomeAccount(_ request: APIRequest) throws -> APIResponse {
        let body = try decode(HomeWire.CreateAccountRequest.self, from: request)
        let wrap = try checkWrap(body.anchor.wrap, field: "anchor.wrap")
        guard body.generation >= 1 else {
            throw APIError.badRequest(.invalidField, "Field generation must be at least 1.")
        }
        let vault = try checkVault(body.vault, generation: body.generation)
        guard body.proof.anchor == body.anchor.id else {
            throw APIError.badRequest(.invalidField, "The proof must be signed by the new device.")
        }
        let payload = HomeWire.CreateAccountRequest.payload(
            anchor: body.anchor, generation: body.generation, vault: vault)
        try checkProof(
            body.proof, .createAccount, payload: payload, signingKey: body.anchor.publicKeys.signing)
        guard try store.homeAnchor(body.anchor.id) == nil else {
            throw APIError.conflict(.deviceExists, "This device already belongs to an account.")
        }
        let email = try body.emailTicket.map { text throws(APIError) in try redeemEmailTicket(text) }
        let account = Self.randomBytes(16)
        try store.insertHomeAccount(id: account, generation: body.generation, vault: vault, now: now)
        try store.insertHomeAnchor(body.anchor, wrap: wrap, account: account, now: now)
        // A second account for the same address is what the anchor exists to prevent.
        if let email { try attachEmail(email, account: account) }
        return try issueHomeSession(account: account, anchor: body.anchor.id, version: 1)
    }

    /// The anchor named by a proof, or 401 `unknown_device` / 403 `device_revoked`.
    private func liveAnchor(_ id: AnchorID) throws -> HomeAnchorRow {
        guard let anchor = try store.homeAnchor(id) else {
            throw APIError.unauthorised(.unknownDevice, "This device is not signed in to any account here.")
        }
        guard anchor.revokedAt == nil else {
            throw APIError.forbidden(
                .deviceRevoked,
                "This device was removed from its account. Link it again from another device.")
        }
        return anchor
    }

    func homeSession(_ request: APIRequest) throws -> APIResponse {
        let body = try decode(HomeWire.SessionRequest.self, from: request)
        let anchor = try liveAnchor(body.proof.anchor)
        try checkProof(body.proof, .session, payload: [], signingKey: anchor.keys.publicKeys.signing)
        guard let account = try store.homeAccount(anchor.account) else {
            throw APIError(500, .internal, "This device's account is missing.")
        }
        return try issueHomeSession(account: anchor.account, anchor: anchor.id, version: account.version)
    }

    /// The session behind a bearer token: 401 `session_missing`, `session_invalid`,
    /// `session_expired`; 403 `device_revoked`.
    func homeAuthenticate(_ request: APIRequest) throws -> (
        account: HomeAccountRow, anchor: HomeAnchorRow
    ) {
        guard let header = request.header("Authorization"), header.hasPrefix("Bearer ") else {
            throw APIError.unauthorised(
                .sessionMissing, "Sign in first: this request needs a session token.")
        }
        guard let raw = Base64URL.decode(String(header.dropFirst(7))), raw.count == 32,
            let session = try store.homeSession(hash: Self.hashToken(raw))
        else {
            throw APIError.unauthorised(
                .sessionInvalid, "That session token is not valid here. Sign in again.")
        }
        guard now < session.expiresAt else {
            throw APIError.unauthorised(.sessionExpired, "That session has expired. Sign in again.")
        }
        let anchor = try liveAnchor(session.anchor)
        guard let account = try store.homeAccount(session.account) else {
            throw APIError(500, .internal, "This session's account is missing.")
        }
        return (account, anchor)
    }

    // MARK: Vault

    func getVault(_ session: (account: HomeAccountRow, anchor: HomeAnchorRow)) throws -> APIResponse {
        .json(
            HomeWire.Vault(
                version: session.account.version, generation: session.account.generation,
                vault: Base64URL.encode(session.account.vault), wrap: Base64URL.encode(session.anchor.wrap)))
    }

    private func checkVersions(_ account: HomeAccountRow, version: Int64, generation: Int64) throws(APIError)
    {
        guard generation == account.generation else {
            throw APIError.conflict(
                .keyRotated,
                "The vault key changed (generation \(account.generation)); fetch the vault again.")
        }
        guard version == account.version else {
            throw APIError.conflict(
                .versionConflict,
                "The vault changed since version \(version) (it is at \(account.version)); fetch it and merge."
            )
        }
    }

    func putVault(_ request: APIRequest, _ session: (account: HomeAccountRow, anchor: HomeAnchorRow)) throws
        -> APIResponse
    {
        let body = try decode(HomeWire.PutVault.self, from: request)
        let vault = try checkVault(body.vault, generation: body.generation)
        try checkVersions(session.account, version: body.version, generation: body.generation)
        let version = session.account.version + 1
        try store.updateHomeVault(
            account: session.account.id, version: version, generation: body.generation, vault: vault, now: now
        )
        return .json(HomeWire.Stored(version: version))
    }

    // MARK: Anchors

    func listAnchors(_ session: (account: HomeAccountRow, anchor: HomeAnchorRow)) throws -> APIResponse {
        let anchors = try store.homeAnchors(account: session.account.id).map {
            HomeWire.Anchor(
                id: $0.id, kind: $0.keys.kind, publicKeys: $0.keys.publicKeys, createdAt: $0.createdAt,
                lastUsedAt: $0.lastUsedAt, revokedAt: $0.revokedAt, isCaller: $0.id == session.anchor.id)
        }
        return .json(HomeWire.AnchorList(anchors: anchors, generation: session.account.generation))
    }

    func enrolAnchor(_ request: APIRequest, _ session: (account: HomeAccountRow, anchor: HomeAnchorRow))
        throws
        -> APIResponse
    {
        let body = try decode(HomeWire.EnrolRequest.self, from: request)
        let wrap = try checkWrap(body.anchor.wrap, field: "anchor.wrap")
        guard body.generation == session.account.generation else {
            throw APIError.conflict(
                .keyRotated,
                "The vault key changed (generation \(session.account.generation)); wrap it again.")
        }
        guard try store.homeAnchor(body.anchor.id) == nil else {
            throw APIError.conflict(.deviceExists, "That device is already enrolled.")
        }
        guard try store.homeAnchors(account: session.account.id).count < Self.maximumAnchors else {
            throw APIError.conflict(
                .tooManyDevices, "This account has too many devices; remove some first.")
        }
        try store.insertHomeAnchor(body.anchor, wrap: wrap, account: session.account.id, now: now)
        return .json(HomeWire.Stored(version: session.account.version), status: 201)
    }

    func rotate(_ request: APIRequest, _ session: (account: HomeAccountRow, anchor: HomeAnchorRow)) throws
        -> APIResponse
    {
        let body = try decode(HomeWire.RotateRequest.self, from: request)
        let vault = try checkVault(body.vault, generation: body.generation)
        try checkVersions(session.account, version: body.version, generation: session.account.generation)
        guard body.generation == session.account.generation + 1 else {
            throw APIError.badRequest(
                .invalidField, "Field generation must be \(session.account.generation + 1) (the next one).")
        }
        let live = try store.homeAnchors(account: session.account.id).filter { $0.revokedAt == nil }
        let liveIDs = Set(live.map(\.id))
        for id in body.revoke {
            guard liveIDs.contains(id) else {
                throw APIError.notFound(.unknownDevice, "There is no current device \(id) in this account.")
            }
            guard id != session.anchor.id else {
                throw APIError.conflict(
                    .cannotRemoveSelf, "A device cannot remove itself; use another device.")
            }
        }
        let remaining = liveIDs.subtracting(body.revoke)
        var wraps: [AnchorID: [UInt8]] = [:]
        for item in body.wraps { wraps[item.anchor] = try checkWrap(item.wrap, field: "wraps.wrap") }
        guard Set(wraps.keys) == remaining, wraps.count == body.wraps.count else {
            throw APIError.conflict(
                .devicesChanged, "The wraps must cover exactly the remaining devices; list them again.")
        }
        for id in body.revoke { try store.revokeHomeAnchor(id, now: now) }
        for (id, wrap) in wraps { try store.setHomeWrap(id, wrap: wrap) }
        let version = session.account.version + 1
        try store.updateHomeVault(
            account: session.account.id, version: version, generation: body.generation, vault: vault, now: now
        )
        return .json(HomeWire.Stored(version: version))
    }
}
