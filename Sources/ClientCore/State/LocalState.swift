import Foundation
import PAKE
import SpaceModel

/// One space this device belongs to, with the credentials to use it. Saved in `spaces.json`.
public struct SavedSpace: Codable, Sendable, Equatable {
    public var space: SpaceID
    /// The space's name when it was saved.
    public var name: String
    /// The space server's base URL.
    public var server: String
    /// This device's member id in the space.
    public var member: MemberID
    /// The owner's signing key (base64url), trusted from the moment the space was saved; every
    /// member list is verified from it forward.
    public var ownerSigningKey: String
    /// The device token (a bearer credential).
    public var deviceToken: String
    /// The space's admin token, kept by the device that created the space.
    public var adminToken: String?
    /// The full-length invite this device joined with, if any: using the link again says so.
    public var joinedWith: KeyInviteID? = nil
    /// The member identity's private stored form (base64url) when it is not this device's own
    /// `identity.key` (a space that came from another device through the vault).
    public var identityKey: String?
    /// Starred by the person (`eleven star`); nil means not starred.
    public var starred: Bool?
    /// The member list's sequence up to which `eleven bot notes` showed the joins with this
    /// member's invites (``InviteJoin``); nil before it first showed any.
    public var joinsShownThrough: UInt64?

    public init(
        space: SpaceID, name: String, server: String, member: MemberID, ownerSigningKey: String,
        deviceToken: String, adminToken: String? = nil, identityKey: String? = nil, starred: Bool? = nil
    ) {
        self.space = space
        self.name = name
        self.server = server
        self.member = member
        self.ownerSigningKey = ownerSigningKey
        self.deviceToken = deviceToken
        self.adminToken = adminToken
        self.identityKey = identityKey
        self.starred = starred
    }

    /// The owner's signing key, parsed.
    public func ownerKey() throws(LocalStateError) -> SigningPublicKey {
        guard let bytes = Base64URL.decode(ownerSigningKey), let key = try? SigningPublicKey(bytes: bytes)
        else {
            throw LocalStateError(.corrupt, "The saved owner key of space \(name) is damaged.")
        }
        return key
    }

    /// A client for this space's server with the device token.
    public func client() throws(SpaceClientError) -> SpaceClient {
        try SpaceClient(server: server, token: deviceToken)
    }
}

/// The saved spaces list (`spaces.json`), versioned.
public struct SavedSpaces: Codable, Sendable, Equatable {
    /// The format version this client writes.
    public static let currentVersion = 1

    public var version: Int
    /// The space commands use when none is named.
    public var current: SpaceID?
    public var spaces: [SavedSpace]

    public init(current: SpaceID? = nil, spaces: [SavedSpace] = []) {
        version = Self.currentVersion
        self.current = current
        self.spaces = spaces
    }

    /// Adds or replaces `space` and makes it current.
    public mutating func save(_ space: SavedSpace) {
        spaces.removeAll { $0.space == space.space }
        spaces.append(space)
        current = space.space
    }
}

/// The device's local state: its identity (`identity.key`, private) and its saved spaces.
public struct LocalState: Sendable {
    public let directory: StateDirectory

    static let identityFile = "identity.key"
    static let spacesFile = "spaces.json"

    public init(directory: StateDirectory) {
        self.directory = directory
    }

    /// The state at `$ELEVEN_HOME` or `~/.eleven`.
    public static func standard(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> LocalState
    {
        LocalState(directory: StateDirectory(path: StateDirectory.defaultPath(environment: environment)))
    }

    /// The device identity; made and saved on first use when `create` is true. `created` tells
    /// whether it was made now.
    public func identity(create: Bool) throws(LocalStateError) -> (identity: DeviceIdentity, created: Bool) {
        // Made under the lock, so parallel first uses agree on one identity.
        guard create else { return try loadIdentity(create: false) }
        return try directory.locked { () throws(LocalStateError) in try loadIdentity(create: true) }
    }

    private func loadIdentity(create: Bool) throws(LocalStateError) -> (
        identity: DeviceIdentity, created: Bool
    ) {
        try directory.prepare()
        if var bytes = try directory.read(Self.identityFile) {
            let secret = SecretBytes(bytes)
            wipe(&bytes)
            do throws(KeyModelError) {
                return (try DeviceIdentity(storedForm: secret), false)
            } catch {
                throw LocalStateError(
                    .corrupt,
                    "\(directory.file(Self.identityFile)) is damaged (\(error.message)). "
                        + "Restore it from a backup; without it this device cannot read its spaces.")
            }
        }
        guard create else {
            throw LocalStateError(
                .unreadable, "This device has no identity yet. Run `eleven whoami` to make one.")
        }
        let identity = DeviceIdentity.generate()
        try directory.write(Self.identityFile, identity.storedForm())
        return (identity, true)
    }

    /// The saved spaces (empty when none were saved yet).
    public func spaces() throws(LocalStateError) -> SavedSpaces {
        try directory.prepare()
        guard let bytes = try directory.read(Self.spacesFile) else { return SavedSpaces() }
        struct Version: Decodable { let version: Int }
        guard let version = try? JSONDecoder().decode(Version.self, from: Data(bytes)) else {
            throw corrupt()
        }
        guard version.version <= SavedSpaces.currentVersion else {
            throw LocalStateError(
                .tooNew,
                "\(directory.file(Self.spacesFile)) was written by a newer eleven (format \(version.version)). "
                    + "Update eleven.")
        }
        guard let spaces = try? JSONDecoder().decode(SavedSpaces.self, from: Data(bytes)) else {
            throw corrupt()
        }
        return spaces
    }

    /// Reads the saved spaces, lets `change` edit them and saves them, all under the state's lock
    /// so a parallel command's edit is not lost. `change` must not wait on the network.
    @discardableResult
    public func updateSpaces<T>(_ change: (inout SavedSpaces) throws(LocalStateError) -> T)
        throws(LocalStateError) -> T
    {
        try directory.locked { () throws(LocalStateError) in
            var spaces = try self.spaces()
            let result = try change(&spaces)
            try save(spaces)
            return result
        }
    }

    /// Saves the spaces list atomically (a whole replacement: to edit it, ``updateSpaces(_:)``).
    public func save(_ spaces: SavedSpaces) throws(LocalStateError) {
        try directory.prepare()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(spaces) else {
            throw LocalStateError(.unwritable, "could not encode the spaces list")
        }
        try directory.write(Self.spacesFile, Array(data))
    }

    private func corrupt() -> LocalStateError {
        LocalStateError(
            .corrupt,
            "\(directory.file(Self.spacesFile)) is damaged and cannot be read. "
                + "Restore it from a backup, or move it away to start over.")
    }
}
