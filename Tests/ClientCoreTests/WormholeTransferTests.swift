import ClientCore
import Foundation
import JoinProtocol
import PAKE
import Testing

/// The text-transfer machine with scripted rendezvous events: two machines against each other,
/// and a hand-driven peer (built from PAKE's primitives, as the Python client would behave) that
/// can say anything, including garbage.
@Suite struct WormholeTransferTests {
    static let appID = "lothar.com/wormhole/text-or-file-xfer"
    let senderSide = Rendezvous.Side("5e5e5e5e5e")
    let receiverSide = Rendezvous.Side("2ece2ece2e")

    enum PeerError: Error { case finishedTwice }

    /// A peer run by the test: derives the key like any Wormhole client and seals what it is told.
    final class Peer {
        let side: Rendezvous.Side
        private var pake: WormholeSPAKE2.AwaitingMessage?
        private(set) var key: SecretBytes?
        let pakeBody: [UInt8]
        var random = SeededRandom(seed: 99)

        init(code: String, side: Rendezvous.Side, appID: String = WormholeTransferTests.appID) {
            self.side = side
            let started = WormholeSPAKE2(password: Array(code.utf8), identity: Array(appID.utf8))
                .start(using: &random)
            pakeBody = WormholeMessage.pakeBody(started.message)
            pake = consume started
        }

        /// Takes the machine's pake body and derives the key.
        func finish(_ body: [UInt8]) throws {
            let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: String]
            let hex = try #require(object?["pake_v1"])
            let message = try #require(Hex.decode(hex))
            guard let started = pake.take() else { throw PeerError.finishedTwice }
            key = try started.finish(message)
        }

        func seal(_ plaintext: [UInt8], phase: String) -> [UInt8] {
            let phaseKey = WormholeKeys.phaseKey(from: key!, side: side.value, phase: phase)
            return WormholeSecretBox.seal(plaintext, key: phaseKey, using: &random)
        }

        func seal(json: String, phase: String) -> [UInt8] { seal(Array(json.utf8), phase: phase) }

        func open(_ body: [UInt8], from side: Rendezvous.Side, phase: Rendezvous.Phase) -> [UInt8]? {
            let phaseKey = WormholeKeys.phaseKey(from: key!, side: side.value, phase: phase.value)
            return WormholeSecretBox.open(body, key: phaseKey)
        }
    }

    static func sends(_ actions: [WormholeAction]) -> [(Rendezvous.Phase, [UInt8])] {
        actions.compactMap { if case .send(let p, let b) = $0 { return (p, b) } else { return nil } }
    }

    static func mood(_ actions: [WormholeAction]) -> Rendezvous.Mood? {
        actions.lazy.compactMap { if case .close(let m) = $0 { return m } else { return nil } }.first
    }

    static func outcome(_ actions: [WormholeAction]) -> WormholeOutcome? {
        actions.lazy.compactMap { if case .finished(let o) = $0 { return o } else { return nil } }.first
    }

    static func verifier(_ actions: [WormholeAction]) -> String? {
        actions.lazy.compactMap { if case .keyConfirmed(let v) = $0 { return v } else { return nil } }.first
    }

    /// Runs a sender and a receiver against each other through an ideal relay; returns every
    /// action each produced.
    func exchange(
        text: String, senderCode: String?, receiverCode: String, seed: UInt64 = 1
    ) throws -> (sender: [WormholeAction], receiver: [WormholeAction]) {
        var random = SeededRandom(seed: seed)
        var sender: WormholeTransfer
        var senderActions: [WormholeAction]
        if let senderCode {
            sender = WormholeTransfer(
                role: .sender(text: text), code: try WormholeCode(parsing: senderCode), appID: Self.appID,
                side: senderSide)
            senderActions = sender.start(using: &random)
        } else {
            sender = WormholeTransfer(sendingText: text, wordCount: 2, appID: Self.appID, side: senderSide)
            let needsAllocation = sender.needsAllocation
            #expect(needsAllocation)
            #expect(sender.start(using: &random).isEmpty)
            senderActions = sender.handle(
                .allocated(Rendezvous.Nameplate("4")), peerSide: nil, using: &random)
        }
        var receiver = WormholeTransfer(
            role: .receiver, code: try WormholeCode(parsing: receiverCode), appID: Self.appID,
            side: receiverSide)
        var receiverActions = receiver.start(using: &random)
        var allSender = senderActions
        var allReceiver = receiverActions
        var rounds = 0
        while rounds < 20 && (sender.outcome == nil || receiver.outcome == nil) {
            rounds += 1
            let toReceiver = Self.sends(senderActions)
            let toSender = Self.sends(receiverActions)
            senderActions = []
            receiverActions = []
            for (phase, body) in toReceiver {
                receiverActions += receiver.handle(
                    .received(phase: phase, body: body), peerSide: senderSide, using: &random)
            }
            for (phase, body) in toSender {
                senderActions += sender.handle(
                    .received(phase: phase, body: body), peerSide: receiverSide, using: &random)
            }
            allSender += senderActions
            allReceiver += receiverActions
            if toReceiver.isEmpty && toSender.isEmpty { break }
        }
        return (allSender, allReceiver)
    }

    @Test func textGoesThroughWithAnAllocatedCode() throws {
        var random = SeededRandom(seed: 5)
        var sender = WormholeTransfer(sendingText: "x", wordCount: 3, appID: Self.appID, side: senderSide)
        let first = sender.handle(.allocated(Rendezvous.Nameplate("17")), peerSide: nil, using: &random)
        guard case .codeReady(let code) = first.first else {
            Issue.record("the code comes first")
            return
        }
        #expect(code.nameplate.value == "17" && code.words.count == 3)
        #expect(Self.sends(first).map(\.0) == [.pake])

        let text = "héllo wörld 🎉\nline two\t\"quoted\" \\ \u{0}"
        let (s, r) = try exchange(
            text: text, senderCode: "4-guitarist-revenge", receiverCode: "4-guitarist-revenge")
        #expect(Self.outcome(s) == .sent)
        #expect(Self.outcome(r) == .received(text))
        #expect(Self.mood(s) == .happy && Self.mood(r) == .happy)
        let v = try #require(Self.verifier(s))
        #expect(v.count == 64 && v.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(Self.verifier(r) == v)
        // Sender: pake, version, offer in phase 0. Receiver: pake, version, answer in phase 0.
        #expect(Self.sends(s).map(\.0.value) == ["pake", "version", "0"])
        #expect(Self.sends(r).map(\.0.value) == ["pake", "version", "0"])
    }

    @Test func largeAndEmptyTexts() throws {
        for text in ["", String(repeating: "0123456789abcdef", count: 6400)] {
            let (s, r) = try exchange(text: text, senderCode: "9-a-b", receiverCode: "9-a-b")
            #expect(Self.outcome(s) == .sent)
            #expect(Self.outcome(r) == .received(text))
        }
    }

    @Test func wrongCodeIsScaryOnBothSides() throws {
        let (s, r) = try exchange(
            text: "secret", senderCode: "4-guitarist-revenge", receiverCode: "4-guitarist-revenue")
        #expect(Self.outcome(s) == .failed(.codeMismatch))
        #expect(Self.outcome(r) == .failed(.codeMismatch))
        #expect(Self.mood(s) == .scary && Self.mood(r) == .scary)
        // Nothing but pake and version ever left either side: the text was never sent.
        #expect(Self.sends(s).map(\.0.value) == ["pake", "version"])
        #expect(
            WormholeError.codeMismatch.description.contains("the code didn't match (or someone interfered)"))
    }

    @Test func differentAppIDsDoNotMatch() throws {
        var random = SeededRandom(seed: 3)
        let code = try WormholeCode(parsing: "3-a-b")
        var receiver = WormholeTransfer(role: .receiver, code: code, appID: Self.appID, side: receiverSide)
        let mine = Self.sends(receiver.start(using: &random))
        let peer = Peer(code: "3-a-b", side: senderSide, appID: "other/app")
        try peer.finish(mine[0].1)
        _ = receiver.handle(
            .received(phase: .pake, body: peer.pakeBody), peerSide: senderSide, using: &random)
        let actions = receiver.handle(
            .received(phase: .version, body: peer.seal(json: "{}", phase: "version")), peerSide: senderSide,
            using: &random)
        #expect(Self.outcome(actions) == .failed(.codeMismatch))
    }

    /// A receiver and a scripted peer that have completed the key exchange.
    struct Fixture: ~Copyable {
        var receiver: WormholeTransfer
        let peer: Peer
        var random: SeededRandom
        let peerSide: Rendezvous.Side

        /// Feeds a raw body in `phase`.
        mutating func feed(_ phase: String, raw body: [UInt8]) -> [WormholeAction] {
            receiver.handle(
                .received(phase: Rendezvous.Phase(phase), body: body), peerSide: peerSide, using: &random)
        }

        /// Feeds `json` sealed by the peer under `phase`'s key.
        mutating func feed(_ phase: String, sealed json: String) -> [WormholeAction] {
            feed(phase, raw: peer.seal(json: json, phase: phase))
        }
    }

    func receiverWithPeer(verify: Bool = false) throws -> Fixture {
        var random = SeededRandom(seed: 11)
        var receiver = WormholeTransfer(
            role: .receiver, code: try WormholeCode(parsing: "8-x-y"), appID: Self.appID, side: receiverSide,
            verify: verify)
        let pake = Self.sends(receiver.start(using: &random))
        let peer = Peer(code: "8-x-y", side: senderSide)
        try peer.finish(pake[0].1)
        let afterPake = receiver.handle(
            .received(phase: .pake, body: peer.pakeBody), peerSide: senderSide, using: &random)
        let version = try #require(Self.sends(afterPake).first)
        #expect(version.0 == .version)
        #expect(peer.open(version.1, from: receiverSide, phase: .version) == WormholeMessage.versionPlaintext)
        return Fixture(receiver: receiver, peer: peer, random: random, peerSide: senderSide)
    }

    @Test func fileOfferIsRefusedThroughTheProtocol() throws {
        var f = try receiverWithPeer()
        _ = f.feed("version", sealed: #"{"app_versions": {}}"#)
        // Python sends transit hints in phase 0 and the file offer in phase 1.
        #expect(f.feed("0", sealed: #"{"transit": {}}"#).isEmpty)
        let actions = f.feed("1", sealed: #"{"offer": {"file": {"filename": "a.txt", "filesize": 3}}}"#)
        let reply = try #require(Self.sends(actions).first)
        #expect(reply.0.value == "0")
        let plain = try #require(f.peer.open(reply.1, from: receiverSide, phase: reply.0))
        #expect(String(decoding: plain, as: UTF8.self).contains("not supported; ask for --text"))
        #expect(
            try WormholeMessage.parseApplication(plain)
                == .error("receiving a file is not supported; ask for --text"))
        #expect(Self.outcome(actions) == .failed(.offerNotSupported("a file")))
        #expect(Self.mood(actions) == .happy)
        // Nothing more happens after the end.
        #expect(f.feed("2", sealed: "{}").isEmpty)
    }

    @Test func directoryOfferIsRefusedToo() throws {
        var f = try receiverWithPeer()
        let actions = f.feed("0", sealed: #"{"offer": {"directory": {"dirname": "d"}}}"#)
        #expect(Self.outcome(actions) == .failed(.offerNotSupported("a directory")))
        #expect(Self.sends(actions).count == 1)
    }

    @Test func numericPhasesAreDeliveredInOrder() throws {
        var f = try receiverWithPeer()
        // Phase 1 (the offer) arrives before phase 0 (transit) and before version: it waits.
        let early = f.feed("1", sealed: #"{"offer": {"message": "late"}}"#)
        #expect(Self.outcome(early) == nil)
        #expect(Self.verifier(early) != nil)  // it decrypted: the key is confirmed
        let actions = f.feed("0", sealed: #"{"transit": {}}"#)
        #expect(Self.outcome(actions) == .received("late"))
    }

    @Test func peerErrorsAndRefusals() throws {
        var f = try receiverWithPeer()
        let actions = f.feed("0", sealed: #"{"error": "no thanks"}"#)
        #expect(Self.outcome(actions) == .failed(.peerError("no thanks")))

        // A sender whose receiver answers something other than ok.
        var random = SeededRandom(seed: 12)
        var sender = WormholeTransfer(
            role: .sender(text: "t"), code: try WormholeCode(parsing: "8-x-y"), appID: Self.appID,
            side: senderSide)
        let pake = Self.sends(sender.start(using: &random))
        let peer = Peer(code: "8-x-y", side: receiverSide)
        try peer.finish(pake[0].1)
        _ = sender.handle(
            .received(phase: .pake, body: peer.pakeBody), peerSide: receiverSide, using: &random)
        let confirmed = sender.handle(
            .received(phase: .version, body: peer.seal(json: "{}", phase: "version")), peerSide: receiverSide,
            using: &random)
        let offer = try #require(Self.sends(confirmed).first)
        #expect(offer.0.value == "0")
        let offered = try #require(peer.open(offer.1, from: senderSide, phase: offer.0))
        #expect(try WormholeMessage.parseApplication(offered) == .offerText("t"))
        let answered = sender.handle(
            .received(
                phase: Rendezvous.Phase("0"),
                body: peer.seal(json: #"{"answer": {"message_ack": "nope"}}"#, phase: "0")),
            peerSide: receiverSide, using: &random)
        #expect(Self.outcome(answered) == .failed(.textNotAccepted("message_ack nope")))
    }

    @Test func verifyHoldsTheTextUntilApproved() throws {
        var f = try receiverWithPeer(verify: true)
        let confirmed = f.feed("version", sealed: "{}")
        let asked = confirmed.compactMap { if case .askVerifier(let v) = $0 { return v } else { return nil } }
        #expect(asked.count == 1 && asked.first == Self.verifier(confirmed))
        // Held back: no answer, no outcome yet.
        #expect(f.feed("0", sealed: #"{"offer": {"message": "m"}}"#).isEmpty)
        let approved = f.receiver.approveVerifier(true, using: &f.random)
        #expect(Self.outcome(approved) == .received("m"))

        var g = try receiverWithPeer(verify: true)
        _ = g.feed("version", sealed: "{}")
        let rejected = g.receiver.approveVerifier(false, using: &g.random)
        #expect(Self.outcome(rejected) == .failed(.verifierRejected))
        #expect(Self.mood(rejected) == .scary)
        let refusal = try #require(Self.sends(rejected).first)
        let plain = try #require(g.peer.open(refusal.1, from: receiverSide, phase: refusal.0))
        #expect(
            try WormholeMessage.parseApplication(plain)
                == .error("verification rejected, abandoning transfer"))
    }

    @Test func abandoningIsLonelyBeforeThePeerAndErroryAfter() throws {
        var random = SeededRandom(seed: 4)
        var alone = WormholeTransfer(sendingText: "t", wordCount: 2, appID: Self.appID, side: senderSide)
        _ = alone.handle(.allocated(Rendezvous.Nameplate("1")), peerSide: nil, using: &random)
        let gaveUp = alone.abandon(.timedOut("nobody came"))
        #expect(Self.mood(gaveUp) == .lonely)
        #expect(Self.outcome(gaveUp) == .failed(.timedOut("nobody came")))
        #expect(alone.abandon(.timedOut("again")).isEmpty)

        var f = try receiverWithPeer()
        #expect(Self.mood(f.receiver.abandon(.timedOut("slow"))) == .errory)
    }

    @Test(arguments: [
        ("not json", "garbage"),
        ("no pake_v1", #"{"pake_v2": "00"}"#),
        ("not hex", #"{"pake_v1": "zz"}"#),
        ("short", #"{"pake_v1": "5300"}"#),
        ("wrong side byte", #"{"pake_v1": "41\#(String(repeating: "00", count: 32))"}"#),
        ("not a point", #"{"pake_v1": "53\#(String(repeating: "ff", count: 32))"}"#),
    ])
    func badKeyExchangeMessagesAreScary(_ why: String, _ body: String) throws {
        var random = SeededRandom(seed: 6)
        var receiver = WormholeTransfer(
            role: .receiver, code: try WormholeCode(parsing: "2-a-b"), appID: Self.appID, side: receiverSide)
        _ = receiver.start(using: &random)
        let actions = receiver.handle(
            .received(phase: .pake, body: Array(body.utf8)), peerSide: senderSide, using: &random)
        guard case .failed(.badKeyExchange) = Self.outcome(actions) else {
            Issue.record("\(why): \(actions)")
            return
        }
        #expect(Self.mood(actions) == .scary)
    }

    @Test func decryptedGarbageIsAnErrorNotACrash() throws {
        for plaintext in ["not json", "[1,2]", #"{"offer": "x"}"#, "\u{ff}"] {
            var f = try receiverWithPeer()
            let actions = f.feed("0", sealed: plaintext)
            guard case .failed(.badPeerMessage) = Self.outcome(actions) else {
                Issue.record("\(plaintext): \(actions)")
                continue
            }
            #expect(Self.mood(actions) == .errory)
        }
        // A version that decrypts but is not an object.
        var f = try receiverWithPeer()
        #expect(Self.mood(f.feed("version", sealed: "[]")) == .errory)
        // Bytes that are not UTF-8 at all.
        var g = try receiverWithPeer()
        #expect(Self.mood(g.feed("0", raw: g.peer.seal([0xff, 0xfe, 0x7b], phase: "0"))) == .errory)
    }

    @Test func ciphertextUnderAnotherKeyIsAWrongCode() throws {
        var f = try receiverWithPeer()
        let forged = WormholeSecretBox.seal(
            Array("{}".utf8), key: SecretBytes(Array(repeating: 7, count: 32)), using: &f.random)
        let actions = f.feed("version", raw: forged)
        #expect(Self.outcome(actions) == .failed(.codeMismatch))
        #expect(Self.mood(actions) == .scary)
        // Too short to be a box at all.
        var g = try receiverWithPeer()
        #expect(Self.outcome(g.feed("0", raw: [1, 2, 3])) == .failed(.codeMismatch))
    }

    @Test func messagesFarAheadAndUnknownPhases() throws {
        var f = try receiverWithPeer()
        #expect(f.feed("dilate-0", raw: [1, 2, 3]).isEmpty)
        #expect(f.feed("99999999999", raw: [1]).isEmpty)
        #expect(f.feed("-1", raw: [1]).isEmpty)
        #expect(Self.mood(f.feed("500", sealed: "{}")) == .errory)
    }

    @Test func randomPeerBytesNeverCrash() throws {
        var random = SeededRandom(seed: 2024)
        let phases = ["pake", "version", "0", "1"]
        for round in 0..<300 {
            var f = try receiverWithPeer()
            let phase = phases[round % phases.count]
            let length = Int(random.bytes(count: 1)[0]) % 80
            var body = random.bytes(count: length)
            // Half the time, well-sealed random plaintext (it decrypts: the parser must cope).
            if round % 2 == 1 && phase != "pake" { body = f.peer.seal(body, phase: phase) }
            let actions = f.feed(phase, raw: body)
            if let outcome = Self.outcome(actions), case .failed = outcome {
                continue
            } else if let outcome = Self.outcome(actions) {
                Issue.record("random bytes completed a transfer: \(outcome)")
            }
        }
    }
}
