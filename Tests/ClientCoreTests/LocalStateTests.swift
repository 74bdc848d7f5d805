import ClientCore
import Foundation
import SpaceModel
import Testing

@Suite struct LocalStateTests {
    func temporaryState() throws -> LocalState {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "eleven-state-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        return LocalState(directory: StateDirectory(path: base.appendingPathComponent("home").path))
    }

    func mode(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int ?? -1
    }

    @Test func identityIsMadeOnceAndKeptPrivate() throws {
        let state = try temporaryState()
        #expect(throws: LocalStateError.self) { try state.identity(create: false) }
        let (first, created) = try state.identity(create: true)
        #expect(created)
        let (again, createdAgain) = try state.identity(create: false)
        #expect(!createdAgain)
        #expect(again.publicKeys == first.publicKeys)
        #expect(try mode(state.directory.path) == 0o700)
        #expect(try mode(state.directory.file("identity.key")) == 0o600)
    }

    @Test func spacesRoundTripAtomicallyWithoutLeftovers() throws {
        let state = try temporaryState()
        #expect(try state.spaces() == SavedSpaces())
        var spaces = SavedSpaces()
        let saved = SavedSpace(
            space: .random(), name: "Family", server: "http://127.0.0.1:1", member: .random(),
            ownerSigningKey: DeviceIdentity.generate().publicKeys.signing.description, deviceToken: "t")
        spaces.save(saved)
        spaces.save(saved)
        #expect(spaces.spaces.count == 1)
        #expect(spaces.current == saved.space)
        for _ in 0..<20 { try state.save(spaces) }
        #expect(try state.spaces() == spaces)
        #expect(try FileManager.default.contentsOfDirectory(atPath: state.directory.path) == ["spaces.json"])
        #expect(try mode(state.directory.file("spaces.json")) == 0o600)
    }

    @Test func looseDirectoryIsTightened() throws {
        let state = try temporaryState()
        try FileManager.default.createDirectory(
            atPath: state.directory.path, withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o755])
        try state.directory.prepare()
        #expect(try mode(state.directory.path) == 0o700)
    }

    @Test(arguments: [
        ("not json", LocalStateError.Code.corrupt),
        (#"{"version": 1}"#, .corrupt),
        (#"{"version": 1, "spaces": [{"space": "short"}]}"#, .corrupt),
        (#"{"version": 2, "spaces": []}"#, .tooNew),
    ])
    func damagedSpacesFileIsAClearError(text: String, code: LocalStateError.Code) throws {
        let state = try temporaryState()
        try state.directory.prepare()
        try state.directory.write("spaces.json", Array(text.utf8))
        do {
            _ = try state.spaces()
            Issue.record("expected \(code)")
        } catch {
            #expect(error.code == code)
            #expect(error.message.contains("spaces.json"))
        }
    }

    @Test func damagedIdentityIsAClearError() throws {
        let state = try temporaryState()
        try state.directory.prepare()
        try state.directory.write("identity.key", Array("ELID".utf8) + [1, 2, 3])
        do {
            _ = try state.identity(create: true)
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .corrupt)
        }
    }
}
