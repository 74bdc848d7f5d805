import Foundation
import Mailbox
import Support
import TestSupport
import Testing

@testable import Relay

/// The relay tests' seeded generator (TestSupport's).
typealias SeededRandom = SplitMix64

let startTime = 1_700_000_000.0
let testApp = "example.com/test-app"

/// Drives a ``RelayCore`` and checks after every event that the writes it emitted, applied to
/// a shadow snapshot, give exactly the core's durable state (what a store would hold).
struct CoreHarness {
    var core: RelayCore
    var shadow: RelaySnapshot
    var now: Double
    var last = RelayOutput()

    init(
        config: RelayConfig = RelayConfig(), snapshot: RelaySnapshot = .empty, seed: UInt64 = 1,
        now: Double = startTime, shared: Bool = false
    ) {
        self.core = RelayCore(
            config: config, snapshot: snapshot, now: RelayInstant(secondsSince1970: now),
            random: SeededRandom(seed: seed), shared: shared)
        self.shadow = snapshot
        self.now = now
    }

    var instant: RelayInstant { RelayInstant(secondsSince1970: now) }

    /// `durable`: changes already in the store before this event (another node's, or a
    /// nameplate the shared store created).
    @discardableResult
    mutating func handle(_ event: RelayEvent, durable: [StorageOp] = []) -> RelayOutput {
        last = core.handle(event, now: instant)
        shadow.apply(durable)
        shadow.apply(last.writes)
        #expect(shadow == core.state, "writes must reproduce the core's durable state")
        return last
    }

    /// Opens connection `c` and returns what it was sent (the welcome).
    @discardableResult
    mutating func connect(_ c: UInt64, host: String = "192.0.2.1", port: Int = 40000) -> [ServerMessage] {
        let out = handle(
            .connectionOpened(ConnectionID(c), address: ClientAddress(family: .ipv4, host: host, port: port)))
        return Self.messages(out, to: c)
    }

    /// Sends a frame from `c` and returns what `c` was sent in response.
    @discardableResult
    mutating func send(_ c: UInt64, _ text: String) -> [ServerMessage] {
        Self.messages(handle(.received(Array(text.utf8), from: ConnectionID(c))), to: c)
    }

    /// Sends a frame built from members, returning what `c` was sent.
    @discardableResult
    mutating func send(_ c: UInt64, _ object: KeyValuePairs<String, JSONValue>) -> [ServerMessage] {
        send(c, JSONWriter.string(.object(JSONObject(object))))
    }

    mutating func disconnect(_ c: UInt64) {
        handle(.connectionClosed(ConnectionID(c)))
    }

    mutating func tick(after seconds: Double) -> RelayOutput {
        now += seconds
        return handle(.tick)
    }

    /// Connects `c` and binds it as `side`.
    mutating func bound(_ c: UInt64, side: String, app: String = testApp, host: String = "192.0.2.1") {
        connect(c, host: host)
        let replies = send(c, ["type": "bind", "appid": .string(app), "side": .string(side)])
        #expect(replies == [.ack(id: .null)])
    }

    /// Claims `nameplate` on `c` and returns the mailbox id (recording an issue on failure).
    @discardableResult
    mutating func claim(_ c: UInt64, _ nameplate: String) -> MailboxID {
        let replies = send(c, ["type": "claim", "nameplate": .string(nameplate)])
        guard replies.count == 2, case .claimed(let mailbox) = replies[1] else {
            Issue.record("claim failed: \(replies)")
            return MailboxID("claim failed")
        }
        return mailbox
    }

    static func messages(_ output: RelayOutput, to c: UInt64) -> [ServerMessage] {
        output.actions.compactMap {
            if case .send(let message, let to) = $0, to == ConnectionID(c) { return message }
            return nil
        }
    }

    func closes(_ c: UInt64) -> Bool { last.actions.contains(.close(ConnectionID(c))) }

    /// Everything `c` was sent by the last event.
    func sent(to c: UInt64) -> [ServerMessage] { Self.messages(last, to: c) }
}

extension ServerMessage {
    /// The error code, when this is an `error`.
    var errorCode: RelayError.Code? {
        if case .error(let e, _) = self { return e.code }
        return nil
    }
    var errorText: String? {
        if case .error(let e, _) = self { return e.message }
        return nil
    }
    var stored: StoredMessage? {
        if case .message(let m) = self { return m }
        return nil
    }
}
