import Foundation
import PAKE

// The identity that acts in a space is the device's own (`identity.key`) unless that space has
// one of its own, kept beside it and private like it in `identity-<space id>.key`: the fresh key
// pair made when joining by a full-length link (so a person's spaces cannot be linked by key), or
// the member identity a device adopted with a device invite.
extension LocalState {
    static func spaceIdentityFile(_ space: SpaceID) -> String { "identity-\(space.base64URL).key" }

    /// The identity that acts in `space`: the space's own when it has one, else the device's.
    public func identity(for space: SpaceID) throws(LocalStateError) -> DeviceIdentity {
        try directory.prepare()
        let file = Self.spaceIdentityFile(space)
        guard var bytes = try directory.read(file) else { return try identity(create: false).identity }
        let secret = SecretBytes(bytes)
        wipe(&bytes)
        do throws(KeyModelError) {
            return try DeviceIdentity(storedForm: secret)
        } catch {
            throw LocalStateError(
                .corrupt,
                "\(directory.file(file)) is damaged (\(error.message)). Restore it from a backup; "
                    + "without it this device cannot act in that space.")
        }
    }

    /// Keeps `identity` as the one acting in `space`. A device without an identity of its own
    /// takes it as its identity too.
    public func saveIdentity(_ identity: DeviceIdentity, for space: SpaceID) throws(LocalStateError) {
        try directory.prepare()
        guard FileManager.default.fileExists(atPath: directory.file(Self.identityFile)) else {
            try directory.write(Self.identityFile, identity.storedForm())
            return
        }
        guard try self.identity(create: false).identity.publicKeys != identity.publicKeys else { return }
        try directory.write(Self.spaceIdentityFile(space), identity.storedForm())
    }
}
