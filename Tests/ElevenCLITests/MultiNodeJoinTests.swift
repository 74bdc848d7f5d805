import Foundation
import TestSupport
import Testing

/// `eleven-relay --postgres` on a loopback port, sharing the cluster with its other nodes.
private func relayNode(_ cluster: PostgresCluster, port: UInt16? = nil) throws -> ChildProcess {
    let port = try port ?? TestSupport.freePort()
    return try ChildProcess(
        TestSupport.productPath("eleven-relay"),
        [
            "--listen", "127.0.0.1:\(port)", "--postgres", cluster.url, "--no-limits", "--expiry-check", "1s",
            "--db", "/nonexistent/unused.sqlite",
        ], port: port)
}

/// Short-code joins with the real programs when Paul and Sam reach different relay nodes of
/// one service (PostgreSQL shared), and when Paul's node dies while he waits.
@Suite(
    "eleven join across relay nodes", .serialized,
    .enabled(if: !PostgresCluster.skipped, "ELEVEN_SKIP_POSTGRES=1"))
struct MultiNodeJoinTests {
    /// Paul's invite waits on `paulRelay`; Sam joins through `samRelay` and reads the history.
    static func join(_ w: JoinScenariosCLI.World, samRelay: String, beforeSam: () throws -> Void = {}) throws
    {
        let invite = try w.background(w.paul, ["invite", "--short", "--yes"])
        let code = try invite.value(afterPrefix: "Invite code:")
        try beforeSam()
        let sam = try ElevenHome("sam")
        let joined = try sam.run(["join", code, "--name", "Sam"], environment: ["ELEVEN_RELAY": samRelay])
        #expect(joined.status == 0, "\(joined.stderr)")
        #expect(joined.stdout.contains("Joined Family: 2 threads, 3 messages."), "\(joined.stdout)")
        let paulSaw = invite.finish(timeout: 30)
        #expect(paulSaw.status == 0, "\(paulSaw.stderr)")
        #expect(paulSaw.stdout.contains("Sam joined Family."))
        #expect(try w.run(sam, ["read"]).stdout == "Paul: Welcome to Family\nPaul: Dinner at eight\n")
    }

    @Test("Paul invites through node 1, Sam joins through node 2")
    func joinAcrossNodes() async throws {
        try await TestSupport.offPool {
            let cluster = try PostgresCluster()
            let one = try relayNode(cluster)
            defer { one.stop() }
            let two = try relayNode(cluster)
            defer { two.stop() }
            let server = try ElevenServerUnderTest()
            defer { server.stop() }
            let w = try JoinScenariosCLI.makeWorld(
                relayURL: "ws://127.0.0.1:\(one.port)/v1", server: server, crowdingSpoilsTheMailbox: false)
            try Self.join(w, samRelay: "ws://127.0.0.1:\(two.port)/v1")
        }
    }

    @Test(
        "Paul's node is killed while he waits; a replacement on its address serves him, Sam joins through node 2"
    )
    func joinAcrossANodeKill() async throws {
        try await TestSupport.offPool {
            let cluster = try PostgresCluster()
            var one = try relayNode(cluster)
            let two = try relayNode(cluster)
            defer { two.stop() }
            let server = try ElevenServerUnderTest()
            defer { server.stop() }
            let w = try JoinScenariosCLI.makeWorld(
                relayURL: "ws://127.0.0.1:\(one.port)/v1", server: server, crowdingSpoilsTheMailbox: false)
            try Self.join(w, samRelay: "ws://127.0.0.1:\(two.port)/v1") {
                let port = one.port
                one.stop(signal: SIGKILL)
                one = try relayNode(cluster, port: port)
            }
            one.stop()
        }
    }
}
