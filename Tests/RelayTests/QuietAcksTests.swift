import Mailbox
import Testing

@testable import Relay

/// Eleven's one extension to protocol v1: a `bind` with `"x-eleven-acks": false` turns the
/// relay's `ack`s off for that connection; everything else is answered as before, and a
/// connection that does not ask keeps every ack.
@Suite("Quiet acks")
struct QuietAcksTests {
    static let quietBind: KeyValuePairs<String, JSONValue> = [
        "type": "bind", "appid": .string(testApp), "side": "aaaaaaaaaa", "x-eleven-acks": .bool(false),
    ]

    /// The answered marks the last event left for connection `c`.
    static func marks(_ h: CoreHarness, _ c: UInt64) -> Int {
        h.last.actions.filter { $0 == .answered(ConnectionID(c)) }.count
    }

    @Test("a quiet connection gets every reply but the acks, and one answered mark per command")
    func quietConnectionExchange() throws {
        var h = CoreHarness()
        h.connect(1)
        #expect(h.send(1, Self.quietBind) == [])
        #expect(Self.marks(h, 1) == 1)
        let allocated = h.send(1, ["type": "allocate"])
        guard allocated.count == 1, case .allocated(let nameplate) = allocated[0] else {
            Issue.record("no allocation: \(allocated)")
            return
        }
        #expect(Self.marks(h, 1) == 1)
        let claimed = h.send(1, ["type": "claim", "nameplate": .string(nameplate.value)])
        guard claimed.count == 1, case .claimed(let mailbox) = claimed[0] else {
            Issue.record("claim failed: \(claimed)")
            return
        }
        #expect(h.send(1, ["type": "open", "mailbox": .string(mailbox.value)]) == [])
        #expect(Self.marks(h, 1) == 1)
        let echo = h.send(1, ["type": "add", "phase": "pake", "body": "00aa"])
        #expect(echo.count == 1 && echo[0].stored?.body == "00aa")
        #expect(h.send(1, ["type": "ping", "ping": "q"]) == [.pong("q")])

        // A stock client on the same mailbox keeps its acks, and hears the quiet side's message.
        h.connect(2)
        #expect(
            h.send(2, ["type": "bind", "appid": .string(testApp), "side": "bbbbbbbbbb"]) == [.ack(id: .null)])
        #expect(Self.marks(h, 2) == 0)
        let claimedB = h.send(2, ["type": "claim", "nameplate": .string(nameplate.value), "id": "9"])
        #expect(claimedB == [.ack(id: "9"), .claimed(mailbox)])
        let opened = h.send(2, ["type": "open", "mailbox": .string(mailbox.value)])
        #expect(opened.count == 2 && opened[0] == .ack(id: .null) && opened[1].stored?.body == "00aa")

        // Errors still come, without an ack before them; the mark stands in for it.
        let again = h.send(1, Self.quietBind)
        #expect(again.map(\.errorCode) == [.alreadyBound])
        #expect(Self.marks(h, 1) == 1)
        #expect(h.send(1, ["type": "release"]) == [.released])
        #expect(
            h.send(1, ["type": "close", "mailbox": .string(mailbox.value), "mood": "happy"]) == [.closed])
        // A frame without a type was never acked: still one error, no mark.
        #expect(h.send(1, #"{"id":"1"}"#).map(\.errorCode) == [.missingType])
        #expect(Self.marks(h, 1) == 0)
    }

    @Test("only a first bind with the key set to false turns the acks off")
    func onlyFalseOnTheFirstBind() {
        var h = CoreHarness()
        // Any other value of the key leaves them on.
        for (c, value) in [(1, JSONValue.bool(true)), (2, "false"), (3, .null)] as [(UInt64, JSONValue)] {
            h.connect(c)
            let replies = h.send(
                c, ["type": "bind", "appid": .string(testApp), "side": "aaaaaaaaaa", "x-eleven-acks": value])
            #expect(replies == [.ack(id: .null)])
            #expect(h.send(c, ["type": "ping", "ping": "p"]) == [.ack(id: .null), .pong("p")])
        }
        // The key on a second bind (refused: already bound) changes nothing.
        h.bound(4, side: "dddddddddd")
        let second = h.send(4, Self.quietBind)
        #expect(second.first == .ack(id: .null) && second.last?.errorCode == .alreadyBound)
        #expect(h.send(4, ["type": "ping", "ping": "p"]) == [.ack(id: .null), .pong("p")])
        // The key on another command is ignored.
        h.bound(5, side: "eeeeeeeeee")
        #expect(
            h.send(5, ["type": "ping", "ping": "p", "x-eleven-acks": .bool(false)]) == [
                .ack(id: .null), .pong("p"),
            ])
        #expect(h.send(5, ["type": "ping", "ping": "p"]) == [.ack(id: .null), .pong("p")])
    }

    @Test("our clients' bind carries the key, sorted among the others, and reads back as quiet")
    func clientEncoding() throws {
        let bind = ClientMessage.bind(
            appID: AppID(testApp), side: Side("aaaaaaaaaa"), clientVersion: ["eleven", "1"])
        #expect(
            bind.encoded(acks: false)
                == #"{"appid":"example.com/test-app","client_version":["eleven","1"],"side":"aaaaaaaaaa","type":"bind","x-eleven-acks":false}"#
        )
        #expect(bind.encoded(acks: true) == bind.encoded)
        #expect(!bind.encoded.contains("x-eleven-acks"))
        let quiet = try ClientMessage.decode(bind.encoded(acks: false)).get()
        #expect(!quiet.acks && quiet.message == .success(bind))
        #expect(try ClientMessage.decode(bind.encoded).get().acks)
        // Only `bind` carries it.
        #expect(ClientMessage.allocate.encoded(acks: false) == ClientMessage.allocate.encoded)
    }
}
