import ClientCore
import JoinProtocol
import Mailbox
import Testing

/// `RendezvousMachine.replayingPeer()`: how the bot saves a use's relay connection so a restart
/// hears the joiner again from the start.
@Suite struct ReplayingPeerTests {
    static let mailbox = Rendezvous.MailboxID("mb1")
    static let me = Rendezvous.Side("0000000001")
    static let joiner = Rendezvous.Side("00000000ff")

    /// A machine that claimed nameplate 7, opened its mailbox and put its first message there.
    func published() throws -> RendezvousMachine {
        var machine = RendezvousMachine(
            appID: "test", side: Self.me, start: .claim(Rendezvous.Nameplate("7")))
        _ = machine.connected()
        _ = machine.received(.claimed(Self.mailbox))
        _ = try machine.send(phase: Rendezvous.Phase("pake"), body: [1])
        _ = machine.received(Self.message(side: Self.me, phase: Rendezvous.Phase("pake"), body: [1]))
        return machine
    }

    private func sent(_ actions: [RendezvousAction]) -> [ClientMessage] {
        actions.compactMap { if case .send(let message) = $0 { return message } else { return nil } }
    }

    @Test func beforeTheJoinerSpeaksTheClaimIsResumed() throws {
        var resumed = try published().replayingPeer()
        let messages = sent(resumed.connected())
        #expect(messages.contains(.claim(Rendezvous.Nameplate("7"))))
        #expect(messages.contains(.open(Self.mailbox)))
    }

    @Test func afterTheJoinerSpokeTheirMessagesAreDeliveredAgainWithoutAClaim() throws {
        var machine = try published()
        let first = machine.received(
            Self.message(side: Self.joiner, phase: Rendezvous.Phase("pake"), body: [2]))
        #expect(first.contains(.received(phase: Rendezvous.Phase("pake"), body: [2])))
        var resumed = machine.replayingPeer()
        let messages = sent(resumed.connected())
        #expect(!messages.contains(.claim(Rendezvous.Nameplate("7"))))
        #expect(!messages.contains { if case .release = $0 { return true } else { return false } })
        #expect(messages.contains(.open(Self.mailbox)))
        // The relay replays the mailbox: the joiner's message comes through once more.
        let again = resumed.received(
            Self.message(side: Self.joiner, phase: Rendezvous.Phase("pake"), body: [2]))
        #expect(again.contains(.received(phase: Rendezvous.Phase("pake"), body: [2])))
        // Without replaying, it would have been swallowed as already seen.
        #expect(
            machine.received(Self.message(side: Self.joiner, phase: Rendezvous.Phase("pake"), body: [2]))
                .isEmpty)
    }

    /// A relay's `message` carrying `body` from `side`.
    private static func message(side: Side, phase: Phase, body: [UInt8]) -> ServerMessage {
        .message(
            StoredMessage(
                side: side, phase: phase, body: Hex.encode(body), serverRX: RelayInstant(secondsSince1970: 1),
                messageID: .null))
    }
}
