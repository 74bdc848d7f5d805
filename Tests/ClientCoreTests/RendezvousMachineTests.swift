import ClientCore
import Foundation
import JoinProtocol
import Mailbox
import Testing

@Suite struct RendezvousMachineTests {
    let app = "elevenmessenger.com/join/v1"
    let me = Rendezvous.Side("aaaaaaaaaa")
    let peer = Rendezvous.Side("bbbbbbbbbb")
    let np = Rendezvous.Nameplate("42")
    let mb = Rendezvous.MailboxID("mkdckphwuanem")

    func sends(_ actions: [RendezvousAction]) -> [ClientMessage] {
        actions.compactMap { if case .send(let m) = $0 { return m } else { return nil } }
    }

    @Test func allocatingSideFullFlow() throws {
        var m = RendezvousMachine(appID: app, side: me, start: .allocate)
        #expect(
            sends(m.connected()) == [
                .bind(appID: AppID(app), side: me, clientVersion: ["eleven", "1"]), .allocate,
            ])
        #expect(m.received(.welcome(Welcome(motd: "hi"))) == [.motd("hi")])
        #expect(m.received(.ack(id: .null)) == [])
        #expect(m.received(.allocated(np)) == [.allocated(np), .send(.claim(np))])
        // A message queued before the mailbox is known waits for it.
        #expect(try m.send(phase: .pake, body: [1, 2]) == [])
        #expect(sends(m.received(.claimed(mb))) == [.open(mb), .add(phase: .pake, body: "0102")])
        #expect(!m.allEchoed)
        #expect(m.received(.message(side: me, phase: .pake, body: [1, 2])) == [])
        #expect(m.allEchoed)
        // The first peer message releases the nameplate; repeats are delivered once.
        #expect(
            m.received(.message(side: peer, phase: .pake, body: [9]))
                == [.received(phase: .pake, body: [9]), .send(.release(np))])
        #expect(m.received(.message(side: peer, phase: .pake, body: [9])) == [])
        #expect(m.received(.released) == [])
        #expect(sends(m.close(mood: .happy)) == [.close(mailbox: mb, mood: "happy")])
        #expect(m.received(.closed) == [.closed])
        #expect(m.isClosed)
        #expect(m.received(.message(side: peer, phase: .version, body: [])) == [])
    }

    @Test func claimingSide() throws {
        var m = RendezvousMachine(appID: app, side: peer, start: .claim(np))
        #expect(sends(m.connected()).dropFirst() == [.claim(np)])
        #expect(sends(m.received(.claimed(mb))) == [.open(mb)])
        #expect(sends(try m.send(phase: .pake, body: [3])) == [.add(phase: .pake, body: "03")])
    }

    @Test func reconnectResendsWhatWasNotEchoed() throws {
        var m = RendezvousMachine(appID: app, side: me, start: .claim(np))
        _ = m.connected()
        _ = m.received(.claimed(mb))
        _ = try m.send(phase: .pake, body: [1])
        _ = try m.send(phase: .version, body: [2])
        _ = m.received(.message(side: me, phase: .pake, body: [1]))
        m.disconnected()
        // Nothing is sent while down.
        #expect(try m.send(phase: Rendezvous.Phase("0"), body: [3]) == [])
        #expect(
            sends(m.connected()).dropFirst()
                == [
                    .claim(np), .open(mb), .add(phase: .version, body: "02"),
                    .add(phase: Rendezvous.Phase("0"), body: "03"),
                ])
    }

    @Test func closingAfterAReconnectStillDeliversUnechoedMessages() throws {
        var m = RendezvousMachine(appID: app, side: me, start: .claim(np))
        _ = m.connected()
        _ = m.received(.claimed(mb))
        _ = m.received(.message(side: peer, phase: .pake, body: [7]))
        _ = m.received(.released)
        _ = try m.send(phase: Rendezvous.Phase("0"), body: [5])  // the last answer, not echoed yet
        m.disconnected()
        #expect(m.close(mood: .happy).isEmpty)
        // The relay only takes an add after an open on the same connection: open, add, close.
        #expect(
            sends(m.connected()).dropFirst()
                == [
                    .open(mb), .add(phase: Rendezvous.Phase("0"), body: "05"),
                    .close(mailbox: mb, mood: "happy"),
                ])
    }

    @Test func aMessageSentWithoutEchoIsNotWaitedForAndResentUntilAReplayShowsIt() throws {
        var m = RendezvousMachine(appID: app, side: me, start: .claim(np))
        _ = m.connected()
        _ = m.received(.claimed(mb))
        // The key asks for no copy back; the machine does not wait for one.
        #expect(
            try m.send(phase: .pake, body: [1], echo: false) == [
                .sendWithoutEcho(.add(phase: .pake, body: "01"))
            ])
        #expect(m.allEchoed)
        _ = try m.send(phase: .version, body: [3])
        #expect(!m.allEchoed)
        #expect(m.received(.message(side: me, phase: .version, body: [3])) == [])
        #expect(m.allEchoed)
        // The relay's other replies are no receipt: a hostile path may hold the add back behind
        // the release, so a reconnect sends it again, still without an echo.
        #expect(
            m.received(.message(side: peer, phase: .pake, body: [7]))
                == [.received(phase: .pake, body: [7]), .send(.release(np))])
        #expect(m.received(.released) == [])
        m.disconnected()
        #expect(
            Array(m.connected().dropFirst()) == [
                .send(.open(mb)), .sendWithoutEcho(.add(phase: .pake, body: "01")),
            ])
        // The replay on that open shows it stored: a later reconnect does not send it again.
        _ = m.received(.message(side: me, phase: .pake, body: [1]))
        m.disconnected()
        #expect(Array(m.connected().dropFirst()) == [.send(.open(mb))])
    }

    @Test func anEchoOrAReplayStillCountsForAMessageSentWithoutOne() throws {
        // The reference server ignores the key and echoes; a replay on reopen counts too.
        var m = RendezvousMachine(appID: app, side: me, start: .claim(np))
        _ = m.connected()
        _ = m.received(.claimed(mb))
        _ = try m.send(phase: .pake, body: [1], echo: false)
        _ = try m.send(phase: .confirm, body: [2], echo: false)
        _ = m.received(.message(side: me, phase: .pake, body: [1]))
        m.disconnected()
        #expect(Array(sends(m.connected()).dropFirst()) == [.claim(np), .open(mb)])
        _ = m.received(.message(side: me, phase: .confirm, body: [2]))
        m.disconnected()
        #expect(Array(m.connected().dropFirst()) == [.send(.claim(np)), .send(.open(mb))])
    }

    @Test func aRestoredMachineSendsWithAnEchoWhatWasSentWithout() throws {
        var m = RendezvousMachine(appID: app, side: me, start: .claim(np))
        _ = m.connected()
        _ = m.received(.claimed(mb))
        _ = try m.send(phase: .pake, body: [1], echo: false)
        let restored = try JSONDecoder().decode(RendezvousMachine.self, from: try JSONEncoder().encode(m))
        #expect(restored == m)
        // Saved and restored: the next connection may not close, so it asks for the echo.
        var again = restored
        #expect(!again.allEchoed)
        #expect(
            sends(again.connected()).dropFirst() == [.claim(np), .open(mb), .add(phase: .pake, body: "01")])
    }

    @Test func survivesARestartThroughCodable() throws {
        var m = RendezvousMachine(appID: app, side: me, start: .claim(np))
        _ = m.connected()
        _ = m.received(.claimed(mb))
        _ = try m.send(phase: .pake, body: [1])
        _ = m.received(.message(side: peer, phase: .pake, body: [7]))  // release requested
        let saved = try JSONEncoder().encode(m)
        var restored = try JSONDecoder().decode(RendezvousMachine.self, from: saved)
        // After a restart: re-open, resend the unechoed add, resend release, never re-claim.
        #expect(
            sends(restored.connected()).dropFirst()
                == [.open(mb), .add(phase: .pake, body: "01"), .release(np)])
        // The peer's pake is not delivered twice after the restart.
        #expect(restored.received(.message(side: peer, phase: .pake, body: [7])) == [])
    }

    @Test func errorsEndTheRendezvous() {
        var m = RendezvousMachine(appID: app, side: me, start: .claim(np))
        _ = m.connected()
        #expect(
            m.received(.error(.crowded, orig: .object(JSONObject(["type": "claim"])))) == [.failed(.crowded)])
        #expect(m.failure == .crowded)
        #expect(m.connected() == [])
        var u = RendezvousMachine(appID: app, side: me, start: .allocate)
        #expect(u.received(.welcome(Welcome(error: "go away"))) == [.failed(.unwelcome("go away"))])
        var a = RendezvousMachine(appID: app, side: me, start: .claim(np))
        #expect(
            a.received(.allocated(np)) == [.failed(.protocolViolation("an allocation we did not ask for"))])
        var c = RendezvousMachine(appID: app, side: me, start: .claim(np))
        _ = c.received(.claimed(mb))
        #expect(c.received(.claimed(Rendezvous.MailboxID("other"))) == [.failed(.nameplateMoved)])
    }

    @Test func misuseIsAnError() throws {
        var m = RendezvousMachine(appID: app, side: me, start: .claim(np))
        _ = try m.send(phase: .pake, body: [])
        #expect(throws: RendezvousError.misuse("phase 'pake' used twice")) {
            try m.send(phase: .pake, body: [])
        }
        _ = m.close(mood: .lonely)
        #expect(throws: RendezvousError.self) { try m.send(phase: .version, body: []) }
    }

    @Test func aThirdSideIsIgnored() {
        var m = RendezvousMachine(appID: app, side: me, start: .claim(np))
        _ = m.connected()
        _ = m.received(.claimed(mb))
        _ = m.received(.message(side: peer, phase: .pake, body: [1]))
        #expect(m.received(.message(side: Rendezvous.Side("cccccccccc"), phase: .version, body: [6])) == [])
        #expect(m.peerSide == peer)
    }

    @Test func closeBeforeAnyMailboxReleasesTheNameplate() {
        var m = RendezvousMachine(appID: app, side: me, start: .claim(np))
        _ = m.connected()
        #expect(sends(m.close(mood: .lonely)) == [.release(np)])
        #expect(m.received(.released) == [.closed])
    }

    @Test func serverMessagesDecode() throws {
        #expect(
            try ServerMessage(decoding: #"{"type":"allocated","nameplate":"7","server_tx":1.5}"#)
                == .allocated(Rendezvous.Nameplate("7")))
        #expect(
            try ServerMessage(
                decoding:
                    #"{"type":"message","side":"ab","phase":"pake","body":"0aff","server_rx":1,"id":null}"#)
                == .message(
                    StoredMessage(
                        side: "ab", phase: .pake, body: "0aff", serverRX: RelayInstant(secondsSince1970: 1),
                        messageID: .null)))
        #expect(
            try ServerMessage(decoding: #"{"type":"error","error":"crowded","orig":{"type":"claim"}}"#)
                == .error(.crowded, orig: .object(JSONObject(["type": "claim"]))))
        #expect(try ServerMessage(decoding: #"{"type":"future-thing"}"#) == .unknown(type: "future-thing"))
        for bad in ["", "[]", "{}", "null", #"{"type":3}"#] {
            #expect(throws: ServerMessageError.notAMessage) { try ServerMessage(decoding: bad) }
        }
        #expect(throws: ServerMessageError.missingField(type: "claimed", field: "mailbox")) {
            try ServerMessage(decoding: #"{"type":"claimed"}"#)
        }
        #expect(
            ServerMessageError.missingField(type: "claimed", field: "mailbox").description
                == "the relay's 'claimed' message has no 'mailbox'")
    }

    /// A body that is not hex is the relay breaking the protocol: it ends the rendezvous, and
    /// is never delivered as bytes of some other message.
    @Test func aBodyThatIsNotHexEndsTheRendezvous() {
        var m = RendezvousMachine(appID: app, side: me, start: .claim(np))
        _ = m.connected()
        _ = m.received(.claimed(mb))
        let garbled = ServerMessage.message(
            StoredMessage(
                side: peer, phase: .pake, body: "zz", serverRX: RelayInstant(secondsSince1970: 1),
                messageID: .null))
        #expect(m.received(garbled) == [.failed(.protocolViolation("a mailbox message body is not hex"))])
    }

    @Test func clientMessagesEncode() throws {
        #expect(
            ClientMessage.add(phase: .pake, body: "dead").encoded
                == #"{"body":"dead","phase":"pake","type":"add"}"#)
        #expect(ClientMessage.release(nil).encoded == #"{"type":"release"}"#)
        #expect(Hex.decode("0") == nil)
        #expect(Hex.decode("ABcd") == [0xab, 0xcd])
        #expect(Hex.encode([0, 255]) == "00ff")
    }

    /// The frames a client sends, byte for byte: stock relays and the interop suites saw exactly
    /// these (members in key order, RFC 8259 escapes), whichever codec writes them.
    @Test func clientMessagesKeepTheirBytes() {
        let cases: [(ClientMessage, String)] = [
            (
                .bind(appID: "a\"b\\c\n\r\t\u{1}é", side: "s", clientVersion: []),
                #"{"appid":"a\"b\\c\n\r\t\u0001é","client_version":[],"side":"s","type":"bind"}"#
            ),
            (
                .bind(appID: "elevenmessenger.com/join/v1", side: "s", clientVersion: ["eleven", "1"]),
                #"{"appid":"elevenmessenger.com/join/v1","client_version":["eleven","1"],"side":"s","type":"bind"}"#
            ),
            (.allocate, #"{"type":"allocate"}"#),
            (.claim(Rendezvous.Nameplate("42")), #"{"nameplate":"42","type":"claim"}"#),
            (.release(nil), #"{"type":"release"}"#),
            (.release(Rendezvous.Nameplate("42")), #"{"nameplate":"42","type":"release"}"#),
            (.open(Rendezvous.MailboxID("abc")), #"{"mailbox":"abc","type":"open"}"#),
            (
                .add(phase: .pake, body: Hex.encode([0xde, 0xad])),
                #"{"body":"dead","phase":"pake","type":"add"}"#
            ),
            (.add(phase: Rendezvous.Phase("0"), body: ""), #"{"body":"","phase":"0","type":"add"}"#),
            (.close(mailbox: nil, mood: "happy"), #"{"mood":"happy","type":"close"}"#),
            (
                .close(mailbox: Rendezvous.MailboxID("abc"), mood: "lonely"),
                #"{"mailbox":"abc","mood":"lonely","type":"close"}"#
            ),
            (.list, #"{"type":"list"}"#),
            (.ping(.number(JSONNumber(7))), #"{"ping":7,"type":"ping"}"#),
            (.ping(.number(JSONNumber(-3))), #"{"ping":-3,"type":"ping"}"#),
            (
                .submitPermission(method: "hashcash", stamp: "1:16:x:r::a:b"),
                #"{"method":"hashcash","stamp":"1:16:x:r::a:b","type":"submit-permissions"}"#
            ),
        ]
        for (message, wire) in cases {
            #expect(message.encoded == wire)
        }
    }

    @Test func serverMessagesDecodeAsTheRelayWrites() throws {
        #expect(
            try ServerMessage(decoding: #"{"type":"welcome","welcome":{"motd":"hi"},"server_tx":1.0}"#)
                == .welcome(Welcome(motd: "hi")))
        #expect(try ServerMessage(decoding: #"{"type":"welcome","server_tx":1.0}"#) == .welcome(Welcome()))
        #expect(try ServerMessage(decoding: #"{"type":"ack","id":null,"server_tx":1.0}"#) == .ack(id: .null))
        #expect(
            try ServerMessage(decoding: #"{"type":"pong","pong":5,"server_tx":1.0}"#)
                == .pong(.number(JSONNumber(5))))
        #expect(
            try ServerMessage(
                decoding: #"{"type":"nameplates","nameplates":[{"id":"1"},{"id":23},{"id":"45"}]}"#)
                == .nameplates([Rendezvous.Nameplate("1"), Rendezvous.Nameplate("45")]))
        #expect(
            try ServerMessage(decoding: #"{"type":"error","error":"boom"}"#)
                == .error(RelayError(.unrecognized, "boom"), orig: .null))
        #expect(
            try ServerMessage(decoding: #"{"type":"error"}"#)
                == .error(RelayError(.unrecognized, "unspecified error"), orig: .null))
        #expect(
            try ServerMessage(decoding: #"{"type":"claimed","mailbox":"m1"}"#)
                == .claimed(Rendezvous.MailboxID("m1")))
    }
}
