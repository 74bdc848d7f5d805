import Mailbox
import Testing

@testable import Relay

/// Eleven's second extension to protocol v1: an `add` with `"x-eleven-echo": false` is not
/// sent back to the connection that added it; everyone else subscribed hears it, an `open`
/// replays it, and an `add` that does not ask is echoed as before.
@Suite("Quiet echoes")
struct QuietEchoTests {
    static func add(_ body: String, phase: String = "pake", echo: JSONValue? = .bool(false))
        -> KeyValuePairs<String, JSONValue>
    {
        if let echo {
            return ["type": "add", "phase": .string(phase), "body": .string(body), "x-eleven-echo": echo]
        }
        return ["type": "add", "phase": .string(phase), "body": .string(body)]
    }

    /// Two sides bound (stock acks) on one mailbox, both open.
    static func openMailbox(_ h: inout CoreHarness) throws -> (nameplate: Nameplate, mailbox: MailboxID) {
        h.bound(1, side: "aaaaaaaaaa")
        h.bound(2, side: "bbbbbbbbbb")
        let allocated = h.send(1, ["type": "allocate"])
        let nameplate = try #require(
            allocated.compactMap { if case .allocated(let n) = $0 { n } else { nil } }.first)
        let claimed = h.send(1, ["type": "claim", "nameplate": .string(nameplate.value)])
        let mailbox = try #require(
            claimed.compactMap { if case .claimed(let m) = $0 { m } else { nil } }.first)
        _ = h.send(2, ["type": "claim", "nameplate": .string(nameplate.value)])
        _ = h.send(1, ["type": "open", "mailbox": .string(mailbox.value)])
        _ = h.send(2, ["type": "open", "mailbox": .string(mailbox.value)])
        return (nameplate, mailbox)
    }

    /// The messages the last event sent to connection `c`.
    static func messages(_ h: CoreHarness, to c: UInt64) -> [String] {
        h.last.actions.compactMap {
            guard case .send(.message(let stored), let to) = $0, to == ConnectionID(c) else { return nil }
            return stored.body
        }
    }

    @Test("a quiet add reaches the peer but not its sender; a stock add is echoed")
    func quietAddIsNotEchoed() throws {
        var h = CoreHarness()
        let (nameplate, mailbox) = try Self.openMailbox(&h)
        #expect(h.send(1, Self.add("00aa")) == [.ack(id: .null)])
        #expect(Self.messages(h, to: 2) == ["00aa"])
        #expect(Self.messages(h, to: 1) == [])
        // Without the key, or with any other value, the sender hears its own message.
        for (n, value) in [(0, nil), (1, JSONValue.bool(true)), (2, "false"), (3, .null)]
            as [(Int, JSONValue?)]
        {
            let phase = "p\(n)"
            let replies = h.send(1, Self.add("0\(n)", phase: phase, echo: value))
            #expect(replies.count == 2 && replies[1].stored?.body == "0\(n)")
            #expect(Self.messages(h, to: 2) == ["0\(n)"])
        }
        // The peer's quiet add is not echoed to it, and reaches us.
        _ = h.send(2, Self.add("00bb", phase: "version"))
        #expect(Self.messages(h, to: 1) == ["00bb"] && Self.messages(h, to: 2) == [])
        // The key on another command changes nothing.
        #expect(
            h.send(
                1, ["type": "release", "nameplate": .string(nameplate.value), "x-eleven-echo": .bool(false)])
                == [.ack(id: .null), .released])
        // A later connection of the same side is replayed everything, the quiet ones included.
        #expect(
            h.send(1, ["type": "close", "mailbox": .string(mailbox.value), "mood": "happy"]).last == .closed)
        h.bound(3, side: "aaaaaaaaaa")
        let replay = h.send(3, ["type": "open", "mailbox": .string(mailbox.value)]).compactMap(\.stored?.body)
        #expect(replay == ["00aa", "00", "01", "02", "03", "00bb"])
    }

    @Test("our clients' add carries the key, sorted among the others, and reads back as quiet")
    func clientEncoding() throws {
        let add = ClientMessage.add(phase: Phase("pake"), body: "00aa")
        #expect(
            add.encoded(acks: false, echo: false)
                == #"{"body":"00aa","phase":"pake","type":"add","x-eleven-echo":false}"#)
        #expect(add.encoded(acks: false) == add.encoded)
        #expect(!add.encoded.contains("x-eleven-echo"))
        let quiet = try ClientMessage.decode(add.encoded(acks: false, echo: false)).get()
        #expect(!quiet.echo && quiet.acks && quiet.message == .success(add))
        #expect(try ClientMessage.decode(add.encoded).get().echo)
        // Only `add` carries it.
        #expect(
            ClientMessage.release(nil).encoded(acks: true, echo: false) == ClientMessage.release(nil).encoded)
        #expect(try ClientMessage.decode(#"{"type":"release","x-eleven-echo":false}"#).get().echo)
    }
}
