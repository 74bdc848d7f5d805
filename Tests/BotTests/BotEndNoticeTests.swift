import ClientCore
import Foundation
import LoadHarness
import SidecarBot
import TestSupport
import Testing

/// An invite the bot attends that ends leaves the `ended` notice on its nameplate
/// (`docs/join-protocol.md`, "Ended invites"): the joiner after its last use hears at once that
/// it is used up instead of waiting for an answer that never comes.
@Suite(.serialized) struct BotEndNoticeTests {
    @Test func theJoinerAfterTheLastUseHearsItIsUsedUp() async throws {
        try await TestSupport.offPool {
            let world = try BotLoadWorld(
                program: TestSupport.productPath, relayArguments: ["--exempt-address", "127.0.0.1"])
            defer { world.remove() }
            let invite = try #require(try world.openInvites(1, uses: 2).first)
            #expect(world.join(nameplate: invite.nameplate, words: invite.words) == nil)
            #expect(world.join(nameplate: invite.nameplate, words: invite.words) == nil)
            // Without the notice this join waits its whole timeout and fails with `timed_out`.
            #expect(
                world.join(nameplate: invite.nameplate, words: invite.words, timeout: .seconds(15))
                    == "invite_used_up")
        }
    }
}
