import Foundation
import TestSupport
import Testing

/// The relay a short code uses when nobody names one: the space server advertises its relay
/// (`eleven-server --relay`), so Paul's `eleven invite --short` and Sam's `eleven join LINK` agree
/// on it with no --relay, ELEVEN_RELAY or config file on either side (before: both used
/// ws://127.0.0.1:4000/v1, where no relay runs here).
@Suite(.serialized) struct RelayChoiceEndToEndTests {
    @Test func aWordLinkCarriesTheServersRelayToTheJoiner() throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let relay = try startElevenRelay(in: directory)
        let relayPort = relay.port
        defer { relay.stop() }
        let serverPort = try TestSupport.freePort()
        let server = try ChildProcess(
            elevenServer,
            [
                "--listen", "127.0.0.1:\(serverPort)", "--db",
                directory.appendingPathComponent("s.sqlite").path,
                "--quiet", "--relay", "ws://127.0.0.1:\(relayPort)/v1",
            ], port: serverPort)
        defer { server.stop() }
        let serverURL = "http://127.0.0.1:\(serverPort)"
        let noRelay = ["ELEVEN_RELAY": ""]
        let paul = try ElevenHome("paul")
        #expect(
            try paul.run(
                ["space", "create", "Family", "--server", serverURL, "--as", "Paul"], environment: noRelay
            )
            .status == 0)
        let invite = try ChildProcess(
            eleven, ["invite", "--short", "--yes"],
            environment: ["ELEVEN_HOME": paul.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": ""])
        defer { invite.stop() }
        let link = try invite.value(afterPrefix: "Link:")
        let sam = try ElevenHome("sam")
        let joined = try sam.run(["join", link, "--name", "Sam"], environment: noRelay)
        #expect(joined.status == 0, "\(joined.stdout) \(joined.stderr)")
        #expect(joined.stdout.contains("Joined Family"))
        #expect(invite.finish(timeout: 30).status == 0)
    }
}

/// A real `eleven-relay` on a free loopback port, its database in `directory`.
func startElevenRelay(in directory: URL) throws -> ChildProcess {
    let port = try TestSupport.freePort()
    return try ChildProcess(
        TestSupport.productPath("eleven-relay"),
        ["--listen", "127.0.0.1:\(port)", "--db", directory.appendingPathComponent("relay.sqlite").path],
        port: port)
}
