import Foundation
import Mailbox
import TestSupport
import Testing

@testable import Relay

/// Runs the same command sequences through the reference mailbox server's own handler code
/// (magic-wormhole-mailbox-server 0.8.0, in Python, no network) and through ``RelayCore``, and
/// compares every frame sent back (ignoring times, and random nameplates and mailbox ids).
@Suite("Differential against the reference server")
struct ReferenceDifferentialTests {
    /// One step: a connection opens (`nil`) or sends a frame. `$MAILBOX` stands for the mailbox
    /// id of the latest `claimed` reply in the scenario.
    typealias Step = (connection: Int, frame: String?)

    static func bind(_ c: Int, _ side: String) -> [Step] {
        [(c, nil), (c, #"{"type":"bind","appid":"example.com/app","side":"\#(side)","id":"b\#(c)"}"#)]
    }

    static let scenarios: [[Step]] = [
        // The observed exchange (§11), including replay, echo, release and close.
        bind(1, "aaaa") + [
            (1, #"{"type":"claim","nameplate":"7","id":"c1"}"#),
            (1, #"{"type":"open","mailbox":"$MAILBOX"}"#),
            (1, #"{"type":"add","phase":"pake","body":"aa01","id":"x1"}"#),
        ] + bind(2, "bbbb") + [
            (2, #"{"type":"claim","nameplate":"7"}"#),
            (2, #"{"type":"open","mailbox":"$MAILBOX"}"#),
            (2, #"{"type":"add","phase":"pake","body":"bb01"}"#),
            (2, #"{"type":"release","nameplate":"7"}"#),
            (1, #"{"type":"release"}"#),
            (1, #"{"type":"add","phase":"0","body":"aa02","id":"x2"}"#),
            (1, #"{"type":"close","mood":"happy"}"#),
            (2, #"{"type":"add","phase":"0","body":"bb02"}"#),
            (2, #"{"type":"close","mailbox":"$MAILBOX","mood":"happy"}"#),
            (2, #"{"type":"list"}"#),
        ],
        // Before bind.
        [
            (1, nil), (1, #"{"type":"ping","ping":12}"#), (1, #"{"type":"ping","ping":{"a":[1,"x",null]}}"#),
            (1, #"{"type":"ping"}"#), (1, #"{"id":"7"}"#), (1, #"{"type":"list","id":"l"}"#),
            (1, #"{"type":"allocate"}"#), (1, #"{"type":"claim","nameplate":"1"}"#),
            (1, #"{"type":"release"}"#),
            (1, #"{"type":"open","mailbox":"m"}"#), (1, #"{"type":"add","phase":"0","body":"00"}"#),
            (1, #"{"type":"close"}"#), (1, #"{"type":"what"}"#), (1, #"{"type":null}"#),
            (1, #"{"type":"submit-permissions","method":"hashcash"}"#), (1, #"{"type":"bind","side":"s"}"#),
            (1, #"{"type":"bind","appid":"a"}"#),
        ],
        // Wrong order and repeats on one bound connection.
        bind(1, "aaaa") + [
            (1, #"{"type":"bind","appid":"a","side":"b"}"#), (1, #"{"type":"release"}"#),
            (1, #"{"type":"close"}"#), (1, #"{"type":"add","phase":"0","body":"00"}"#),
            (1, #"{"type":"claim"}"#), (1, #"{"type":"claim","nameplate":"5"}"#),
            (1, #"{"type":"claim","nameplate":"6"}"#), (1, #"{"type":"release","nameplate":"6"}"#),
            (1, #"{"type":"release","nameplate":"5"}"#), (1, #"{"type":"release","nameplate":"5"}"#),
            (1, #"{"type":"open"}"#), (1, #"{"type":"open","mailbox":"$MAILBOX"}"#),
            (1, #"{"type":"open","mailbox":"$MAILBOX"}"#), (1, #"{"type":"add","body":"00"}"#),
            (1, #"{"type":"add","phase":"0"}"#), (1, #"{"type":"close","mailbox":"other"}"#),
            (1, #"{"type":"close","mood":"lonely"}"#), (1, #"{"type":"close"}"#),
            (1, #"{"type":"unknown"}"#), (1, #"{"type":"submit-permission"}"#),
        ],
        // Allocation, greed, and release without a claim on this connection.
        bind(1, "aaaa") + [
            (1, #"{"type":"allocate","id":"a1"}"#), (1, #"{"type":"allocate"}"#), (1, #"{"type":"release"}"#),
        ],
        // A third side is crowded out; a side that released may not reclaim.
        bind(1, "aaaa") + bind(2, "bbbb") + bind(3, "cccc") + [
            (1, #"{"type":"claim","nameplate":"4"}"#), (2, #"{"type":"claim","nameplate":"4"}"#),
            (3, #"{"type":"claim","nameplate":"4"}"#), (1, #"{"type":"release"}"#),
        ] + bind(4, "aaaa") + [(4, #"{"type":"claim","nameplate":"4"}"#)],
        // Reconnect: the same side claims again and the open replays everything.
        bind(1, "aaaa") + [
            (1, #"{"type":"claim","nameplate":"12"}"#), (1, #"{"type":"open","mailbox":"$MAILBOX"}"#),
            (1, #"{"type":"add","phase":"pake","body":"01"}"#),
            (1, #"{"type":"add","phase":"version","body":"02"}"#),
        ] + bind(2, "aaaa") + [
            (2, #"{"type":"claim","nameplate":"12"}"#), (2, #"{"type":"open","mailbox":"$MAILBOX"}"#),
            (2, #"{"type":"add","phase":"pake","body":"01"}"#),
            (1, #"{"type":"add","phase":"0","body":"03"}"#),
        ],
        // Close without open on this connection, twice; a standalone mailbox.
        bind(1, "aaaa") + bind(2, "bbbb") + [
            (1, #"{"type":"claim","nameplate":"3"}"#), (2, #"{"type":"claim","nameplate":"3"}"#),
            (1, #"{"type":"close","mailbox":"$MAILBOX","mood":"scary"}"#),
            (2, #"{"type":"close","mailbox":"$MAILBOX","mood":"happy"}"#),
        ] + bind(3, "aaaa") + [
            (3, #"{"type":"close","mailbox":"$MAILBOX","mood":"happy"}"#),
            (3, #"{"type":"open","mailbox":"standalone"}"#), (3, #"{"type":"add","phase":"x","body":""}"#),
            (3, #"{"type":"release","nameplate":"99"}"#),
        ],
        // Bad input the reference answers by dropping the connection; we answer with an error.
        [
            (1, nil), (1, "garbage"), (1, "[1]"), (1, #"{"type":"bind","appid":"a","side":"s"}"#),
            (1, #"{"type":"claim","nameplate":"abc"}"#), (1, #"{"type":"ping","ping":1}"#),
        ],
    ]

    /// The reference handler driven without a network; prints the frames of every step.
    static let driver = #"""
        import json, sys
        from wormhole_mailbox_server.database import create_channel_db
        from wormhole_mailbox_server.server import make_server
        from wormhole_mailbox_server.server_websocket import WebSocketServer

        class Factory:
            def __init__(self, server):
                self._server = server
                self.reactor = None

        current = []

        def run(steps):
            server = make_server(create_channel_db(":memory:"), allow_list=False)
            conns, out, mailbox = {}, [], None
            for conn, text in steps:
                current.clear()
                if conn not in conns:
                    p = WebSocketServer()
                    p.factory = Factory(server)
                    p._peer_addr_port = ("ipv4", "127.0.0.1", 1234)
                    p.sendMessage = (lambda c: lambda payload, isBinary=False: current.append(
                        [c, json.loads(payload.decode("utf-8"))]))(conn)
                    conns[conn] = p
                p = conns[conn]
                if text is None:
                    p.onOpen()
                elif text == "$CLOSE":
                    p.onClose(True, 1000, "")
                else:
                    if mailbox is not None:
                        text = text.replace("$MAILBOX", mailbox)
                    try:
                        p.onMessage(text.encode("utf-8"), False)
                    except Exception as e:
                        current.append([conn, {"type": "dropped"}])
                for c, m in current:
                    if m.get("type") == "claimed":
                        mailbox = m["mailbox"]
                out.append(list(current))
            return out

        print(json.dumps([run(s) for s in json.load(sys.stdin)]))
        """#

    /// Frames as comparable text (`c<connection> <json>`): sorted keys, no times, and the
    /// random nameplates and mailbox ids replaced by placeholders in order of appearance.
    static func canonical(_ frames: [(Int, JSONValue)], names: inout [String: String]) -> [String] {
        func collect(_ value: JSONValue) {
            guard case .object(let object) = value else { return }
            for key in ["mailbox", "nameplate"] {
                if let raw = object[key]?.stringValue, names[raw] == nil { names[raw] = "#\(names.count)" }
            }
        }
        func rewrite(_ value: JSONValue) -> JSONValue {
            switch value {
            case .string(let s): return .string(names[s] ?? s)
            case .array(let a): return .array(a.map(rewrite))
            case .object(let o):
                let members = o.members.sorted { $0.key < $1.key }.compactMap { m -> JSONObject.Member? in
                    switch m.key {
                    case "server_tx", "server_rx": return nil
                    case "welcome": return .init(key: m.key, value: "…")
                    default: return .init(key: m.key, value: rewrite(m.value))
                    }
                }
                return .object(JSONObject(members))
            default: return value
            }
        }
        return frames.map { connection, frame in
            collect(frame)
            return "c\(connection) " + JSONWriter.string(rewrite(frame))
        }
    }

    /// Where the reference drops the connection on an internal error and we answer as its
    /// documentation says: (scenario, step).
    static let referenceCrashes: Set<[Int]> = [
        // The last side closes a mailbox whose nameplate neither side released: the reference
        // deletes nameplate sides by side only (§14.8) and then fails a foreign key; we delete
        // the nameplate with its sides and answer `closed`.
        [6, 7],
        // Not JSON, not an object, a non-numeric nameplate (§2, §4.1 notes, §14.5).
        [7, 1], [7, 2], [7, 4],
    ]

    /// Runs scenarios through the reference; one array of (connection, frame) lists per step.
    static func reference(_ scenarios: [[Step]]) throws -> [JSONValue]? {
        let python = TestSupport.python
        #expect(FileManager.default.isExecutableFile(atPath: python), "no interop Python at \(python)")
        let request = JSONValue.array(
            scenarios.map { steps in
                .array(
                    steps.map {
                        .array([.number(JSONNumber($0.connection)), $0.frame.map { .string($0) } ?? .null])
                    })
            })
        let dir = try TempDir()
        defer { dir.cleanup() }
        let script = dir.path("driver.py")
        try Self.driver.write(toFile: script, atomically: true, encoding: .utf8)
        let result = try TestSupport.run(
            python, [script], stdin: Data(JSONWriter.string(request).utf8), timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        guard case .array(let referenceScenarios) = try JSONParser.parse(result.stdout) else {
            Issue.record("unexpected output: \(result.stdout.prefix(200))")
            return nil
        }
        #expect(referenceScenarios.count == scenarios.count)
        return referenceScenarios
    }

    /// Compares one scenario step by step. Returns the steps where the reference crashed and
    /// the number of steps compared; stops at a crash when `stopAtCrash`.
    static func compare(
        _ steps: [Step], reference: JSONValue, label: String, stopAtCrash: Bool = false
    ) -> (crashes: [Int], compared: Int) {
        guard case .array(let referenceSteps) = reference else { return ([], 0) }
        var h = CoreHarness(config: RelayConfig(welcome: WelcomeConfig(includeYourAddress: true)))
        var mailbox: String?
        var referenceNames: [String: String] = [:]
        var ourNames: [String: String] = [:]
        var crashes: [Int] = []
        var compared = 0
        for (n, step) in steps.enumerated() where n < referenceSteps.count {
            if let frame = step.frame {
                if frame == "$CLOSE" {
                    h.disconnect(UInt64(step.connection))
                } else {
                    h.send(
                        UInt64(step.connection),
                        mailbox.map { frame.replacingOccurrences(of: "$MAILBOX", with: $0) } ?? frame)
                }
            } else {
                h.connect(UInt64(step.connection))
            }
            let ours: [(Int, JSONValue)] = h.last.actions.compactMap {
                guard case .send(let message, let to) = $0 else { return nil }
                if case .claimed(let id) = message { mailbox = id.value }
                return (
                    Int(to.rawValue), .object(message.jsonObject(serverTX: RelayInstant(secondsSince1970: 0)))
                )
            }
            guard case .array(let theirSteps) = referenceSteps[n] else { continue }
            let theirs: [(Int, JSONValue)] = theirSteps.compactMap {
                guard case .array(let pair) = $0, pair.count == 2, case .number(let c) = pair[0] else {
                    return nil
                }
                return (Int(c.text) ?? -1, pair[1])
            }
            if theirs.contains(where: { $0.1.objectValue?["type"] == "dropped" }) {
                crashes.append(n)
                // Ours stays up and answers.
                #expect(!ours.isEmpty)
                if stopAtCrash { break }
                continue
            }
            let theirText = Self.canonical(theirs, names: &referenceNames)
            let ourText = Self.canonical(ours, names: &ourNames)
            #expect(ourText == theirText, "\(label) step \(n): \(step.frame ?? "connect")")
            compared += 1
            // A mailbox deleted while a connection still has it open: from here the reference
            // keeps that connection on a detached object (its adds are stored but heard by
            // nobody, or stored as orphans), while we refuse or deliver them. Stop comparing.
            let deleted = h.last.writes.compactMap { op -> MailboxKey? in
                if case .deleteMailbox(let key) = op { return key }
                return nil
            }
            let orphaned = deleted.contains { key in
                h.core.connections.values.contains { $0.openMailbox == key }
            }
            // The reference also deletes the closing side's rows on every other nameplate
            // (§14.8); we keep them. Stop comparing when that makes a difference.
            let side = h.core.connections[ConnectionID(UInt64(step.connection))]?.binding?.side
            let quirk =
                !deleted.isEmpty
                && h.core.state.nameplates.values.contains { np in side.map { np.sides[$0] != nil } ?? false }
            if (orphaned || quirk) && stopAtCrash { break }
        }
        return (crashes, compared)
    }

    @Test("replies match the reference server frame for frame")
    func differential() throws {
        if TestSupport.interopSkipped { return }
        guard let referenceScenarios = try Self.reference(Self.scenarios) else { return }
        var crashes: Set<[Int]> = []
        for (index, steps) in Self.scenarios.enumerated() where index < referenceScenarios.count {
            let result = Self.compare(steps, reference: referenceScenarios[index], label: "scenario \(index)")
            for step in result.crashes { crashes.insert([index, step]) }
        }
        #expect(crashes == Self.referenceCrashes)
    }

    /// Random traffic of two sides per AppID (so never crowded, where the reference keeps
    /// rows we refuse to write), with reconnects and disconnects. No `allocate`: its random
    /// choice differs between the two servers (the fixed scenarios cover it).
    static func randomScenario(seed: UInt64, steps: Int) -> [Step] {
        var random = SeededRandom(seed: seed)
        var result: [Step] = []
        var live: [Int] = []
        var next = 1
        func open() {
            let side = ["aaaa", "bbbb"].randomElement(using: &random)!
            result.append((next, nil))
            result.append((next, #"{"type":"bind","appid":"example.com/app","side":"\#(side)"}"#))
            live.append(next)
            next += 1
        }
        open()
        while result.count < steps {
            let roll = Int.random(in: 0..<100, using: &random)
            if live.isEmpty || (roll < 10 && live.count < 5) {
                open()
                continue
            }
            let c = live.randomElement(using: &random)!
            if roll < 15 {
                result.append((c, "$CLOSE"))
                live.removeAll { $0 == c }
                continue
            }
            let nameplate = ["1", "2"].randomElement(using: &random)!
            let mailbox = ["$MAILBOX", "$MAILBOX", "mx"].randomElement(using: &random)!
            let commands = [
                #"{"type":"claim","nameplate":"\#(nameplate)"}"#,
                #"{"type":"release"}"#, #"{"type":"release","nameplate":"\#(nameplate)"}"#,
                #"{"type":"open","mailbox":"\#(mailbox)"}"#,
                #"{"type":"add","phase":"p\#(roll % 3)","body":"b\#(roll)","id":"i\#(roll)"}"#,
                #"{"type":"close","mood":"happy"}"#,
                #"{"type":"close","mailbox":"\#(mailbox)","mood":"lonely"}"#,
                #"{"type":"list"}"#, #"{"type":"ping","ping":\#(roll)}"#,
            ]
            result.append((c, commands.randomElement(using: &random)!))
        }
        return result
    }

    @Test("random traffic: replies match the reference until it crashes")
    func randomDifferential() throws {
        if TestSupport.interopSkipped { return }
        let scenarios = (0..<60).map { Self.randomScenario(seed: UInt64($0) + 1000, steps: 40) }
        guard let referenceScenarios = try Self.reference(scenarios) else { return }
        var compared = 0
        for (index, steps) in scenarios.enumerated() where index < referenceScenarios.count {
            compared +=
                Self.compare(
                    steps, reference: referenceScenarios[index], label: "random \(index)", stopAtCrash: true
                ).compared
        }
        #expect(compared > 1000, "enough steps were compared (\(compared))")
    }
}
