import Foundation
import PAKE
import SpaceModel

// The identity that acts in a space is the device's own (`identity.key`) unless the saved space
// carries one of its own in `identityKey` (private, like everything in spaces.json): the fresh
// key pair made when joining by a full-length link (so a person's spaces cannot be linked by
// key), the member identity adopted with a device invite, or a space that came from another
// device through the vault. Keeping it in the saved space means the vault carries it too.
extension LocalState {
    /// The identity that acts in `space`: the one it carries, else this device's own.
    public func identity(for space: SavedSpace) throws(LocalStateError) -> DeviceIdentity {
        guard let text = space.identityKey else { return try identity(create: false).identity }
        guard let bytes = Base64URL.decode(text),
            let identity = try? DeviceIdentity(storedForm: SecretBytes(bytes))
        else {
            throw LocalStateError(
                .corrupt,
                "The saved identity for space \(space.name) in \(directory.file(Self.spacesFile)) is damaged. "
                    + "Restore the file from a backup, or sync it again from another device.")
        }
        return identity
    }

    /// The identity that acts in the saved space with id `space` (this device's own when no
    /// saved space has that id).
    public func identity(for space: SpaceID) throws(LocalStateError) -> DeviceIdentity {
        guard let saved = try spaces().spaces.first(where: { $0.space == space }) else {
            return try identity(create: false).identity
        }
        return try identity(for: saved)
    }

    /// What a saved space keeps in `identityKey` so that `identity` acts in it: nil when it is
    /// this device's own. A device without an identity yet takes `identity` as its own.
    public func identityKey(for identity: DeviceIdentity) throws(LocalStateError) -> String? {
        try directory.locked { () throws(LocalStateError) in
            guard FileManager.default.fileExists(atPath: directory.file(Self.identityFile)) else {
                try directory.write(Self.identityFile, identity.storedForm())
                return nil
            }
            guard try self.identity(create: false).identity.publicKeys != identity.publicKeys else {
                return nil
            }
            return Base64URL.encode(identity.storedForm().unredactedBytes())
        }
    }
}
