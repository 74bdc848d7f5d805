import ClientCore
import Foundation
import JoinProtocol
import Net
import SpaceServer
import TestSupport
import Testing

/// The client's vault sync (`HomeSync`) against the real home API on a loopback socket: two
/// devices of one account editing at the same time, with compare-and-swap conflicts, lose nothing.
@Suite struct HomeSyncTests {
    private static func device(_ name: String, spaces: [SavedSpace], in root: URL) throws -> HomeSync {
        let state = LocalState(directory: StateDirectory(path: root.path + "/" + name))
        _ = try state.identity(create: true)
        var saved = SavedSpaces()
        for space in spaces { saved.save(space) }
        try state.save(saved)
        return HomeSync(state: state)
    }

    /// A home server on a free loopback port, its database in `root`, started.
    static func homeServer(in root: URL) throws -> SpaceHTTPServer {
        var configuration = SpaceHTTPConfiguration(
            databasePath: root.appendingPathComponent("home.sqlite").path)
        configuration.listenAddresses = [SocketAddress(numericHost: "127.0.0.1", port: 0)!]
        configuration.api.homeEnabled = true
        let server = try SpaceHTTPServer(configuration: configuration)
        try server.start()
        return server
    }

    @Test func concurrentEditsOnTwoDevicesAllSurvive() async throws {
        try await TestSupport.offPool {
            let root = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let server = try Self.homeServer(in: root)
            defer { server.shutdown() }

            let spaces = (0..<8).map {
                SavedSpace(
                    space: .random(), name: "S\($0)", server: "http://127.0.0.1:1", member: .random(),
                    ownerSigningKey: "k", deviceToken: "t\($0)")
            }
            let a = try Self.device("a", spaces: spaces, in: root)
            #expect(try a.signIn(server: server.baseURL, label: "a").spaces == 8)
            let b = try Self.device("b", spaces: [], in: root)
            let grant = try a.approveLink(
                JoinRequest(
                    displayName: "", deviceLabel: "b", publicKeys: JoinerKeys(try b.deviceKey().publicKeys)))
            #expect(try b.completeLink(grant: grant).spaces == 8)

            // A stars the even spaces, B the odd ones, each syncing after every change, at once.
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                let device = side == 0 ? a : b
                for index in stride(from: side, to: 8, by: 2) {
                    try? device.star(spaces[index].space, true)
                    _ = try? device.sync()
                }
            }
            _ = try a.sync()
            _ = try b.sync()
            _ = try a.sync()
            for device in [a, b] {
                let saved = try device.state.spaces().spaces
                #expect(saved.count == 8)
                #expect(saved.allSatisfy { $0.starred == true }, "\(saved.map { $0.starred ?? false })")
            }
            // Both devices see the same order and nothing is pending.
            #expect(try a.state.spaces().spaces.map(\.space) == b.state.spaces().spaces.map(\.space))
            #expect(try a.home()?.pending == false)
            #expect(try b.home()?.pending == false)
        }
    }
}
