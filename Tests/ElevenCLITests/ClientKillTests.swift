import Foundation
import TestSupport
import Testing

/// Fault injection on the client: `eleven space create` is killed with SIGKILL at random moments
/// while it talks to the server and writes its state directory. After every kill the state must
/// still load (`eleven spaces` works), and every space it lists must open and read; a kill may
/// lose the space being created, never the ones saved before.
@Suite(.serialized) struct ClientKillTests {
    @Test func stateSurvivesKillsWhileWriting() async throws {
        try await TestSupport.offPool {
            let server = try ElevenServerUnderTest()
            defer { server.stop() }
            let home = try ElevenHome("paul")
            var seed: UInt64 = 0x1234_5678
            var listed: [String] = []
            var kills = 0
            for i in 0..<24 {
                let process = try ChildProcess(
                    eleven, ["space", "create", "Space \(i)", "--server", server.url, "--as", "Paul"],
                    environment: ["ELEVEN_HOME": home.path, "ELEVEN_SPACE": ""])
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                usleep(UInt32(seed >> 33) % 60_000)
                if process.isRunning { kills += 1 }
                process.stop(signal: SIGKILL)

                let spaces = try home.run(["spaces", "--json"])
                #expect(spaces.status == 0, "state unreadable after kill \(i): \(spaces.stderr)")
                let object =
                    try JSONSerialization.jsonObject(with: Data(spaces.stdout.utf8)) as? [String: Any]
                let now = (object?["spaces"] as? [[String: Any]] ?? []).compactMap { $0["space"] as? String }
                #expect(Set(listed).isSubset(of: now), "a kill lost a space saved before it")
                listed = now
            }
            for space in listed {
                let read = try home.run(["read", "--space", space, "--json"])
                #expect(read.status == 0, "saved space \(space) does not open: \(read.stderr)")
            }
            let after = try home.run(["space", "create", "After", "--server", server.url, "--as", "Paul"])
            #expect(after.status == 0, "\(after.stderr)")
            print(
                "client kill -9: 24 runs of space create, \(kills) killed, \(listed.count) spaces saved and readable"
            )
            #expect(kills >= 8, "the client was killed mid-run")
        }
    }
}
