import Foundation
import Net
import Support
import TestSupport
import Testing

@testable import Relay

/// Several `eleven-relay --postgres` processes on loopback ports sharing one throw-away
/// PostgreSQL cluster; stopped by process id.
final class RelayNodes: @unchecked Sendable {
    let cluster: PostgresCluster
    let dir: ScratchDirectory
    private(set) var nodes: [RelayProcess] = []

    init(count: Int, metrics: Bool = false) throws {
        cluster = try PostgresCluster()
        dir = try ScratchDirectory()
        for _ in 0..<count { nodes.append(try start(metrics: metrics)) }
    }

    var arguments: [String] { ["--postgres", cluster.url, "--no-limits", "--expiry-check", "1s"] }

    /// Another node on the same database (on `port` if given: a balancer's replacement).
    func start(port: UInt16? = nil, metrics: Bool = false) throws -> RelayProcess {
        try RelayProcess(
            databasePath: dir.path("unused-\(UUID().uuidString.prefix(6)).sqlite"), port: port,
            metrics: metrics,
            arguments: arguments)
    }

    subscript(index: Int) -> RelayProcess { nodes[index] }

    func stop() {
        for node in nodes { node.stop() }
        dir.remove()
    }

    deinit { stop() }
}

/// One side of a wire-level exchange: binds, and keeps the frames it saw.
extension WireClient {
    static func bound(_ url: String, app: String, side: String) throws -> WireClient {
        let client = try WireClient(url)
        try client.send(["type": "bind", "appid": app, "side": side])
        return client
    }

    /// Collects `count` message bodies (skipping everything else).
    func bodies(_ count: Int, timeout: Double = 5) throws -> [String] {
        var out: [String] = []
        while out.count < count {
            out.append(try next(type: "message", timeout: timeout)["body"] as? String ?? "?")
        }
        return out
    }
}

/// Active-active: every node serves; a client may bind on one node and its peer on another.
@Suite(
    "eleven-relay nodes sharing PostgreSQL", .serialized,
    .enabled(if: !PostgresCluster.skipped, "ELEVEN_SKIP_POSTGRES=1"))
struct PostgresNodeTests {
    static let app = "example.com/multi-node-test"

    /// An exchange across two relays that records no test issue when it fails (for load while
    /// the database is away): true when both sides saw both messages and closed.
    static func quietExchange(_ url: String, _ peerURL: String) throws -> Bool {
        let side = UUID().uuidString.prefix(8)
        let a = try WireClient.bound(url, app: app, side: "a\(side)")
        defer { a.close() }
        try a.send(["type": "allocate"])
        guard let nameplate = try a.next(type: "allocated")["nameplate"] as? String else { return false }
        try a.send(["type": "claim", "nameplate": nameplate])
        guard let mailbox = try a.next(type: "claimed")["mailbox"] as? String else { return false }
        try a.send(["type": "open", "mailbox": mailbox])
        try a.send(["type": "add", "phase": "pake", "body": "aa"])
        let b = try WireClient.bound(peerURL, app: app, side: "b\(side)")
        defer { b.close() }
        try b.send(["type": "claim", "nameplate": nameplate])
        guard try b.next(type: "claimed")["mailbox"] as? String == mailbox else { return false }
        try b.send(["type": "open", "mailbox": mailbox])
        try b.send(["type": "add", "phase": "pake", "body": "bb"])
        var seenA: [String] = []
        var seenB: [String] = []
        while seenA.count < 2 { seenA.append(try a.next(type: "message")["body"] as? String ?? "") }
        while seenB.count < 2 { seenB.append(try b.next(type: "message")["body"] as? String ?? "") }
        for client in [a, b] {
            try client.send(["type": "release", "nameplate": nameplate])
            try client.send(["type": "close", "mailbox": mailbox, "mood": "happy"])
            _ = try client.next(type: "closed")
        }
        return Set(seenA) == ["aa", "bb"] && Set(seenB) == ["aa", "bb"]
    }

    @Test(
        "three nodes act as one relay: allocate on node 1, claim on node 2, every subscriber on every node hears every message"
    )
    func threeNodesAsOne() async throws {
        try await TestSupport.offPool {
            let nodes = try RelayNodes(count: 3)
            #expect(nodes[0].log.contains("postgresql: "), "the log names the database, not the unused file")
            let a = try WireClient.bound(nodes[0].url, app: Self.app, side: "aaaaaaaaaa")
            defer { a.close() }
            try a.send(["type": "allocate"])
            let nameplate = try #require(try a.next(type: "allocated")["nameplate"] as? String)
            try a.send(["type": "claim", "nameplate": nameplate])
            let mailbox = try #require(try a.next(type: "claimed")["mailbox"] as? String)
            try a.send(["type": "open", "mailbox": mailbox])
            try a.send(["type": "add", "phase": "pake", "body": "a1a1"])
            #expect(try a.bodies(1) == ["a1a1"])

            // B, on node 2, claims the nameplate node 1 allocated: the same mailbox, replayed.
            let b = try WireClient.bound(nodes[1].url, app: Self.app, side: "bbbbbbbbbb")
            defer { b.close() }
            try b.send(["type": "claim", "nameplate": nameplate])
            #expect(try b.next(type: "claimed")["mailbox"] as? String == mailbox)
            try b.send(["type": "open", "mailbox": mailbox])
            #expect(try b.bodies(1) == ["a1a1"])
            // A second connection of side A, on node 3 (a reconnecting client), listens too.
            let a3 = try WireClient.bound(nodes[2].url, app: Self.app, side: "aaaaaaaaaa")
            defer { a3.close() }
            try a3.send(["type": "open", "mailbox": mailbox])
            #expect(try a3.bodies(1) == ["a1a1"])

            try b.send(["type": "add", "phase": "pake", "body": "b1b1"])
            #expect(try b.bodies(1) == ["b1b1"], "the echo")
            #expect(try a.bodies(1) == ["b1b1"], "node 2 to node 1")
            #expect(try a3.bodies(1) == ["b1b1"], "node 2 to node 3")
            try a3.send(["type": "add", "phase": "version", "body": "a2a2"])
            #expect(try a.bodies(1) == ["a2a2"])
            #expect(try b.bodies(1) == ["a2a2"])
            #expect(try a3.bodies(1) == ["a2a2"])

            // Release and close on different nodes: the nameplate and mailbox go everywhere.
            for client in [a, b] {
                try client.send(["type": "release", "nameplate": nameplate])
                _ = try client.next(type: "released")
            }
            try a3.send(["type": "close", "mailbox": mailbox, "mood": "happy"])
            _ = try a3.next(type: "closed")
            try b.send(["type": "close", "mailbox": mailbox, "mood": "happy"])
            _ = try b.next(type: "closed")
            // Closed on two nodes a moment apart: the node that saw both, or the expiry
            // leader within a tick, deletes the mailbox.
            #expect(
                eventually(timeout: 5) {
                    (try? PostgresRelayStorage(url: PostgresURL(nodes.cluster.url)).loadAndClose().mailboxes
                        .isEmpty)
                        == true
                })
            // Full exchanges, each side on its own node, all node pairs.
            for (i, j) in [(0, 1), (1, 2), (2, 0)] {
                _ = try RelayWireTests.exchange(
                    nodes[i].url, bodies: ("0a0\(i)", "0b0\(j)"), peerURL: nodes[j].url)
            }
        }
    }

    @Test(
        "nameplates stay unique while clients allocate on three nodes at once; one name claimed on two nodes is one mailbox"
    )
    func uniqueNameplatesUnderConcurrency() async throws {
        try await TestSupport.offPool {
            let nodes = try RelayNodes(count: 3)
            let results = Locked<[String]>([])
            let mailboxes = Locked<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 30) { i in
                guard let client = try? WireClient.bound(nodes[i % 3].url, app: Self.app, side: "s\(i)")
                else { return }
                defer { client.close() }
                try? client.send(["type": "allocate"])
                if let name = (try? client.next(type: "allocated", timeout: 15))?["nameplate"] as? String {
                    results.withLock { $0.append(name) }
                }
            }
            let names = results.withLock { $0 }
            #expect(names.count == 30)
            #expect(Set(names).count == 30, "\(names.sorted())")
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                guard let client = try? WireClient.bound(nodes[i].url, app: Self.app, side: "claimer\(i)")
                else { return }
                defer { client.close() }
                try? client.send(["type": "claim", "nameplate": "4242"])
                if let mailbox = (try? client.next(type: "claimed", timeout: 15))?["mailbox"] as? String {
                    mailboxes.withLock { $0.append(mailbox) }
                }
            }
            let seen = mailboxes.withLock { $0 }
            #expect(seen.count == 2 && Set(seen).count == 1, "\(seen)")
        }
    }

    /// Claims `name` on `url` as `side`; the mailbox, or the error text.
    static func claim(_ url: String, _ name: String, side: String) throws -> (WireClient, String) {
        let client = try WireClient.bound(url, app: app, side: side)
        try client.send(["type": "claim", "nameplate": name])
        let reply = try client.nextReply()
        return (client, reply["mailbox"] as? String ?? "error: \(reply["error"] ?? reply)")
    }

    @Test(
        "a nameplate released on two nodes is reused at once on the other nodes: a new mailbox, never the old one"
    )
    func nameReuseAcrossNodes() async throws {
        try await TestSupport.offPool {
            let nodes = try RelayNodes(count: 2)
            for round in 0..<12 {
                let name = "\(300 + round)"
                let (a, first) = try Self.claim(nodes[0].url, name, side: "a\(round)")
                let (b, same) = try Self.claim(nodes[1].url, name, side: "b\(round)")
                #expect(first == same)
                // The two sides finish on their own nodes, one just after the other.
                for client in [a, b] {
                    try client.send(["type": "release", "nameplate": name])
                    _ = try client.next(type: "released")
                    try client.send(["type": "close", "mailbox": first, "mood": "happy"])
                    _ = try client.next(type: "closed")
                    client.close()
                }
                if round % 4 == 3 { usleep(1_200_000) }  // now and then, after the expiry leader's sweep
                let (c, next) = try Self.claim(nodes[1].url, name, side: "c\(round)")
                let (d, nextToo) = try Self.claim(nodes[0].url, name, side: "d\(round)")
                #expect(next == nextToo, "round \(round)")
                #expect(next != first && !next.hasPrefix("error"), "round \(round): \(next)")
                c.close()
                d.close()
            }
        }
    }

    @Test(
        "kill -9 a node mid-exchange: its client reconnects to another node and finishes; nothing acknowledged is lost"
    )
    func nodeLoss() async throws {
        try await TestSupport.offPool {
            let nodes = try RelayNodes(count: 3)
            let a = try WireClient.bound(nodes[0].url, app: Self.app, side: "aaaaaaaaaa")
            try a.send(["type": "allocate"])
            let nameplate = try #require(try a.next(type: "allocated")["nameplate"] as? String)
            try a.send(["type": "claim", "nameplate": nameplate])
            let mailbox = try #require(try a.next(type: "claimed")["mailbox"] as? String)
            try a.send(["type": "open", "mailbox": mailbox])
            try a.send(["type": "add", "phase": "pake", "body": "a1a1"])
            #expect(try a.bodies(1) == ["a1a1"], "acknowledged: committed")
            let b = try WireClient.bound(nodes[1].url, app: Self.app, side: "bbbbbbbbbb")
            defer { b.close() }
            try b.send(["type": "claim", "nameplate": nameplate])
            #expect(try b.next(type: "claimed")["mailbox"] as? String == mailbox)
            try b.send(["type": "open", "mailbox": mailbox])
            #expect(try b.bodies(1) == ["a1a1"])

            nodes[0].stop(signal: SIGKILL)
            a.close()
            // B keeps going on node 2 while A is away.
            try b.send(["type": "add", "phase": "pake", "body": "b1b1"])
            #expect(try b.bodies(1) == ["b1b1"])

            // A reconnects to node 3 and resumes: same nameplate, same mailbox, everything replayed.
            let a2 = try WireClient.bound(nodes[2].url, app: Self.app, side: "aaaaaaaaaa")
            defer { a2.close() }
            try a2.send(["type": "claim", "nameplate": nameplate])
            #expect(try a2.next(type: "claimed")["mailbox"] as? String == mailbox)
            try a2.send(["type": "open", "mailbox": mailbox])
            #expect(try a2.bodies(2) == ["a1a1", "b1b1"])
            try a2.send(["type": "add", "phase": "version", "body": "a2a2"])
            #expect(try b.bodies(1) == ["a2a2"])
            #expect(try a2.bodies(1) == ["a2a2"])
        }
    }

    @Test(
        "PostgreSQL stopped under load: nodes answer with errors and 503, stay up, and serve again once it is back"
    )
    func databaseOutageUnderLoad() async throws {
        try await TestSupport.offPool {
            let nodes = try RelayNodes(count: 2, metrics: true)
            // An acknowledged message before the outage.
            let a = try WireClient.bound(nodes[0].url, app: Self.app, side: "aaaaaaaaaa")
            try a.send(["type": "claim", "nameplate": "77"])
            let mailbox = try #require(try a.next(type: "claimed")["mailbox"] as? String)
            try a.send(["type": "open", "mailbox": mailbox])
            try a.send(["type": "add", "phase": "pake", "body": "a1a1"])
            #expect(try a.bodies(1) == ["a1a1"])
            a.close()

            // Load: exchanges across the two nodes, bounded in count and time, while the
            // database goes away and comes back.
            let stop = Locked(false)
            let completed = Locked(0)
            let load = DispatchGroup()
            for worker in 0..<2 {
                DispatchQueue.global().async(group: load) {
                    var round = 0
                    while !stop.withLock({ $0 }) && round < 400 {
                        round += 1
                        if (try? Self.quietExchange(nodes[worker].url, nodes[1 - worker].url)) == true {
                            completed.withLock { $0 += 1 }
                        } else {
                            usleep(50_000)
                        }
                    }
                }
            }
            #expect(eventually(timeout: 10) { completed.withLock { $0 } >= 4 })
            nodes.cluster.stop()
            for node in nodes.nodes {
                let metrics = try #require(node.metricsURL)
                #expect(
                    eventually(timeout: 10) {
                        (try? HTTPClient.send(.get, url: metrics + "/healthz"))?.status.code == 503
                    }, "\(node.log)")
                let health = try HTTPClient.send(.get, url: metrics + "/healthz")
                #expect(health.bodyText.contains("storage_unavailable"))
                // A new client is told, not left hanging.
                let late = try WireClient(node.url)
                let welcome = late.welcome["welcome"] as? [String: Any]
                let refusal = welcome?["error"] as? String ?? ""
                #expect(refusal.contains("database"), "\(late.welcome)")
                late.close()
                #expect(node.server.isRunning, "no exit")
            }
            let before = completed.withLock { $0 }
            try nodes.cluster.start()
            for node in nodes.nodes {
                let metrics = try #require(node.metricsURL)
                #expect(
                    eventually(timeout: 15) {
                        (try? HTTPClient.send(.get, url: metrics + "/healthz"))?.status.code == 200
                    }, "\(node.log)")
            }
            #expect(eventually(timeout: 15) { completed.withLock { $0 } >= before + 4 }, "exchanges resume")
            stop.withLock { $0 = true }
            load.wait()
            // The log lines come through a pipe that a loaded machine drains late.
            try nodes[0].server.waitFor("\"event\":\"storage_failed\"")
            try nodes[0].server.waitFor("\"event\":\"storage_recovered\"")

            // The message acknowledged before the outage is there, through the other node.
            let b = try WireClient.bound(nodes[1].url, app: Self.app, side: "bbbbbbbbbb")
            defer { b.close() }
            try b.send(["type": "claim", "nameplate": "77"])
            #expect(try b.next(type: "claimed")["mailbox"] as? String == mailbox)
            try b.send(["type": "open", "mailbox": mailbox])
            #expect(try b.bodies(1) == ["a1a1"])
        }
    }

    /// The real `wormhole` CLI: sender on node 1, receiver on node 2. Then the sender's node
    /// is killed mid-exchange and replaced on the same address (what a load balancer gives
    /// clients); the sender reconnects there and the receiver, on node 2, finishes.
    @Test(
        "wormhole send and receive on different nodes, also across a kill -9 of the sender's node",
        .enabled(if: RelayWormholeCLITests.interop))
    func wormholeAcrossNodes() async throws {
        try await TestSupport.offPool {
            let nodes = try RelayNodes(count: 2)
            let home = nodes.dir.path("")
            let message = RelayWormholeCLITests.text("cross-node")
            let sender = try RelayWormholeCLITests.Wormhole(
                home: home, relayURL: nodes[0].url, ["send", "--text", message])
            let code = try sender.code()
            let receiver = try RelayWormholeCLITests.Wormhole(
                home: home, relayURL: nodes[1].url, ["receive", code])
            _ = try receiver.waitForLine(timeout: 60) { $0 == message }
            #expect(receiver.finish() == 0)
            #expect(sender.finish() == 0)

            let second = RelayWormholeCLITests.text("node-killed")
            let sender2 = try RelayWormholeCLITests.Wormhole(
                home: home, relayURL: nodes[0].url, ["send", "--text", second])
            let code2 = try sender2.code()
            let port = nodes[0].port
            nodes[0].stop(signal: SIGKILL)
            let replacement = try nodes.start(port: port)
            defer { replacement.stop() }
            let receiver2 = try RelayWormholeCLITests.Wormhole(
                home: home, relayURL: nodes[1].url, ["receive", code2])
            _ = try receiver2.waitForLine(timeout: 90) { $0 == second }
            #expect(receiver2.finish() == 0)
            #expect(sender2.finish() == 0)
        }
    }
}

extension PostgresRelayStorage {
    /// Opens nothing new: loads what is committed and closes (for checks from outside a node).
    func loadAndClose() throws -> RelaySnapshot {
        defer { close() }
        return try load()
    }
}
