import ClientCore
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

    /// Issue #21 item 1 for direct conversations: after a removal the next message in a direct
    /// conversation goes under a new key, wrapped to those of its two people who remain, without a
    /// step from anyone; the removed party's keys open nothing written there afterwards.
    @Test func aDirectConversationContinuesForThoseWhoRemain() async throws {
        try await LinkEndToEndTests().withServer { server in
            let paul = try LinkEndToEndTests.paul(server)
            let lee = try ElevenHome("lee")
            let leeJoined = try LinkEndToEndTests.join(
                lee, try LinkEndToEndTests.mint(paul, ["--dm", "--name", "Lee"]), ["--yes"])
            #expect(leeJoined.status == 0, "\(leeJoined.stderr)")
            let ann = try ElevenHome("ann")
            let annJoined = try LinkEndToEndTests.join(
                ann, try LinkEndToEndTests.mint(paul, ["--name", "Ann"]), ["--yes"])
            #expect(annJoined.status == 0, "\(annJoined.stderr)")
            let conversation = ["--thread", "Paul & Lee"]
            #expect(try paul.run(["send"] + conversation + ["before anyone left"]).status == 0)
            let state = LocalState.standard(environment: ["ELEVEN_HOME": lee.path])
            let leeSpace = try #require(try state.spaces().spaces.first)
            let leeIdentity = try state.identity(for: leeSpace)

            // Ann, who is not in it, leaves the space: the conversation goes on for Paul and Lee.
            #expect(try paul.run(["members", "remove", "Ann"]).status == 0)
            #expect(try paul.run(["send"] + conversation + ["after Ann left"]).status == 0)
            let leeRead = try lee.run(["read"] + conversation)
            #expect(
                leeRead.stdout == "Paul: before anyone left\nPaul: after Ann left\n",
                "\(leeRead.stdout) \(leeRead.stderr)")
            #expect(try lee.run(["send"] + conversation + ["Lee after Ann left"]).status == 0)
            #expect(try paul.run(["read"] + conversation).stdout.hasSuffix("Lee: Lee after Ann left\n"))

            // Lee is removed: what Paul writes there next is under a key Lee was never given.
            #expect(try paul.run(["members", "remove", "Lee"]).status == 0)
            #expect(try paul.run(["send"] + conversation + ["after Lee left"]).status == 0)
            #expect(try paul.run(["read"] + conversation).stdout.hasSuffix("Paul: after Lee left\n"))
            let readable = try RemovalEndToEndTests.readableWithEveryKeyEverGiven(
                server, member: leeSpace.member, identity: leeIdentity)
            print("Lee's keys open: \(readable)")
            #expect(readable.contains("after Ann left") && readable.contains("Lee after Ann left"))
            #expect(!readable.contains("after Lee left"))
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
