import Testing

@testable import Mailbox
@testable import Relay

/// `ClientMessage.decode` reads the simple commands clients send with `QuickCommandReader`
/// (no JSON tree) and leaves everything else to the general parser: both paths must give the
/// same frame (object, id, kind, command or field error, acks) or the same error, on every
/// command, on hand-picked odd ones, and on randomly damaged ones.
@Suite("Quick command reader")
struct QuickCommandReaderTests {
    /// Our clients' commands (each kind, the quiet `bind` too), and other clients' shapes.
    static let samples: [String] =
        MailboxMessageCodecTests.clientMessages.map(\.encoded)
        + [
            ClientMessage.bind(appID: "a", side: "s", clientVersion: ["eleven", "1"]).encoded(acks: false),
            #"{"appid":"lothar.com/wormhole/text-or-file-xfer","side":"82c9d4bf7a","client_version":["python","0.24.0"],"id":"8cc4","type":"bind"}"#,
            #" { "id" : "35f8" , "type" : "allocate" } "#,
            "{\"type\":\"add\",\n\t\"phase\":\"pake\",\"body\":\"00aa\",\"id\":\"7f82\"}",
            #"{"type":"add","phase":null,"body":"00"}"#,
            #"{"type":"add","phase":"p","body":true}"#,
            #"{"type":"claim","nameplate":false}"#,
            #"{"type":"claim"}"#,
            #"{"type":"open","mailbox":"a-mailbox-name-longer-than-the-limit"}"#,
            #"{"type":"bind","appid":"x","side":"s","x-eleven-acks":"false"}"#,
            #"{"type":"bind","appid":"x","side":"s","x-eleven-acks":true}"#,
            #"{"type":"bind","appid":"x","side":"s","client_version":"python"}"#,
            #"{"type":"bind","appid":"x","side":"s","client_version":["python",1]}"#,
            #"{"type":"bind","appid":"x","side":"s","client_version":[]}"#,
            #"{"type":"frobnicate","id":null}"#,
            #"{"type":5}"#,
            #"{"type":"ping","ping":null}"#,
            #"{"type":"ping","ping":"p","extra":1}"#,
            #"{"type":"ping","ping":"a","ping":"b"}"#,
            #"{"type":"add","phase":"p","body":"caf\u00e9"}"#,
            "{\"type\":\"add\",\"phase\":\"p\",\"body\":\"café\"}",
            #"{"id":"1"}"#,
            "{}", "[]", "", "null", #"{"type":"list"} x"#,
        ]

    /// Both paths' answers for one payload, compared.
    static func check(_ payload: [UInt8]) -> Bool {
        let quick = ClientMessage.decode(payload, maximumFieldBytes: 24)
        let tree = ClientMessage.decodeTree(payload, maximumFieldBytes: 24)
        switch (quick, tree) {
        case (.success(let a), .success(let b)):
            #expect(a == b, "\(String(decoding: payload, as: UTF8.self))")
            #expect(a.object == b.object && a.message == b.message && a.id == b.id && a.acks == b.acks)
        case (.failure(let a), .failure(let b)):
            #expect(a == b)
        default:
            Issue.record("paths disagree on \(String(decoding: payload, as: UTF8.self)): \(quick) / \(tree)")
        }
        return QuickCommandReader.read(payload) != nil
    }

    @Test("the quick path reads our clients' commands")
    func ourCommandsTakeTheQuickPath() {
        for sample in Self.samples.prefix(MailboxMessageCodecTests.clientMessages.count + 2)
        where !sample.contains("nested") && !sample.contains(#""ping":7"#) && !sample.contains(#"\u0001"#) {
            #expect(QuickCommandReader.read(Array(sample.utf8)) != nil, "\(sample)")
        }
    }

    @Test("both paths agree on every sample and on damaged ones")
    func pathsAgree() {
        var random = SeededRandom(seed: 23)
        let alphabet = Array(#"{}[],:"\ tfn0aé"#.utf8) + [0x00, 0x1F, 0x7F, 0xFF, 0x0A]
        var quick = 0
        var total = 0
        for sample in Self.samples {
            let bytes = Array(sample.utf8)
            if Self.check(bytes) { quick += 1 }
            total += 1
            for _ in 0..<150 {
                var damaged = bytes
                for _ in 0...Int.random(in: 0...2, using: &random) {
                    let at = damaged.isEmpty ? 0 : Int.random(in: 0..<damaged.count, using: &random)
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0 where !damaged.isEmpty: damaged[at] = alphabet.randomElement(using: &random)!
                    case 1 where !damaged.isEmpty: damaged.remove(at: at)
                    case 2: damaged.insert(alphabet.randomElement(using: &random)!, at: at)
                    default: damaged = Array(damaged.prefix(at))
                    }
                }
                if Self.check(damaged) { quick += 1 }
                total += 1
            }
        }
        // Random bytes, mostly not JSON at all.
        for _ in 0..<500 {
            let count = Int.random(in: 0..<40, using: &random)
            _ = Self.check((0..<count).map { _ in alphabet.randomElement(using: &random)! })
        }
        // Some damaged payloads are still ones the quick path reads (a space, another letter);
        // most it must leave to the parser.
        #expect(quick > Self.samples.count && quick < total, "\(quick) of \(total)")
    }
}
