import CSodium
import Foundation
import Testing

@testable import PAKE

/// What side A says when it receives `message`, built from B's honest message, A's own
/// message and the password (nil: accepted).
private func rejection(
    _ suite: SPAKE2.Suite,
    _ message: (_ honestB: [UInt8], _ ownA: [UInt8], _ password: SPAKE2.Password) -> [UInt8]
) -> SPAKE2Error? {
    var random = SeededRandom(seed: 1)
    let password = SPAKE2.Password(deriving: Array("coral-piano-42".utf8), context: [UInt8](), suite: suite)
    let a = SPAKE2(role: .a, password: password, identityA: [1], identityB: [2]).start(using: &random)
    let honestB = SPAKE2(role: .b, password: password, identityA: [1], identityB: [2]).start(using: &random)
        .message
    let own = a.message
    do {
        _ = try a.receive(message(honestB, own, password))
        return nil
    } catch {
        return error
    }
}

/// What a Wormhole side says when it receives `message` (nil: accepted).
private func wormholeRejection(_ message: (_ honest: [UInt8], _ own: [UInt8], _ wS: [UInt8]) -> [UInt8])
    -> SPAKE2Error?
{
    var random = SeededRandom(seed: 3)
    let one = WormholeSPAKE2(password: Array("7-guitarist-revenge".utf8), identity: [UInt8]()).start(
        using: &random)
    let two = WormholeSPAKE2(password: Array("7-guitarist-revenge".utf8), identity: [UInt8]())
    let wS = two.passwordTimesS.unredactedBytes()
    let honest = two.start(using: &random).message
    let own = one.message
    do {
        _ = try one.finish(message(honest, own, wS))
        return nil
    } catch {
        return error
    }
}

private let ed25519Prime = [UInt8](repeating: 0xff, count: 31).reduce(into: [0xed]) { $0.append($1) }
    .enumerated().map {
        $0.offset == 31 ? UInt8(0x7f) : $0.element
    }

/// Little-endian encodings for edwards25519 test inputs.
enum BadEdwardsPoints {
    /// y = q (non-canonical for 0).
    static let yEqualsPrime = ed25519Prime
    /// y = q + 2 (non-canonical for 2).
    static let yAbovePrime: [UInt8] = {
        var p = ed25519Prime
        p[0] = 0xef
        return p
    }()
    /// The identity with its sign bit set (x = 0 cannot be negative).
    static let negativeZeroIdentity: [UInt8] = [1] + [UInt8](repeating: 0, count: 30) + [0x80]
    /// The order-2 point (0, −1) with its sign bit set.
    static let negativeZeroOrderTwo: [UInt8] = {
        var p = ed25519Prime
        p[0] = 0xec
        p[31] = 0xff
        return p
    }()
    /// A y with no point on the curve.
    static let offCurve: [UInt8] = {
        var y: UInt32 = 2
        while true {
            let encoding = Array(
                BigEndianMath.add([UInt8](repeating: 0, count: 32), y, modulo: Ed25519TestPoints.prime)
                    .reversed())
            if Ed25519TestPoints.add(encoding, Ed25519TestPoints.identity) == nil { return encoding }
            y += 1
        }
    }()
    static let orderEight = Ed25519TestPoints.orderEight
    static let orderFour = Ed25519TestPoints.add(orderEight, orderEight)!
    static let orderTwo = Ed25519TestPoints.add(orderFour, orderFour)!

    /// Every small-order and malformed input with the error it must produce.
    static let cases: [([UInt8], SPAKE2Error)] = [
        (yEqualsPrime, .nonCanonicalEncoding),
        (yAbovePrime, .nonCanonicalEncoding),
        (negativeZeroIdentity, .nonCanonicalEncoding),
        (negativeZeroOrderTwo, .nonCanonicalEncoding),
        (offCurve, .notOnCurve),
        (Ed25519TestPoints.identity, .identityElement),
        (orderTwo, .notInPrimeOrderSubgroup),
        (orderFour, .notInPrimeOrderSubgroup),
        (orderEight, .notInPrimeOrderSubgroup),
    ]
}

@Suite("Rejecting bad peer input")
struct RejectionTests {
    @Test func torsionPointsAreWhatTheyClaim() {
        #expect(BadEdwardsPoints.orderTwo != Ed25519TestPoints.identity)
        #expect(BadEdwardsPoints.orderFour != Ed25519TestPoints.identity)
        #expect(
            Ed25519TestPoints.add(BadEdwardsPoints.orderTwo, BadEdwardsPoints.orderTwo)
                == Ed25519TestPoints.identity)
        #expect(!Ed25519TestPoints.isValid(BadEdwardsPoints.orderEight))
        // (0, −1): y = q − 1, the only point of order 2.
        var expectedOrderTwo = ed25519Prime
        expectedOrderTwo[0] = 0xec
        #expect(BadEdwardsPoints.orderTwo == expectedOrderTwo)
    }

    @Test(arguments: [0, 1, 31, 33, 64])
    func edwardsWrongLength(_ length: Int) {
        let error = rejection(.edwards25519) { honest, _, _ in Array((honest + honest).prefix(length)) }
        #expect(error == .wrongMessageLength(expected: 32, actual: length))
    }

    @Test(arguments: BadEdwardsPoints.cases)
    func edwardsBadPoint(_ point: [UInt8], _ expected: SPAKE2Error) {
        #expect(rejection(.edwards25519) { _, _, _ in point } == expected)
        #expect(wormholeRejection { _, _, _ in [0x53] + point } == expected)
    }

    /// An honest message plus a small-order point: on the curve, but with a torsion component.
    @Test(arguments: [BadEdwardsPoints.orderTwo, BadEdwardsPoints.orderFour, BadEdwardsPoints.orderEight])
    func edwardsMixedTorsion(_ torsion: [UInt8]) {
        let error = rejection(.edwards25519) { honest, _, _ in Ed25519TestPoints.add(honest, torsion)! }
        #expect(error == .notInPrimeOrderSubgroup)
        let wormhole = wormholeRejection { honest, _, _ in
            [0x53] + Ed25519TestPoints.add(Array(honest.dropFirst()), torsion)!
        }
        #expect(wormhole == .notInPrimeOrderSubgroup)
    }

    @Test func edwardsReflectionAndCancellation() {
        #expect(rejection(.edwards25519) { _, own, _ in own } == .reflectedMessage)
        #expect(
            rejection(.edwards25519) { _, _, password in password.timesN.unredactedBytes() }
                == .identityElement)
        #expect(rejection(.edwards25519) { honest, _, _ in honest } == nil)
        #expect(wormholeRejection { _, own, _ in own } == .reflectedMessage)
        #expect(wormholeRejection { _, _, wS in [0x53] + wS } == .identityElement)
        #expect(wormholeRejection { honest, _, _ in honest } == nil)
    }

    /// With `.continueWithRandomKey` an identity result (the peer cancelled the password
    /// blinding, as a prober sending w'·M with the right w' does) is not refused at once: the
    /// exchange goes on and only the confirmation fails, as with any wrong password. The identity
    /// encoding itself, which does not depend on the password, is still refused at once.
    @Test(arguments: SPAKE2.Suite.allCases)
    func identityResultCanLookLikeAWrongPassword(_ suite: SPAKE2.Suite) throws {
        var random = SeededRandom(seed: 9)
        let password = SPAKE2.Password(
            deriving: Array("coral-piano-42".utf8), context: [UInt8](), suite: suite)
        func start() -> SPAKE2.AwaitingMessage {
            SPAKE2(
                role: .a, password: password, identityA: [1], identityB: [2],
                identityResult: .continueWithRandomKey
            ).start(using: &random)
        }
        let confirming = try start().receive(password.timesN.unredactedBytes())
        var refused: SPAKE2Error?
        do {
            _ = try confirming.finish(peerConfirmation: [UInt8](repeating: 7, count: 32))
        } catch {
            refused = error
        }
        #expect(refused == .confirmationMismatch)
        let identity: [UInt8] = suite == .edwards25519 ? [1] + [UInt8](repeating: 0, count: 31) : [0]
        #expect(throws: SPAKE2Error.identityElement) { _ = try start().receive(identity) }
    }

    @Test(arguments: [0, 1, 32, 34, 66])
    func wormholeWrongLength(_ length: Int) {
        let error = wormholeRejection { honest, _, _ in Array((honest + honest).prefix(length)) }
        #expect(error == .wrongMessageLength(expected: 33, actual: length))
    }

    @Test(arguments: [UInt8(ascii: "A"), UInt8(ascii: "B"), 0x00, 0x54])
    func wormholeSideByte(_ side: UInt8) {
        #expect(
            wormholeRejection { honest, _, _ in [side] + honest.dropFirst() } == .unexpectedSideByte(side))
    }

    static let p256Prime = [UInt8](hex: "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")

    @Test func p256BadPoints() {
        let checks: [(String, ([UInt8]) -> [UInt8], SPAKE2Error?)] = [
            ("honest", { $0 }, nil),
            ("empty", { _ in [] }, .wrongMessageLength(expected: 65, actual: 0)),
            ("identity", { _ in [0] }, .identityElement),
            (
                "compressed", { [0x02 | ($0[64] & 1)] + $0[1...32] },
                .wrongMessageLength(expected: 65, actual: 33)
            ),
            ("64 bytes", { Array($0.prefix(64)) }, .wrongMessageLength(expected: 65, actual: 64)),
            ("66 bytes", { $0 + [0] }, .wrongMessageLength(expected: 65, actual: 66)),
            ("compressed prefix", { [0x02] + $0.dropFirst() }, .nonCanonicalEncoding),
            ("hybrid prefix", { [0x06 | ($0[64] & 1)] + $0.dropFirst() }, .nonCanonicalEncoding),
            ("x = p", { [0x04] + Self.p256Prime + $0[33...] }, .nonCanonicalEncoding),
            ("y = p", { Array($0[...32]) + Self.p256Prime }, .nonCanonicalEncoding),
            (
                "off curve",
                {
                    var p = $0
                    p[64] ^= 1
                    return p
                }, .notOnCurve
            ),
            ("zero point", { _ in [0x04] + [UInt8](repeating: 0, count: 64) }, .notOnCurve),
        ]
        for (name, transform, expected) in checks {
            #expect(rejection(.p256) { honest, _, _ in transform(honest) } == expected, "\(name)")
        }
        #expect(rejection(.p256) { _, own, _ in own } == .reflectedMessage)
        #expect(rejection(.p256) { _, _, password in password.timesN.unredactedBytes() } == .identityElement)
    }

    @Test(arguments: SPAKE2.Suite.allCases)
    func badConfirmations(_ suite: SPAKE2.Suite) throws {
        for tamper in 0..<4 {
            var random = SeededRandom(seed: UInt64(tamper))
            let password = SPAKE2.Password(deriving: Array("code".utf8), context: [UInt8](), suite: suite)
            let a = SPAKE2(role: .a, password: password, identityA: [], identityB: []).start(using: &random)
            let b = SPAKE2(role: .b, password: password, identityA: [], identityB: []).start(using: &random)
            let messageA = a.message
            let confirmingA = try a.receive(b.message)
            let confirmingB = try b.receive(messageA)
            var confirmation = confirmingB.confirmation
            let expected: SPAKE2Error
            switch tamper {
            case 0:
                confirmation[0] ^= 0x80
                expected = .confirmationMismatch
            case 1:
                confirmation = confirmingA.confirmation  // reflected confirmation
                expected = .confirmationMismatch
            case 2:
                confirmation.removeLast()
                expected = .wrongConfirmationLength(expected: 32, actual: 31)
            default:
                confirmation = []
                expected = .wrongConfirmationLength(expected: 32, actual: 0)
            }
            let outcome: SPAKE2Error?
            do {
                _ = try confirmingA.finish(peerConfirmation: confirmation)
                outcome = nil
            } catch {
                outcome = error
            }
            #expect(outcome == expected)
        }
    }

    /// Random garbage of random lengths: always a typed error (or, for the rare random bytes
    /// that form a valid point, a confirmation that then fails), never a crash.
    @Test(arguments: SPAKE2.Suite.allCases)
    func randomGarbage(_ suite: SPAKE2.Suite) throws {
        var random = SeededRandom(seed: suite == .edwards25519 ? 25519 : 256)
        var outcomes: [String: Int] = [:]
        for round in 0..<150 {
            let length = round % 3 == 0 ? Int(random.bytes(count: 1)[0]) % 80 : suite.messageByteCount
            var garbage = random.bytes(count: length)
            if suite == .p256 && length == 65 && round % 2 == 0 { garbage[0] = 0x04 }
            let password = SPAKE2.Password(deriving: Array("code".utf8), context: [UInt8](), suite: suite)
            let a = SPAKE2(role: .a, password: password, identityA: [], identityB: []).start(using: &random)
            do {
                let confirming = try a.receive(garbage)
                let outcome = finish(confirming, random.bytes(count: 32))
                #expect(throws: SPAKE2Error.confirmationMismatch) { try outcome.get() }
                outcomes["accepted", default: 0] += 1
            } catch {
                outcomes[error.code, default: 0] += 1
            }
        }
        #expect(outcomes.values.reduce(0, +) == 150)
        #expect(outcomes["pake_message_length", default: 0] > 0)
        #expect(outcomes["pake_not_on_curve", default: 0] > 0)
    }

    @Test func wormholeRandomGarbage() {
        var random = SeededRandom(seed: 33)
        var codes: Set<String> = []
        for round in 0..<150 {
            let length = round % 3 == 0 ? Int(random.bytes(count: 1)[0]) % 80 : 33
            var garbage = random.bytes(count: length)
            if length == 33 && round % 5 != 0 { garbage[0] = 0x53 }
            let side = WormholeSPAKE2(password: Array("pw".utf8), identity: [UInt8]()).start(using: &random)
            do {
                _ = try side.finish(garbage)
                codes.insert("accepted")
            } catch {
                codes.insert(error.code)
            }
        }
        #expect(codes.isSuperset(of: ["pake_message_length", "pake_side_byte", "pake_not_on_curve"]))
    }

    @Test func errorsHaveStableCodesAndMessages() {
        let all: [SPAKE2Error] = [
            .wrongMessageLength(expected: 1, actual: 2), .unexpectedSideByte(0x41), .nonCanonicalEncoding,
            .notOnCurve, .identityElement, .notInPrimeOrderSubgroup, .reflectedMessage,
            .wrongConfirmationLength(expected: 1, actual: 2), .confirmationMismatch, .invalidPasswordScalar,
        ]
        #expect(Set(all.map(\.code)).count == all.count)
        for error in all {
            #expect(error.code.hasPrefix("pake_"))
            #expect(!error.message.isEmpty)
            #expect("\(error)".contains(error.code))
        }
    }
}
