import Foundation
import TestSupport
import Testing

/// A direct conversation stays between its two people (DESIGN.md promise 10): whoever joins the
/// space later, attended by a person, by the bot or by a link, gets the space's shared threads
/// and never the key to Paul and Lee's thread.
@Suite(.serialized) struct DirectConversationEndToEndTests {
    /// Paul invites Lee to a direct conversation by link; Lee joins and Paul writes there.
    static func directConversation(paul: ElevenHome, environment: [String: String] = [:]) throws {
        let minted = try paul.run(["invite", "--json", "--dm", "--name", "Lee"], environment: environment)
        #expect(minted.status == 0, "\(minted.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(minted.stdout.utf8)) as? [String: Any]
        let link = try #require(object?["link"] as? String)
        let lee = try ElevenHome("lee")
        let joined = try LinkEndToEndTests.join(lee, link, ["--yes"])
        #expect(joined.status == 0, "\(joined.stderr)")
        let sent = try paul.run(
            ["send", "--thread", "Paul & Lee", "secret for Lee only"], environment: environment)
        #expect(sent.status == 0, "\(sent.stderr)")
    }

    /// What a later joiner can read: the shared threads only.
    static func expectSharedThreadsOnly(_ joiner: ElevenHome, environment: [String: String] = [:]) throws {
        let threads = try joiner.run(["threads", "--json"], environment: environment)
        let object = try JSONSerialization.jsonObject(with: Data(threads.stdout.utf8)) as? [String: Any]
        let readable = (object?["threads"] as? [[String: Any]] ?? [])
            .filter { $0["readable"] as? Bool == true }.compactMap { $0["name"] as? String }.sorted()
        #expect(readable == ["general", "plans"], "\(threads.stdout)")
        let read = try joiner.run(["read", "--thread", "Paul & Lee"], environment: environment)
        #expect(read.status != 0)
        #expect(!read.stdout.contains("secret"), "\(read.stdout)")
    }

    /// `eleven invite --short --yes`: Paul attends Sam's join himself.
    @Test func personAttendedJoinerGetsNoDirectConversation() async throws {
        try await JoinScenariosCLI.withServerAndRelay { server, relay in
            let w = try JoinScenariosCLI.makeWorld(relayURL: relay.url, server: server)
            try Self.directConversation(paul: w.paul)
            let invite = try w.background(w.paul, ["invite", "--short", "--yes"])
            let code = try invite.value(afterPrefix: "Invite code:")
            let sam = try ElevenHome("sam")
            let joined = try w.run(sam, ["join", code, "--name", "Sam"])
            #expect(joined.status == 0, "\(joined.stderr)")
            #expect(invite.finish(timeout: 20).status == 0)
            #expect(joined.stdout.contains("Joined Family: 2 threads, 3 messages."), "\(joined.stdout)")
            try Self.expectSharedThreadsOnly(sam)
        }
    }

    /// The bot, which joined after the direct conversation began, attends Sam's join.
    @Test func botAttendedJoinerGetsNoDirectConversation() async throws {
        try await TestSupport.offPool {
            let w = try BotWorld { try Self.directConversation(paul: $0.paul) }
            defer { w.stop() }
            let code = try w.invite()
            let sam = try ElevenHome("sam")
            let joined = try w.run(sam, ["join", code, "--name", "Sam"])
            #expect(joined.status == 0, "\(joined.stderr)")
            #expect(joined.stdout.contains("Joined Family: 2 threads, 3 messages."), "\(joined.stdout)")
            try Self.expectSharedThreadsOnly(sam)
        }
    }

    /// A member link minted after the direct conversation began.
    @Test func linkJoinerGetsNoDirectConversation() async throws {
        try await JoinScenariosCLI.withServerAndRelay { server, relay in
            let w = try JoinScenariosCLI.makeWorld(relayURL: relay.url, server: server)
            try Self.directConversation(paul: w.paul)
            let link = try LinkEndToEndTests.mint(w.paul, [])
            let ann = try ElevenHome("ann")
            let joined = try LinkEndToEndTests.join(ann, link, ["--yes"])
            #expect(joined.status == 0, "\(joined.stderr)")
            try Self.expectSharedThreadsOnly(ann)
        }
    }
}
