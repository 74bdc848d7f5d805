import ClientCore
import Foundation
import Testing

/// The identity acting in each space: the device's own unless the space keeps one of its own.
@Suite struct SpaceIdentitiesTests {
    static func state() throws -> LocalState {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "eleven-space-identities-\(UUID().uuidString)")
        return LocalState(directory: StateDirectory(path: base.appendingPathComponent("home").path))
    }

    @Test func spacesKeepTheirOwnIdentityBesideTheDevicesOne() throws {
        let state = try Self.state()
        let family = SpaceID.random()
        let club = SpaceID.random()
        let first = DeviceIdentity.generate()
        // A device without an identity takes the first one it is given as its own.
        try state.saveIdentity(first, for: family)
        #expect(try state.identity(create: false).identity.publicKeys == first.publicKeys)
        #expect(!FileManager.default.fileExists(atPath: state.directory.file("identity-\(family).key")))
        #expect(try state.identity(for: family).publicKeys == first.publicKeys)
        // Another space with another identity keeps it in a private file of its own.
        let second = DeviceIdentity.generate()
        try state.saveIdentity(second, for: club)
        let file = state.directory.file("identity-\(club).key")
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try state.identity(for: club).publicKeys == second.publicKeys)
        #expect(try state.identity(for: family).publicKeys == first.publicKeys)
        #expect(try state.identity(for: .random()).publicKeys == first.publicKeys)
        #expect(try state.identity(create: false).identity.publicKeys == first.publicKeys)
    }

    @Test func damagedSpaceIdentityIsAClearError() throws {
        let state = try Self.state()
        let space = SpaceID.random()
        try state.saveIdentity(.generate(), for: .random())
        try state.saveIdentity(.generate(), for: space)
        try Data("short".utf8).write(to: URL(fileURLWithPath: state.directory.file("identity-\(space).key")))
        let error = #expect(throws: LocalStateError.self) { try state.identity(for: space) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("identity-\(space).key") == true)
    }
}
