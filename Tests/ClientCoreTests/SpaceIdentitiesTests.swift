import ClientCore
import Foundation
import SpaceModel
import Testing

/// The identity acting in each space: the device's own unless the saved space carries one of
/// its own (a link join's fresh key pair, an adopted identity, a space from another device).
@Suite struct SpaceIdentitiesTests {
    static func state() throws -> LocalState {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "eleven-space-identities-\(UUID().uuidString)")
        return LocalState(directory: StateDirectory(path: base.appendingPathComponent("home").path))
    }

    static func space(_ id: SpaceID, identityKey: String?) -> SavedSpace {
        SavedSpace(
            space: id, name: "Family", server: "http://127.0.0.1:1", member: .random(), ownerSigningKey: "",
            deviceToken: "token", identityKey: identityKey)
    }

    @Test func spacesCarryTheirOwnIdentityBesideTheDevicesOne() throws {
        let state = try Self.state()
        let first = DeviceIdentity.generate()
        // A device without an identity takes the first one it is given as its own.
        #expect(try state.identityKey(for: first) == nil)
        #expect(try state.identity(create: false).identity.publicKeys == first.publicKeys)
        #expect(try state.identityKey(for: first) == nil)
        // Another identity is carried by the saved space.
        let second = DeviceIdentity.generate()
        let key = try #require(try state.identityKey(for: second))
        let family = SpaceID.random()
        let club = SpaceID.random()
        var saved = SavedSpaces()
        saved.save(Self.space(family, identityKey: nil))
        saved.save(Self.space(club, identityKey: key))
        try state.save(saved)
        #expect(try state.identity(for: club).publicKeys == second.publicKeys)
        #expect(try state.identity(for: family).publicKeys == first.publicKeys)
        #expect(try state.identity(for: .random()).publicKeys == first.publicKeys)
        #expect(try state.identity(create: false).identity.publicKeys == first.publicKeys)
        // No key material beside the device's own file.
        let files = try FileManager.default.contentsOfDirectory(atPath: state.directory.path)
        #expect(!files.contains { $0.hasPrefix("identity-") })
    }

    @Test func damagedSpaceIdentityIsAClearError() throws {
        let state = try Self.state()
        _ = try state.identityKey(for: .generate())
        let space = Self.space(.random(), identityKey: "short")
        let error = #expect(throws: LocalStateError.self) { try state.identity(for: space) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("spaces.json") == true)
    }
}
