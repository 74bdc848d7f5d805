import Foundation
import JoinProtocol
import PAKE
import SpaceModel
import Support

/// A problem with the home account that is neither the network nor a local file: a stable
/// ``code`` and a message a person can act on.
public struct HomeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable codes; the raw values are what `--json` prints (`docs/errors.md`).
    public enum Code: String, CaseIterable, Sendable {
        case alreadySignedIn = "already_signed_in"
        case ambiguousRequest = "ambiguous_request"
        case busy
        case cannotRemoveSelf = "cannot_remove_self"
        case declined
        case invalidDeviceKey = "invalid_device_key"
        case invalidGrant = "invalid_grant"
        case keyMismatch = "key_mismatch"
        case noRequest = "no_request"
        case notSignedIn = "not_signed_in"
        case timedOut = "timed_out"
        case unknownCredential = "unknown_credential"
        case unknownDevice = "unknown_device"
        case vaultKeyUnauthenticated = "vault_key_unauthenticated"
        case vaultRolledBack = "vault_rolled_back"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static let notSignedIn = HomeError(
        .notSignedIn, "This device is not signed in. Run `eleven signin --server URL` to save your spaces."
    )

    /// The home server handed out a vault key that no device of the account made (a substituted
    /// wrap, another account's vault, a generation it made up).
    static let unauthenticatedKey = HomeError(
        .vaultKeyUnauthenticated,
        "Your home server sent saved spaces that none of your devices locked: it may have been tampered with. "
            + "Nothing was uploaded, and the spaces on this device are unchanged.")

    /// The home server served an older vault or key generation than this device already saw.
    static let rolledBack = HomeError(
        .vaultRolledBack,
        "Your home server sent an older copy of your saved spaces than this device has already seen: "
            + "it may have been tampered with. Nothing was uploaded, and the spaces on this device are unchanged."
    )

    /// While linking, the home server handed out something other than what the other device granted.
    static let linkMismatch = HomeError(
        .keyMismatch,
        "The home server gave this device something other than what your other device sent. Nothing was used."
    )
}

/// What a device trusts about its vault (in `home.json`): the highest key generation it has
/// authenticated, that key's proof (``VaultKey/proof(accountKey:)``), and the highest vault
/// sequence it has seen. A vault the home server serves below any of them is a rollback.
public struct VaultPin: Codable, Sendable, Equatable {
    public var generation: Int64
    public var keyProof: String
    public var sequence: UInt64
}

/// This device's home account (`home.json`, private): where the home server is, the device's
/// anchor id, the account key, a cached session, and whether local changes wait to be pushed.
public struct HomeState: Codable, Sendable {
    public var server: String
    public var anchor: AnchorID
    public var accountKey: String
    public var session: String?
    public var sessionExpiresAt: Int64?
    /// Local changes not yet on the home server (the offline queue).
    public var pending: Bool
    /// The vault key and copy this device trusts; nil until its first sync since keys are proven.
    public var pin: VaultPin? = nil
}

/// The device's copy of the vault (`vault.json`, private): the merged document as last synced
/// plus local edits, and the tag this device stamps its edits with.
struct LocalVault: Codable, Sendable {
    var device: String
    var document: VaultDocument
}

/// What a sync did.
public struct SyncReport: Sendable, Equatable {
    /// Live spaces after the sync.
    public let spaces: Int
    /// Whether this device's changes were written to the home server.
    public let pushed: Bool
    /// The vault version on the home server now.
    public let version: Int64
    /// The generation of the vault key (it grows each time a device is removed).
    public let generation: Int64
}

/// What `eleven devices` shows for one key anchor.
public struct DeviceEntry: Sendable, Equatable {
    public let id: AnchorID
    public let kind: AnchorKind
    public let label: String
    public let createdAt: Int64
    public let lastUsedAt: Int64?
    public let isThisDevice: Bool
    /// False when the id is not the account's blind index of the listed keys: the home server
    /// made it up. Such anchors get no key wraps and are removed at the next rotation.
    public let isGenuine: Bool
}

/// Vault sync and device linking for one state directory (blocking I/O; the merge rules are in
/// ``VaultDocument``). Local edits are recorded first and saved, so a change made while the home
/// server is unreachable stays queued (`pending`) and is pushed by the next sync.
public struct HomeSync: Sendable {
    public let state: LocalState
    /// The time its signed requests carry and its session expiry is checked against (injected
    /// so tests can move it).
    public var clock: any WallClock = SystemClock()
    /// Compare-and-swap attempts before giving up.
    public var attempts = 8

    static let homeFile = "home.json"
    static let deviceKeyFile = "home-device.key"
    static let vaultFile = "vault.json"

    public init(state: LocalState) {
        self.state = state
    }

    var directory: StateDirectory { state.directory }

    // MARK: Local files

    /// The home account, or nil when this device is not signed in.
    public func home() throws(LocalStateError) -> HomeState? {
        try readJSON(HomeState.self, Self.homeFile)
    }

    func save(_ home: HomeState) throws(LocalStateError) { try writeJSON(home, Self.homeFile) }

    private func readJSON<T: Decodable>(_ type: T.Type, _ name: String) throws(LocalStateError) -> T? {
        try directory.prepare()
        guard let bytes = try directory.read(name) else { return nil }
        guard let value = try? JSONDecoder().decode(type, from: Data(bytes)) else {
            throw LocalStateError(
                .corrupt, "\(directory.file(name)) is damaged. Move it away and sign in again.")
        }
        return value
    }

    func writeJSON(_ value: some Encodable, _ name: String) throws(LocalStateError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else {
            throw LocalStateError(.unwritable, "could not encode \(name)")
        }
        try directory.write(name, Array(data))
    }

    /// The device's home key (its anchor), made on first use.
    public func deviceKey() throws(LocalStateError) -> DeviceIdentity {
        try directory.locked { () throws(LocalStateError) in try loadDeviceKey() }
    }

    private func loadDeviceKey() throws(LocalStateError) -> DeviceIdentity {
        if let bytes = try directory.read(Self.deviceKeyFile) {
            do throws(KeyModelError) {
                return try DeviceIdentity(storedForm: SecretBytes(bytes))
            } catch {
                // The next step, as for a damaged home.json: the key and the sign-in go together.
                throw LocalStateError(
                    .corrupt,
                    "\(directory.file(Self.deviceKeyFile)) is damaged. Move it and \(Self.homeFile) away "
                        + "and sign in again (`eleven signin`).")
            }
        }
        let key = DeviceIdentity.generate()
        try directory.write(Self.deviceKeyFile, key.storedForm())
        return key
    }

    func localVault() throws(LocalStateError) -> LocalVault {
        if let vault = try readJSON(LocalVault.self, Self.vaultFile) { return vault }
        return LocalVault(device: Base64URL.encode(SecretBytes.randomBytes(9)), document: VaultDocument())
    }

    /// This device's own identity, as the vault stores identities.
    private func localIdentityText() throws(LocalStateError) -> String? {
        guard try directory.read(LocalState.identityFile) != nil else { return nil }
        return Base64URL.encode(try state.identity(create: false).identity.storedForm().unredactedBytes())
    }

    /// `spaces.json` as vault entries: identity filled in, "not starred" as nil.
    private func localSpaces() throws(LocalStateError) -> [SavedSpace] {
        let own = try localIdentityText()
        return try state.spaces().spaces.map { space in
            var space = space
            space.identityKey = space.identityKey ?? own
            if space.starred == false { space.starred = nil }
            return space
        }
    }

    /// Writes the document's spaces to `spaces.json` (before `vault.json`, so a crash in between
    /// only re-records the same content as local edits).
    private func apply(_ document: VaultDocument) throws(LocalStateError) {
        let own = try localIdentityText()
        try state.updateSpaces { saved in
            saved.spaces = document.spaces.map { space in
                var space = space
                if space.identityKey == own { space.identityKey = nil }
                return space
            }
            if let current = saved.current, !saved.spaces.contains(where: { $0.space == current }) {
                saved.current = saved.spaces.last?.space
            }
            if saved.current == nil { saved.current = saved.spaces.last?.space }
        }
    }

    /// Records edits of `spaces.json` in the local vault (new stamps, tombstones) and marks them
    /// pending when signed in. Returns whether anything changed.
    @discardableResult
    public func recordLocalChanges() throws(LocalStateError) -> Bool {
        try record().changed
    }

    /// ``recordLocalChanges()`` returning the local vault it saved.
    private func record() throws(LocalStateError) -> (vault: LocalVault, changed: Bool, inOrder: Bool) {
        try directory.locked { () throws(LocalStateError) in try recordLocked() }
    }

    private func recordLocked() throws(LocalStateError) -> (vault: LocalVault, changed: Bool, inOrder: Bool) {
        var local = try localVault()
        let spaces = try localSpaces()
        let changed = local.document.absorb(spaces, device: local.device)
        let inOrder = spaces.map(\.space) == local.document.spaces.map(\.space)
        let missing = access(directory.file(Self.vaultFile), F_OK) != 0
        if changed || missing {
            try writeJSON(local, Self.vaultFile)
        }
        if changed, var home = try home(), !home.pending {
            home.pending = true
            try save(home)
        }
        return (local, changed, inOrder)
    }

    /// Stars or unstars a saved space (recorded locally; push with ``sync()``).
    public func star(_ space: SpaceID, _ starred: Bool) throws {
        try directory.locked { () throws(LocalStateError) in
            let found = try state.updateSpaces { saved in
                guard let index = saved.spaces.firstIndex(where: { $0.space == space }) else { return false }
                saved.spaces[index].starred = starred ? true : nil
                return true
            }
            if found { try recordLocalChanges() }
        }
    }

    /// Moves a saved space to `index` (0-based) in the person's order.
    public func move(_ space: SpaceID, to index: Int) throws {
        try directory.locked { () throws(LocalStateError) in
            var local = try record().vault
            guard local.document.move(space, to: index, device: local.device) else { return }
            try apply(local.document)
            try writeJSON(local, Self.vaultFile)
            if var home = try home() {
                home.pending = true
                try save(home)
            }
        }
    }

    // MARK: Sessions

    /// A client with a live session (cached in `home.json`, renewed with a signed request).
    private func client(_ home: inout HomeState, renew: Bool = false) throws -> HomeClient {
        var client = try HomeClient(server: home.server)
        let time = clock.seconds()
        if !renew, let token = home.session, let expiry = home.sessionExpiresAt, expiry > time + 30 {
            client.use(session: token)
            return client
        }
        let key = try deviceKey()
        let session = try client.session(
            HomeWire.SessionRequest(
                proof: key.homeProof(.session, anchor: home.anchor, payload: [], now: time)))
        home.session = session.token
        home.sessionExpiresAt = session.expiresAt
        try save(home)
        client.use(session: session.token)
        return client
    }

    /// Runs `body` with a session, starting a new one once if the cached one was refused.
    func withSession<T>(_ home: inout HomeState, _ body: (HomeClient) throws -> T) throws -> T {
        let first = try client(&home)
        do {
            return try body(first)
        } catch let error as SpaceClientError where error.status == 401 && error.typedCode.isSessionEnded {
            return try body(try client(&home, renew: true))
        }
    }

    /// The remote vault opened with this device's wrap, accepted only once
    /// ``authenticate(_:_:accountKey:pin:)`` passed against `home`. Returns the pin to keep.
    func pull(_ client: HomeClient, trusting home: HomeState) throws -> (
        HomeWire.Vault, VaultKey, VaultDocument, VaultPin
    ) {
        let remote = try client.vault()
        let key = try deviceKey().unwrapVaultKey(Base64URL.decode(remote.wrap) ?? [])
        let document = try VaultDocument(decoding: try key.open(Base64URL.decode(remote.vault) ?? []))
        let pin = try Self.authenticate(
            key, document, accountKey: AccountKey(base64URL: home.accountKey), pin: home.pin)
        return (remote, key, document, pin)
    }

    /// Checks that a key and vault the home server served were made by the account, and are not
    /// older than what this device trusts. The vault sealed under the key must carry the key's
    /// proof under the account key, which the server never sees. A vault written before proofs
    /// is accepted only while nothing is pinned or with the very key pinned, and only if it names
    /// the account key (the server cannot make such a vault either); the next upload adds the
    /// proof. Returns the pin to keep once the copy is used.
    static func authenticate(
        _ key: VaultKey, _ document: VaultDocument, accountKey: AccountKey, pin: VaultPin?
    )
        throws(HomeError) -> VaultPin
    {
        let proof = key.proof(accountKey: accountKey)
        let sequence = document.sequence ?? 0
        // Counters at their limit could not grow at the next upload or rotation.
        guard key.generation < .max, sequence < .max else { throw .unauthenticatedKey }
        let pinned = pin.map { SecretBytes(Base64URL.decode($0.keyProof) ?? []) }
        if let text = document.keyProof {
            guard SecretBytes(Base64URL.decode(text) ?? []) == proof else { throw .unauthenticatedKey }
        } else {
            guard pinned.map({ $0 == proof }) ?? true,
                let named = document.accountKey.flatMap(Base64URL.decode),
                SecretBytes(named) == accountKey.secret
            else { throw .unauthenticatedKey }
        }
        if let pin, let pinned {
            guard key.generation >= pin.generation, sequence >= pin.sequence else { throw .rolledBack }
            guard key.generation > pin.generation || pinned == proof else { throw .unauthenticatedKey }
        }
        return VaultPin(
            generation: key.generation, keyProof: Base64URL.encode(proof.unredactedBytes()),
            sequence: sequence)
    }

    private static func isConflict(_ error: Error) -> Bool {
        guard let error = error as? SpaceClientError else { return false }
        return error.typedCode == .versionConflict || error.typedCode == .keyRotated
    }

    /// Keeps what the home server now holds: the spaces locally, the vault copy, nothing pending
    /// (but what another command saved meanwhile, kept and left pending).
    /// Files are written only when something changed: a pull that brings nothing writes nothing.
    private func commit(
        _ merged: VaultDocument, local: inout LocalVault, home: inout HomeState, pin: VaultPin
    ) throws(LocalStateError) {
        try directory.locked { () throws(LocalStateError) in
            try commitLocked(merged, local: &local, home: &home, pin: pin)
        }
    }

    private func commitLocked(
        _ merged: VaultDocument, local: inout LocalVault, home: inout HomeState, pin: VaultPin
    ) throws(LocalStateError) {
        // Another command on this home may have saved a space (or synced) while this one waited
        // on the home server: record that now and keep every later stamp, so nothing saved
        // meanwhile is written away; what the server has not seen yet stays pending.
        let fresh = try recordLocked()
        var kept = merged.merged(with: fresh.vault.document)
        kept.accountKey = merged.accountKey
        kept.keyProof = merged.keyProof
        kept.version = merged.version
        kept.sequence = merged.sequence
        let pending = kept != merged
        local = fresh.vault
        if !fresh.inOrder || kept.spaces != local.document.spaces { try apply(kept) }
        if kept != local.document {
            local.document = kept
            try writeJSON(local, Self.vaultFile)
        }
        // The file, not this sync's copy: another command may have renewed the session.
        var saved = try self.home() ?? home
        if saved.pending != pending || saved.pin != pin {
            saved.pending = pending
            saved.pin = pin
            try save(saved)
        }
        home = saved
    }

    // MARK: Sync

    /// Pulls the vault, merges it with this device's edits, pushes the result when it differs
    /// (compare-and-swap, retried on conflict), and writes the merged spaces locally.
    public func sync() throws -> SyncReport {
        guard var home = try home() else { throw HomeError.notSignedIn }
        var local = try record().vault
        let accountKey = home.accountKey
        for _ in 0..<attempts {
            let trusted = home
            let result: (SyncReport, VaultDocument, VaultPin)? = try withSession(&home) { client in
                let (remote, key, document, authenticated) = try pull(client, trusting: trusted)
                var pin = authenticated
                var merged = local.document.merged(with: document)
                // This device's home state names the account; an older local copy may not.
                merged.accountKey = accountKey
                merged.keyProof = pin.keyProof
                merged.version = VaultDocument.currentVersion
                merged.sequence = document.sequence
                var version = remote.version
                let pushed = merged != document
                if pushed {
                    // Only a key authenticated above seals anything.
                    pin.sequence += 1
                    merged.sequence = pin.sequence
                    do {
                        version =
                            try client.putVault(
                                HomeWire.PutVault(
                                    version: remote.version, generation: key.generation,
                                    vault: key.seal(merged.encoded()))
                            ).version
                    } catch  where Self.isConflict(error) {
                        return nil
                    }
                }
                return (
                    SyncReport(
                        spaces: merged.spaces.count, pushed: pushed, version: version,
                        generation: key.generation), merged, pin
                )
            }
            guard let (report, merged, pin) = result else { continue }
            try commit(merged, local: &local, home: &home, pin: pin)
            return report
        }
        throw HomeError(.busy, "Your saved spaces kept changing on another device; try again.")
    }

    /// Signs in: on first use creates the home account on `server` with this device as its first
    /// anchor and uploads the vault; when already signed in, syncs.
    /// With `emailTicket` (from ``proveEmail(server:challenge:code:)``) the proved address is
    /// attached to the new account.
    public func signIn(server: String, label: String, emailTicket: String? = nil) throws -> SyncReport {
        if try home() != nil { return try sync() }
        var local = try record().vault
        let key = try deviceKey()
        let accountKey = AccountKey.random()
        let anchor = key.anchor()
        let id = anchor.id(accountKey: accountKey)
        local.document.accountKey = accountKey.base64URL
        local.document.note(device: id, label: label, by: local.device)
        let vaultKey = VaultKey.random(generation: 1)
        let pin = VaultPin(
            generation: 1,
            keyProof: Base64URL.encode(vaultKey.proof(accountKey: accountKey).unredactedBytes()),
            sequence: 1)
        local.document.keyProof = pin.keyProof
        local.document.version = VaultDocument.currentVersion
        local.document.sequence = pin.sequence
        let vault = vaultKey.seal(local.document.encoded())
        let upload = HomeWire.AnchorUpload(id: id, keys: anchor, wrap: vaultKey.wrap(for: anchor))
        let payload = HomeWire.CreateAccountRequest.payload(anchor: upload, generation: 1, vault: vault)
        let client = try HomeClient(server: server)
        let session = try client.createAccount(
            HomeWire.CreateAccountRequest(
                anchor: upload, generation: 1, vault: vault,
                proof: key.homeProof(.createAccount, anchor: id, payload: payload, now: clock.seconds()),
                emailTicket: emailTicket))
        try writeJSON(local, Self.vaultFile)
        try save(
            HomeState(
                server: client.server, anchor: id, accountKey: accountKey.base64URL, session: session.token,
                sessionExpiresAt: session.expiresAt, pending: false, pin: pin))
        return SyncReport(
            spaces: local.document.spaces.count, pushed: true, version: session.version, generation: 1)
    }

    /// Forgets this device's sign-in (after it was removed from its account): the home state and
    /// the device key go; the local spaces stay.
    public func signOut() throws(LocalStateError) {
        for name in [Self.homeFile, Self.deviceKeyFile] {
            guard unlink(directory.file(name)) == 0 || errno == ENOENT else {
                throw LocalStateError(.unwritable, "can't remove \(directory.file(name)).")
            }
        }
    }

    // MARK: Devices

    /// Every anchor of the account, with names from the vault.
    public func devices() throws -> [DeviceEntry] {
        guard var home = try home() else { throw HomeError.notSignedIn }
        let accountKey = try AccountKey(base64URL: home.accountKey)
        let list = try withSession(&home) { try $0.anchors() }
        let notes = try localVault().document.devices
        return list.anchors.filter { $0.revokedAt == nil }.map { anchor in
            DeviceEntry(
                id: anchor.id, kind: anchor.kind,
                label: notes.first { $0.anchor == anchor.id && !$0.removed }?.label ?? "",
                createdAt: anchor.createdAt, lastUsedAt: anchor.lastUsedAt, isThisDevice: anchor.isCaller,
                isGenuine: anchor.keys.id(accountKey: accountKey) == anchor.id)
        }
    }

    /// Enrols the device that proved the link code (its keys from `request`) and returns the grant
    /// it needs: the home server, the account key, its anchor id and the vault key. Sent only over
    /// the confirmed channel.
    public func approveLink(_ request: JoinRequest) throws -> [UInt8] {
        let keys: MemberPublicKeys
        do throws(KeyModelError) {
            keys = try request.publicKeys.keys()
        } catch {
            throw HomeError(.invalidDeviceKey, "The new device sent something that is not valid.")
        }
        return try grantDevice(keys, label: request.deviceLabel)
    }

    /// Enrols a new device's keys with a wrap of the vault key and returns its grant (to send
    /// only over a channel the person confirmed with verification words).
    func grantDevice(_ keys: MemberPublicKeys, label: String) throws -> [UInt8] {
        let (id, vaultKey, home) = try enrol(AnchorKeys(kind: .device, publicKeys: keys), label: label)
        let grant = LinkGrant(
            home: home.server, accountKey: home.accountKey, anchor: id, vaultKey: vaultKey.base64URL,
            generation: vaultKey.generation)
        return grant.encoded()
    }

    /// The new device's side after the code was proven: checks and saves the grant, then pulls.
    public func completeLink(grant bytes: [UInt8]) throws -> SyncReport {
        guard let grant = try? JSONDecoder().decode(LinkGrant.self, from: Data(bytes)) else {
            throw HomeError(.invalidGrant, "The other device sent something that is not a device link.")
        }
        let accountKey = try AccountKey(base64URL: grant.accountKey)
        let key = try deviceKey()
        guard key.anchor().id(accountKey: accountKey) == grant.anchor else {
            throw HomeError(.invalidGrant, "The other device let in a different device than this one.")
        }
        let granted = try VaultKey(base64URL: grant.vaultKey, generation: grant.generation)
        let client = try HomeClient(server: grant.home)
        // The key came over the confirmed channel from an enrolled device: it is the one to trust.
        var home = HomeState(
            server: client.server, anchor: grant.anchor, accountKey: grant.accountKey, session: nil,
            sessionExpiresAt: nil, pending: true,
            pin: VaultPin(
                generation: granted.generation,
                keyProof: Base64URL.encode(granted.proof(accountKey: accountKey).unredactedBytes()),
                sequence: 0))
        try save(home)
        // The wrap the home server hands out must hold exactly the key the other device gave us,
        // whatever generation the server names: a server cannot slip in a key and a vault of its own.
        let trusted = home
        let served: VaultKey
        do {
            served = try withSession(&home) { try pull($0, trusting: trusted).1 }
        } catch let error as HomeError
            where [.vaultKeyUnauthenticated, .vaultRolledBack].contains(error.code)
        {
            try signOut()
            throw HomeError.linkMismatch
        }
        guard served == granted else {
            try signOut()
            throw HomeError.linkMismatch
        }
        return try sync()
    }

    /// Removes a device: revokes its anchor and, in the same step, rotates the vault key,
    /// re-wraps it for every remaining genuine anchor and re-encrypts the vault. Anchors the home
    /// server made up (not the account's blind index of their keys) are revoked too.
    public func removeDevice(_ target: AnchorID) throws -> SyncReport {
        guard var home = try home() else { throw HomeError.notSignedIn }
        guard target != home.anchor else {
            throw HomeError(
                .cannotRemoveSelf, "That is this device. Remove it from another of your devices.")
        }
        let accountKey = try AccountKey(base64URL: home.accountKey)
        var local = try record().vault
        for _ in 0..<attempts {
            let trusted = home
            let result: (SyncReport, VaultDocument, VaultPin)? = try withSession(&home) { client in
                let (remote, key, document, _) = try pull(client, trusting: trusted)
                let anchors = try client.anchors().anchors.filter { $0.revokedAt == nil }
                guard anchors.contains(where: { $0.id == target }) else {
                    throw HomeError(
                        .unknownDevice,
                        "There is no device \(target) in your account. See `eleven devices`.")
                }
                let forged = anchors.filter { $0.keys.id(accountKey: accountKey) != $0.id }.map(\.id)
                let remaining = anchors.filter { $0.id != target && !forged.contains($0.id) }
                var merged = local.document.merged(with: document)
                merged.note(device: target, label: "", removed: true, by: local.device)
                let newKey = VaultKey.random(generation: key.generation + 1)
                let pin = VaultPin(
                    generation: newKey.generation,
                    keyProof: Base64URL.encode(newKey.proof(accountKey: accountKey).unredactedBytes()),
                    sequence: (document.sequence ?? 0) + 1)
                merged.keyProof = pin.keyProof
                merged.version = VaultDocument.currentVersion
                merged.sequence = pin.sequence
                let wraps = remaining.map {
                    HomeWire.AnchorWrap(anchor: $0.id, wrap: newKey.wrap(for: $0.keys))
                }
                do {
                    let stored = try client.rotate(
                        HomeWire.RotateRequest(
                            revoke: [target] + forged.filter { $0 != target }, version: remote.version,
                            generation: newKey.generation, vault: newKey.seal(merged.encoded()), wraps: wraps)
                    )
                    return (
                        SyncReport(
                            spaces: merged.spaces.count, pushed: true, version: stored.version,
                            generation: newKey.generation), merged, pin
                    )
                } catch
                    where Self.isConflict(error) || (error as? SpaceClientError)?.typedCode == .devicesChanged
                {
                    return nil
                }
            }
            guard let (report, merged, pin) = result else { continue }
            try commit(merged, local: &local, home: &home, pin: pin)
            return report
        }
        throw HomeError(.busy, "Your devices kept changing; try again.")
    }
}

/// What the old device gives the new one over the confirmed link channel.
struct LinkGrant: Codable, Sendable {
    let home: String
    let accountKey: String
    let anchor: AnchorID
    let vaultKey: String
    let generation: Int64

    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { Array($0) } ?? []
    }
}
