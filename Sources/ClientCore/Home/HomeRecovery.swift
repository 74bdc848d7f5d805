import PAKE
import SpaceModel
import Support

// Account recovery, rung 3 of the ladder: a recovery credential is one more key anchor of the
// home account (`kind: recovery`), with its own wrap of the vault key. With every device lost,
// the credential alone signs a session, opens its wrap, and enrols a brand-new device.

extension HomeSync {
    /// Enrols `anchor` with a wrap of the current vault key and names it `label` in the vault.
    /// Returns its id, the vault key it got, and the home state (marked pending).
    func enrol(_ anchor: AnchorKeys, label: String) throws -> (AnchorID, VaultKey, HomeState) {
        guard var home = try home() else { throw HomeError.notSignedIn }
        let id = anchor.id(accountKey: try AccountKey(base64URL: home.accountKey))
        let trusted = home
        let vaultKey: VaultKey = try withSession(&home) { client in
            let (_, key, _, _) = try pull(client, trusting: trusted)
            _ = try client.enrol(
                HomeWire.EnrolRequest(
                    anchor: HomeWire.AnchorUpload(id: id, keys: anchor, wrap: key.wrap(for: anchor)),
                    generation: key.generation))
            return key
        }
        var local = try localVault()
        local.document.note(device: id, label: label, by: local.device)
        try writeJSON(local, Self.vaultFile)
        home.pending = true
        try save(home)
        return (id, vaultKey, home)
    }

    /// The account key of this signed-in device (to name a new recovery credential's anchor).
    public func accountKey() throws -> AccountKey {
        guard let home = try home() else { throw HomeError.notSignedIn }
        return try AccountKey(base64URL: home.accountKey)
    }

    /// Adds a recovery credential whose anchor identity is `identity` (derived from the
    /// credential's output): the home server gets its public keys and a wrap of the vault key,
    /// never its secret. Returns the anchor id.
    @discardableResult
    public func addRecovery(_ identity: DeviceIdentity, label: String) throws -> AnchorID {
        let (id, _, _) = try enrol(identity.anchor(.recovery), label: label)
        _ = try sync()
        return id
    }

    /// The account's recovery credentials.
    public func recoveryCredentials() throws -> [DeviceEntry] {
        try devices().filter { $0.kind == .recovery }
    }

    /// Removes a recovery credential: revokes its anchor, rotates the vault key and re-encrypts
    /// the vault, so the credential cannot restore anything any more.
    public func removeRecovery(_ id: AnchorID) throws -> SyncReport {
        guard try recoveryCredentials().contains(where: { $0.id == id }) else {
            throw HomeError(
                .unknownCredential, "There is no recovery credential \(id). See `eleven recovery list`.")
        }
        return try removeDevice(id)
    }

    /// Restores the account on this (brand-new) device with a recovery credential: signs a
    /// session as the credential's anchor, opens its wrap, checks that the vault's account key
    /// names that anchor (so a home server cannot hand over a vault of its own), enrols this
    /// device's key, and pulls every space.
    public func recover(home server: String, anchor: AnchorID, identity: DeviceIdentity, label: String)
        throws -> SyncReport
    {
        guard try home() == nil else {
            throw HomeError(
                .alreadySignedIn, "This device is already signed in; `eleven sync` brings in your spaces.")
        }
        var client = try HomeClient(server: server)
        let session = try client.session(
            HomeWire.SessionRequest(
                proof: identity.homeProof(.session, anchor: anchor, payload: [], now: clock.seconds())))
        client.use(session: session.token)
        let remote = try client.vault()
        let key = try identity.unwrapVaultKey(Base64URL.decode(remote.wrap) ?? [])
        let document = try VaultDocument(decoding: try key.open(Base64URL.decode(remote.vault) ?? []))
        guard let text = document.accountKey, let accountKey = try? AccountKey(base64URL: text),
            identity.anchor(.recovery).id(accountKey: accountKey) == anchor
        else {
            throw HomeError(
                .keyMismatch, "The home server's copy of your spaces does not belong to this credential.")
        }
        // The account key came out of the vault itself, and the key must carry its proof.
        let pin = try Self.authenticate(key, document, accountKey: accountKey, pin: nil)
        let device = try deviceKey().anchor()
        let id = device.id(accountKey: accountKey)
        _ = try client.enrol(
            HomeWire.EnrolRequest(
                anchor: HomeWire.AnchorUpload(id: id, keys: device, wrap: key.wrap(for: device)),
                generation: key.generation))
        var local = try localVault()
        local.document.note(device: id, label: label, by: local.device)
        try writeJSON(local, Self.vaultFile)
        try save(
            HomeState(
                server: client.server, anchor: id, accountKey: text, session: nil, sessionExpiresAt: nil,
                pending: true, pin: pin))
        return try sync()
    }
}
