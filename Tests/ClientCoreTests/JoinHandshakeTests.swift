import ClientCore
import JoinProtocol
import PAKE
import Testing

/// The join key agreement: honest runs agree, and a man-in-the-middle gets one guess.
@Suite struct JoinHandshakeTests {
    let binding = JoinBinding(intent: .join, nameplate: Rendezvous.Nameplate("42"))

    /// Runs joiner and attendant to completion with the mailbox delivering every message.
    /// Returns the two handshakes' errors (nil when that side confirmed).
    func run(
        joinerWords: String, attendantWords: String, joinerBinding: JoinBinding? = nil,
        attendantBinding: JoinBinding? = nil, seed: UInt64
    ) -> Outcome {
        var rng = SeededRandom(seed: seed)
        var joiner = JoinHandshake(
            role: .joiner, words: joinerWords, binding: joinerBinding ?? binding, using: &rng)
        var attendant = JoinHandshake(
            role: .attendant, words: attendantWords, binding: attendantBinding ?? binding, using: &rng)
        var joinerError: JoinHandshakeError?
        var attendantError: JoinHandshakeError?
        // The attendant's pake waits in the mailbox; the joiner answers with pake + confirm.
        var toAttendant: [(Rendezvous.Phase, [UInt8])] = [(.pake, joiner.firstMessage)]
        do {
            toAttendant += try joiner.receive(phase: .pake, body: attendant.firstMessage)
        } catch { joinerError = error }
        var toJoiner: [(Rendezvous.Phase, [UInt8])] = []
        for (phase, body) in toAttendant {
            do {
                toJoiner += try attendant.receive(phase: phase, body: body)
            } catch {
                attendantError = error
                break
            }
        }
        for (phase, body) in toJoiner {
            do { _ = try joiner.receive(phase: phase, body: body) } catch { joinerError = error }
        }
        return Outcome(
            joiner: joiner.channel, attendant: attendant.channel, joinerError: joinerError,
            attendantError: attendantError)
    }

    struct Outcome {
        let joiner: JoinChannel?
        let attendant: JoinChannel?
        let joinerError: JoinHandshakeError?
        let attendantError: JoinHandshakeError?
    }

    static let words = (0..<2048).map { "w\($0)" }
    static func code(_ rng: inout SeededRandom) -> String {
        let b = rng.bytes(count: 4)
        return "\(words[Int(b[0]) << 3 | Int(b[1] & 7)])-\(words[Int(b[2]) << 3 | Int(b[3] & 7)])"
    }

    @Test(arguments: 0..<40)
    func sameCodeConfirmsAndChannelsMatch(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed)
        let code = Self.code(&rng)
        let r = run(joinerWords: code, attendantWords: code, seed: seed)
        #expect(r.joinerError == nil && r.attendantError == nil)
        let j = try #require(r.joiner)
        let a = try #require(r.attendant)
        #expect(j.verifier == a.verifier)
        let sealed = j.seal(Array("hello".utf8), phase: .request, using: &rng)
        #expect(try a.open(sealed, phase: .request) == Array("hello".utf8))
        let back = a.seal([1, 2, 3], phase: .grant, using: &rng)
        #expect(try j.open(back, phase: .grant) == [1, 2, 3])
        // Wrong phase, own direction, tampering: all refused.
        #expect(throws: JoinHandshakeError.self) { try a.open(sealed, phase: .grant) }
        #expect(throws: JoinHandshakeError.self) { try j.open(sealed, phase: .request) }
        var tampered = sealed
        tampered[tampered.count - 1] ^= 1
        #expect(throws: JoinHandshakeError.self) { try a.open(tampered, phase: .request) }
    }

    @Test(arguments: 0..<40)
    func differentCodeFailsOnBothSidesAndAttendantRevealsNothing(seed: UInt64) {
        var rng = SeededRandom(seed: seed &+ 1000)
        let code = Self.code(&rng)
        var other = Self.code(&rng)
        while other == code { other = Self.code(&rng) }
        let r = run(joinerWords: other, attendantWords: code, seed: seed)
        #expect(r.attendantError == .codeMismatch)
        #expect(r.attendant == nil)
        #expect(r.joiner == nil)
    }

    /// A request carries the joiner's failed attempts (issue #20 item 5): they round-trip, a
    /// request without them (an older joiner) has none, and a malformed or oversized list fails
    /// the request clearly.
    @Test func aRequestCarriesTheJoinersFailedAttempts() throws {
        let reports = (0..<3).map {
            JoinAttemptReport(
                relay: "wss://relay.example/v1", nameplate: Rendezvous.Nameplate("\(40 + $0)"),
                side: Rendezvous.Side("abcdef012\($0)"), at: 1_700_000_000 + Int64($0),
                outcome: "code_mismatch")
        }
        let request = JoinRequest(
            displayName: "Sam", deviceLabel: "laptop", publicKeys: JoinerKeys(text: "k"),
            failedAttempts: reports)
        let decoded = try JoinMessage(decoding: JoinMessage.request(request).encoded(), allowed: ["request"])
        #expect(decoded == .request(request))
        #expect(reports.allSatisfy { $0.isTestedGuess })
        let plain = JoinRequest(displayName: "Sam", deviceLabel: "laptop", publicKeys: JoinerKeys(text: "k"))
        #expect(
            !String(decoding: JoinMessage.request(plain).encoded(), as: UTF8.self).contains("failed_attempts")
        )
        for bad in [
            #"[{"relay":"r","nameplate":"1","side":"s","at":"soon","outcome":"x"}]"#, #""none""#,
            "["
                + Array(
                    repeating: #"{"relay":"r","nameplate":"1","side":"s","at":1,"outcome":"x"}"#, count: 9
                )
                .joined(separator: ",") + "]",
        ] {
            let text =
                #"{"v":1,"type":"request","display_name":"S","device_label":"l","public_keys":"k","failed_attempts":"#
                + bad + "}"
            #expect(throws: JoinHandshakeError.self) {
                try JoinMessage(decoding: Array(text.utf8), allowed: ["request"])
            }
        }
    }

    @Test func intentAppIDAndNameplateAreBound() {
        let others = [
            JoinBinding(intent: .linkDevice, nameplate: Rendezvous.Nameplate("42")),
            JoinBinding(intent: .join, nameplate: Rendezvous.Nameplate("43")),
            JoinBinding(intent: .join, nameplate: Rendezvous.Nameplate("42"), appID: "example.com/x"),
        ]
        for (i, other) in others.enumerated() {
            let r = run(
                joinerWords: "coral-piano", attendantWords: "coral-piano", joinerBinding: other,
                seed: UInt64(i))
            #expect(r.attendantError == .codeMismatch)
            #expect(r.joiner == nil && r.attendant == nil)
        }
    }

    /// The attendant derives a code's password once and keeps it (every use of a multi-use
    /// invite is a new exchange with the same words): each exchange still stands on its own, a
    /// wrong guess fails as before, and the intent and AppID still separate the passwords.
    @Test func anAttendantServingOneCodeAgainAndAgainChecksEveryGuess() throws {
        for round in 0..<6 {
            let right = round % 2 == 0
            let r = run(
                joinerWords: right ? "amber-violin" : "amber-viola", attendantWords: "amber-violin",
                seed: UInt64(100 + round))
            if right {
                #expect(r.joinerError == nil && r.attendantError == nil)
                #expect(try #require(r.joiner).verifier == (try #require(r.attendant).verifier))
            } else {
                #expect(r.attendantError == .codeMismatch)
                #expect(r.joiner == nil && r.attendant == nil)
            }
        }
        let link = JoinBinding(intent: .linkDevice, nameplate: Rendezvous.Nameplate("42"))
        let other = JoinBinding(intent: .join, nameplate: Rendezvous.Nameplate("42"), appID: "example.com/x")
        for binding in [link, other] {
            let mismatched = run(
                joinerWords: "amber-violin", attendantWords: "amber-violin", attendantBinding: binding,
                seed: 7)
            #expect(mismatched.attendantError == .codeMismatch)
            let matched = run(
                joinerWords: "amber-violin", attendantWords: "amber-violin", joinerBinding: binding,
                attendantBinding: binding, seed: 8)
            #expect(matched.joinerError == nil && matched.attendantError == nil)
        }
    }

    /// A man-in-the-middle relays nothing honest: it runs its own handshake with a guessed code
    /// against each side. It confirms with a side exactly when its guess equals the code.
    @Test(arguments: 0..<60)
    func manInTheMiddleGetsOneGuess(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed &+ 5000)
        let code = Self.code(&rng)
        // Every fourth run the attacker guesses right (its one lucky guess).
        let guess = seed % 4 == 0 ? code : Self.code(&rng)
        var joiner = JoinHandshake(role: .joiner, words: code, binding: binding, using: &rng)
        var attendant = JoinHandshake(role: .attendant, words: code, binding: binding, using: &rng)
        var fakeAttendant = JoinHandshake(role: .attendant, words: guess, binding: binding, using: &rng)
        var fakeJoiner = JoinHandshake(role: .joiner, words: guess, binding: binding, using: &rng)

        // Attacker ↔ attendant.
        var attendantConfirmed = false
        var stolen: [UInt8]?
        do {
            let toAttendant =
                [(Rendezvous.Phase.pake, fakeJoiner.firstMessage)]
                + (try fakeJoiner.receive(phase: .pake, body: attendant.firstMessage))
            for (phase, body) in toAttendant {
                for (p, b) in try attendant.receive(phase: phase, body: body) {
                    _ = try fakeJoiner.receive(phase: p, body: b)
                }
            }
            attendantConfirmed = attendant.isConfirmed
            // Whatever the attendant would send now (a grant) the attacker could read.
            if let ch = attendant.channel, let mine = fakeJoiner.channel {
                stolen = try mine.open(ch.seal([7], phase: .grant, using: &rng), phase: .grant)
            }
        } catch {
            #expect(error == .codeMismatch)
        }
        // Attacker ↔ joiner.
        var joinerConfirmed = false
        do {
            var toAttacker = [(Rendezvous.Phase.pake, joiner.firstMessage)]
            toAttacker += try joiner.receive(phase: .pake, body: fakeAttendant.firstMessage)
            for (phase, body) in toAttacker {
                for (p, b) in try fakeAttendant.receive(phase: phase, body: body) {
                    _ = try joiner.receive(phase: p, body: b)
                }
            }
            joinerConfirmed = joiner.isConfirmed
        } catch {}

        let right = guess == code
        #expect(attendantConfirmed == right)
        #expect(joinerConfirmed == right)
        #expect((stolen != nil) == right)
        if right {
            // Detected only by the verification words, which differ on the two honest sides.
            #expect(joiner.channel?.verifier != attendant.channel?.verifier)
        }
    }

    @Test func outOfOrderAndMalformedMessagesEndTheHandshake() throws {
        var rng = SeededRandom(seed: 1)
        let peer = JoinHandshake(role: .joiner, words: "a-b", binding: binding, using: &rng)
        func fresh() -> JoinHandshake {
            JoinHandshake(role: .attendant, words: "a-b", binding: binding, using: &rng)
        }
        var a = fresh()
        #expect(throws: JoinHandshakeError.outOfOrder("a confirmation before the key-agreement message")) {
            try a.receive(phase: .confirm, body: [1] + [UInt8](repeating: 0, count: 32))
        }
        // After an error nothing more is accepted.
        #expect(throws: JoinHandshakeError.self) { try a.receive(phase: .pake, body: peer.firstMessage) }
        var b = fresh()
        #expect(throws: JoinHandshakeError.self) { try b.receive(phase: .request, body: [1]) }
        var c = fresh()
        #expect(throws: JoinHandshakeError.badMessage("protocol version 2 is not supported")) {
            try c.receive(phase: .pake, body: [2] + peer.firstMessage.dropFirst())
        }
        var d = fresh()
        #expect(throws: JoinHandshakeError.self) { try d.receive(phase: .pake, body: []) }
        var e = fresh()
        #expect(throws: JoinHandshakeError.self) {
            try e.receive(phase: .pake, body: Array(peer.firstMessage.dropLast()))
        }
        // The identity point (01 00…00) and a reflected message.
        var f = fresh()
        let identity: [UInt8] = [1, 1] + [UInt8](repeating: 0, count: 31)
        let identityError = throwing { () throws(JoinHandshakeError) in
            _ = try f.receive(phase: .pake, body: identity)
        }
        if case .invalidPeerMessage = identityError {
        } else {
            Issue.record("identity must be an invalid peer message")
        }
        var g = fresh()
        let own = g.firstMessage
        #expect(throws: JoinHandshakeError.invalidPeerMessage(.reflectedMessage)) {
            try g.receive(phase: .pake, body: own)
        }
        var h = fresh()
        _ = try h.receive(phase: .pake, body: peer.firstMessage)
        #expect(throws: JoinHandshakeError.outOfOrder("a second key-agreement message")) {
            try h.receive(phase: .pake, body: peer.firstMessage)
        }
    }
}

private func throwing(_ body: () throws(JoinHandshakeError) -> Void) -> JoinHandshakeError? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}
