import Foundation
import TestSupport
import Testing

/// Joining by short code a space this device is already in changes nothing, as with a link:
/// "You are already in Family; nothing changed", the inviter is not told that someone joined,
/// and the invite's use is not spent (someone else joins with it afterwards).
@Suite(.serialized) struct AlreadyMemberEndToEndTests {
    static func expectNothingChanged(
        _ again: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(again.status == 0, "\(again.stderr)", sourceLocation: sourceLocation)
        #expect(
            again.stdout.contains("You are already in Family; nothing changed."),
            "\(again.stdout) \(again.stderr)",
            sourceLocation: sourceLocation)
    }

    /// `eleven invite --short --yes`: Paul attends.
    @Test func personAttendedRepeatJoinSpendsNothing() async throws {
        try await JoinScenariosCLI.withServerAndRelay { server, relay in
            let w = try JoinScenariosCLI.makeWorld(relayURL: relay.url, server: server)
            let first = try w.background(w.paul, ["invite", "--short", "--yes"])
            let sam = try ElevenHome("sam")
            #expect(
                try w.run(sam, ["join", try first.value(afterPrefix: "Invite code:"), "--name", "Sam"]).status
                    == 0)
            #expect(first.finish(timeout: 20).status == 0)
            let invite = try w.background(w.paul, ["invite", "--short", "--yes"])
            let code = try invite.value(afterPrefix: "Invite code:")
            Self.expectNothingChanged(try w.run(sam, ["join", code, "--name", "Sam"]))
            let ann = try ElevenHome("ann")
            let annJoined = try w.run(ann, ["join", code, "--name", "Ann"])
            #expect(annJoined.status == 0, "\(annJoined.stderr)")
            let paulSaw = invite.finish(timeout: 20)
            #expect(paulSaw.status == 0, "\(paulSaw.stderr)")
            #expect(!paulSaw.stdout.contains("Sam joined"), "\(paulSaw.stdout)")
            #expect(paulSaw.stdout.contains("Ann joined Family."), "\(paulSaw.stdout)")
            let members = try w.paul.json(["members", "--json"])["members"] as? [[String: Any]] ?? []
            #expect(members.compactMap { $0["name"] as? String }.sorted() == ["Ann", "Paul", "Sam"])
        }
    }

    /// The bot attends.
    @Test func botAttendedRepeatJoinSpendsNothing() async throws {
        try await TestSupport.offPool {
            let w = try BotWorld()
            defer { w.stop() }
            let sam = try ElevenHome("sam")
            #expect(try w.run(sam, ["join", try w.invite(), "--name", "Sam"]).status == 0)
            let code = try w.invite()
            Self.expectNothingChanged(try w.run(sam, ["join", code, "--name", "Sam"]))
            let ann = try ElevenHome("ann")
            let annJoined = try w.run(ann, ["join", code, "--name", "Ann"])
            #expect(annJoined.status == 0, "\(annJoined.stderr)")
            let notes = try w.run(w.paul, ["bot", "notes"]).stdout
            #expect(notes.components(separatedBy: "Sam joined").count == 2, "\(notes)")
            #expect(notes.contains("Ann joined Family"), "\(notes)")
        }
    }
}
