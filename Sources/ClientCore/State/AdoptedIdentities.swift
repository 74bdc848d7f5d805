import Foundation
import PAKE

// A device added to a member with a full-length device invite adopts that member's identity for
// that one space. The device's own identity (`identity.key`) stays what it is for every other
// space; the adopted one is kept beside it, private like it, in `identity-<space id>.key`.
extension LocalState {
    static func adoptedIdentityFile(_ space: SpaceID) -> String { "identity-\(space.base64URL).key" }

    /// The identity that acts in `space`: the adopted one when this device was added to a member
    /// with a device invite, else the device's own.
    public func identity(for space: SpaceID) throws(LocalStateError) -> DeviceIdentity {
        try directory.prepare()
        let file = Self.adoptedIdentityFile(space)
        guard var bytes = try directory.read(file) else { return try identity(create: false).identity }
        let secret = SecretBytes(bytes)
        wipe(&bytes)
        do throws(KeyModelError) {
            return try DeviceIdentity(storedForm: secret)
        } catch {
            throw LocalStateError(
                .corrupt,
                "\(directory.file(file)) is damaged (\(error.message)). Restore it from a backup, or add "
                    + "this device again with a new device invite.")
        }
    }

    /// Keeps `identity` as the one acting in `space`. A device without an identity of its own
    /// takes it as its identity too (it now is that member's device).
    public func adopt(_ identity: DeviceIdentity, for space: SpaceID) throws(LocalStateError) {
        try directory.prepare()
        guard FileManager.default.fileExists(atPath: directory.file(Self.identityFile)) else {
            try directory.write(Self.identityFile, identity.storedForm())
            return
        }
        guard try self.identity(create: false).identity.publicKeys != identity.publicKeys else { return }
        try directory.write(Self.adoptedIdentityFile(space), identity.storedForm())
    }
}
