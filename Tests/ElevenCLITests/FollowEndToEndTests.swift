import Foundation
import TestSupport
import Testing

/// `eleven read -f` outlives a restart of the space server: it says it lost the connection,
/// waits with back-off, and prints what was sent meanwhile once the server is back (before: it
/// exited with status 4 at the restart).
@Suite(.serialized) struct FollowEndToEndTests {
    @Test func followingReconnectsAfterTheServerRestarts() throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try TestSupport.freePort()
        func startServer() throws -> ChildProcess {
            try ChildProcess(
                elevenServer, ["--listen", "127.0.0.1:\(port)", "--quiet"],
                environment: ["ELEVEN_SERVER_HOME": directory.path], port: port, timeout: 20)
        }
        var server = try startServer()
        defer { server.stop() }
        let paul = try ElevenHome("paul")
        #expect(
            try paul.run([
                "space", "create", "Family", "--server", "http://127.0.0.1:\(port)", "--as", "Paul",
            ])
            .status == 0)
        #expect(try paul.run(["send", "before"]).status == 0)
        let following = try ChildProcess(
            eleven, ["read", "-f"], environment: ["ELEVEN_HOME": paul.path, "ELEVEN_SPACE": ""])
        defer { following.stop() }
        _ = try following.value(afterPrefix: "Paul: before")
        _ = server.stop()  // a restart, graceful or not
        try following.waitFor("Lost the connection to the server", in: .stderr, timeout: 60)
        server = try startServer()
        #expect(try paul.run(["send", "after"]).status == 0)
        _ = try following.value(afterPrefix: "Paul: after", timeout: 120)
        try following.waitFor("Reconnected.", in: .stderr, timeout: 60)
        #expect(following.isRunning)
    }
}
