import Foundation
import Testing

@testable import PAKE

/// One side's settings for an exchange.
struct Party {
    var role: SPAKE2.Role
    var code: String
    var identityA: [UInt8]
    var identityB: [UInt8]
    var additionalData: [UInt8] = []

    func exchange(_ suite: SPAKE2.Suite) -> SPAKE2 {
        let password = SPAKE2.Password(
            deriving: Array(code.utf8), context: Array("eleven.test/join".utf8), suite: suite)
        return SPAKE2(
            role: role, password: password, identityA: identityA, identityB: identityB,
            additionalData: additionalData)
    }
}

/// Runs a full exchange between `a` and `b` (roles A and B); each side's outcome.
func runExchange(
    _ suite: SPAKE2.Suite, _ a: Party, _ b: Party, random: inout SeededRandom
) throws -> (a: Result<SecretBytes, SPAKE2Error>, b: Result<SecretBytes, SPAKE2Error>) {
    let startedA = a.exchange(suite).start(using: &random)
    let startedB = b.exchange(suite).start(using: &random)
    let messageA = startedA.message
    let messageB = startedB.message
    // Honest messages always validate; only confirmations may fail.
    let confirmingA = try startedA.receive(messageB)
    let confirmingB = try startedB.receive(messageA)
    let confirmationA = confirmingA.confirmation
    let confirmationB = confirmingB.confirmation
    return (finish(confirmingA, confirmationB), finish(confirmingB, confirmationA))
}

/// The outcome of finishing with `peerConfirmation`.
func finish(
    _ state: consuming SPAKE2.AwaitingConfirmation, _ peerConfirmation: [UInt8]
) -> Result<SecretBytes, SPAKE2Error> {
    do {
        return .success(try state.finish(peerConfirmation: peerConfirmation))
    } catch {
        return .failure(error)
    }
}

private let words = ["coral", "piano", "tiger", "maple", "orbit", "ember", "lunar", "quartz"]

private func randomCode(_ random: inout SeededRandom) -> String {
    let bytes = random.bytes(count: 3)
    return "\(words[Int(bytes[0]) % words.count])-\(words[Int(bytes[1]) % words.count])-\(bytes[2] % 100)"
}

/// (suite, seed) pairs: more cases for edwards25519, the suite Eleven uses.
private let cases: [(SPAKE2.Suite, UInt64)] =
    (0..<40).map { (.edwards25519, UInt64($0)) } + (0..<20).map { (.p256, UInt64(1000 + $0)) }

@Suite("RFC 9382 SPAKE2: properties")
struct SPAKE2PropertyTests {
    @Test(arguments: cases)
    func sameCodeSameKey(_ suite: SPAKE2.Suite, _ seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let code = randomCode(&random)
        let a = Party(role: .a, code: code, identityA: Array("joiner".utf8), identityB: Array("bot".utf8))
        var b = a
        b.role = .b
        let (keyA, keyB) = try runExchange(suite, a, b, random: &random)
        let ka = try keyA.get()
        let kb = try keyB.get()
        #expect(ka == kb)
        #expect(ka.count == suite.sessionKeyByteCount)
    }

    @Test(arguments: cases)
    func differentCodesFailBothSides(_ suite: SPAKE2.Suite, _ seed: UInt64) throws {
        var random = SeededRandom(seed: seed &+ 7_000)
        let code = randomCode(&random)
        var other = randomCode(&random)
        while other == code { other = randomCode(&random) }
        let a = Party(role: .a, code: code, identityA: Array("joiner".utf8), identityB: Array("bot".utf8))
        var b = a
        b.role = .b
        b.code = other
        let (keyA, keyB) = try runExchange(suite, a, b, random: &random)
        #expect(throws: SPAKE2Error.confirmationMismatch) { try keyA.get() }
        #expect(throws: SPAKE2Error.confirmationMismatch) { try keyB.get() }
    }

    /// Mallory sits between Alice (A) and Bob (B), runs B toward Alice and A toward Bob with a
    /// guessed code. She wins exactly when the guess is the code; otherwise both honest sides
    /// refuse.
    @Test(arguments: cases)
    func manInTheMiddleNeedsTheCode(_ suite: SPAKE2.Suite, _ seed: UInt64) throws {
        var random = SeededRandom(seed: seed &+ 9_000)
        let code = randomCode(&random)
        let guess = random.bytes(count: 1)[0] % 3 == 0 ? code : randomCode(&random)
        let ids = (Array("alice".utf8), Array("bob".utf8))
        let alice = Party(role: .a, code: code, identityA: ids.0, identityB: ids.1)
        let bob = Party(role: .b, code: code, identityA: ids.0, identityB: ids.1)
        let malloryAsB = Party(role: .b, code: guess, identityA: ids.0, identityB: ids.1)
        let malloryAsA = Party(role: .a, code: guess, identityA: ids.0, identityB: ids.1)

        let (aliceKey, malloryKeyWithAlice) = try runExchange(suite, alice, malloryAsB, random: &random)
        let (malloryKeyWithBob, bobKey) = try runExchange(suite, malloryAsA, bob, random: &random)
        if guess == code {
            #expect(try aliceKey.get() == malloryKeyWithAlice.get())
            #expect(try bobKey.get() == malloryKeyWithBob.get())
        } else {
            #expect(throws: SPAKE2Error.confirmationMismatch) { try aliceKey.get() }
            #expect(throws: SPAKE2Error.confirmationMismatch) { try bobKey.get() }
            #expect(throws: SPAKE2Error.confirmationMismatch) { try malloryKeyWithAlice.get() }
            #expect(throws: SPAKE2Error.confirmationMismatch) { try malloryKeyWithBob.get() }
        }
    }

    @Test(arguments: cases.filter { $0.1 % 2 == 0 })
    func swappedIdentitiesOrDifferentDataFail(_ suite: SPAKE2.Suite, _ seed: UInt64) throws {
        var random = SeededRandom(seed: seed &+ 11_000)
        let code = randomCode(&random)
        let a = Party(
            role: .a, code: code, identityA: Array("joiner".utf8), identityB: Array("bot".utf8),
            additionalData: Array("intent=join".utf8))
        var swapped = a
        swapped.role = .b
        swapped.identityA = a.identityB
        swapped.identityB = a.identityA
        var otherData = a
        otherData.role = .b
        otherData.additionalData = Array("intent=link-device".utf8)
        var otherIdentity = a
        otherIdentity.role = .b
        otherIdentity.identityB = Array("bot2".utf8)
        for peer in [swapped, otherData, otherIdentity] {
            let (keyA, keyB) = try runExchange(suite, a, peer, random: &random)
            #expect(throws: SPAKE2Error.confirmationMismatch) { try keyA.get() }
            #expect(throws: SPAKE2Error.confirmationMismatch) { try keyB.get() }
        }
        var same = a
        same.role = .b
        let (keyA, keyB) = try runExchange(suite, a, same, random: &random)
        #expect(try keyA.get() == keyB.get())
    }

    @Test(arguments: SPAKE2.Suite.allCases)
    func freshRandomnessEachRun(_ suite: SPAKE2.Suite) throws {
        let password = SPAKE2.Password(deriving: Array("x".utf8), context: [UInt8](), suite: suite)
        let first = SPAKE2(role: .a, password: password, identityA: [], identityB: []).start()
        let second = SPAKE2(role: .a, password: password, identityA: [], identityB: []).start()
        #expect(first.message != second.message)
        #expect(first.message.count == suite.messageByteCount)
    }
}
