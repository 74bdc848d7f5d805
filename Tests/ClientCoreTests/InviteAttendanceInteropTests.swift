import ClientCore
import Foundation
import JoinProtocol
import PAKE
import TestSupport
import Testing

/// `InviteAttendance` (the attendant of `eleven invite` / `eleven approve`) through the reference
/// mailbox server: an invite published, its relay state saved as JSON and resumed by a "new
/// process"; several uses of one nameplate; a wrong code that arrived while the attendant was
/// away. The scenarios take the relay URL, so they can run against eleven-relay too.
@Suite(.serialized) struct InviteAttendanceInteropTests {
    @Test(.enabled(if: !TestSupport.interopSkipped)) func throughTheReferenceMailboxServer() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let server = try TestSupport.startReferenceMailboxServer(in: dir)
            defer { server.stop() }
            try InviteAttendanceScenarios.runAll(relayURL: "ws://127.0.0.1:\(server.port)/v1")
        }
    }
}

enum InviteAttendanceScenarios {
    typealias Box = JoinScenarios.Box

    static func request(_ name: String) -> JoinRequest {
        JoinRequest(displayName: name, deviceLabel: "laptop", publicKeys: JoinerKeys(text: "keys-of-\(name)"))
    }

    /// A joiner on another thread; its result lands in the box.
    static func startJoiner(relayURL: String, nameplate: Rendezvous.Nameplate, words: String, name: String)
        -> Box<Result<[UInt8], JoinRunError>>
    {
        let box = Box<Result<[UInt8], JoinRunError>>()
        Thread.detachNewThread {
            do {
                let grant = try JoinRunner.join(
                    relayURL: relayURL, nameplate: nameplate, words: words, request: request(name),
                    timeout: .seconds(20)
                ) { _ in }
                box.put(.success(grant))
            } catch let error as JoinRunError {
                box.put(.failure(error))
            } catch {
                box.put(.failure(.failed(.protocolError("\(error)"))))
            }
        }
        return box
    }

    /// Saves the relay state as the pending-invite file would, and reads it back.
    static func roundTrip(_ machine: RendezvousMachine) throws -> RendezvousMachine {
        try JSONDecoder().decode(RendezvousMachine.self, from: JSONEncoder().encode(machine))
    }

    static func runAll(relayURL: String) throws {
        let words = "coral-piano"
        let seed = SecretBytes(Array(repeating: 5, count: 32))
        let grant = Array(#"{"space":"Family"}"#.utf8)

        // Publish, drop the connection, resume from saved state after the joiner arrived.
        let (first, nameplate) = try InviteAttendance.allocate(relayURL: relayURL, timeout: .seconds(10))
        let binding = JoinBinding(intent: .join, nameplate: nameplate)
        try InviteAttendance.publish(
            on: first, words: words, binding: binding, seed: seed, use: 0, timeout: .seconds(10))
        let saved = try roundTrip(first.machine)
        first.disconnect()
        let sam = startJoiner(relayURL: relayURL, nameplate: nameplate, words: words, name: "Sam")
        usleep(300_000)
        let resumed = try InviteAttendance.resume(relayURL: relayURL, machine: saved)
        let outcome = try InviteAttendance.attendOne(
            on: resumed, words: words, binding: binding, seed: seed, use: 0, published: true,
            inviterName: "Paul", deadline: .now + .seconds(20)
        ) { _, _ in .approve(grant: grant) }
        #expect(outcome == .admitted(request("Sam")))
        #expect(try sam.take()?.get() == grant)

        // A second use of the same nameplate: reclaimed, a fresh key agreement.
        let second = try InviteAttendance.reclaim(relayURL: relayURL, nameplate: nameplate)
        let ann = startJoiner(relayURL: relayURL, nameplate: nameplate, words: words, name: "Ann")
        let outcome2 = try InviteAttendance.attendOne(
            on: second, words: words, binding: binding, seed: seed, use: 1, published: false,
            inviterName: "Paul", deadline: .now + .seconds(20)
        ) { _, _ in .approve(grant: grant) }
        #expect(outcome2 == .admitted(request("Ann")))
        #expect(try ann.take()?.get() == grant)

        // A wrong code left in the mailbox while the attendant was away burns the invite on resume.
        let (third, nameplate3) = try InviteAttendance.allocate(relayURL: relayURL, timeout: .seconds(10))
        let binding3 = JoinBinding(intent: .join, nameplate: nameplate3)
        try InviteAttendance.publish(
            on: third, words: words, binding: binding3, seed: seed, use: 0, timeout: .seconds(10))
        let saved3 = try roundTrip(third.machine)
        third.disconnect()
        let eve = startJoiner(relayURL: relayURL, nameplate: nameplate3, words: "coral-violin", name: "Eve")
        usleep(300_000)
        let resumed3 = try InviteAttendance.resume(relayURL: relayURL, machine: saved3)
        var asked = false
        let outcome3 = try InviteAttendance.attendOne(
            on: resumed3, words: words, binding: binding3, seed: seed, use: 0, published: true,
            inviterName: "Paul", deadline: .now + .seconds(20)
        ) { _, _ in
            asked = true
            return .approve(grant: grant)
        }
        #expect(outcome3 == .burned(.codeMismatch))
        #expect(!asked)
        if case .failure(let error) = eve.take() {
            #expect(error == .failed(.codeMismatch))
        } else {
            Issue.record("a wrong code must fail")
        }

        // Nobody comes: with keepOpenOnTimeout the invite stays resumable.
        let (fourth, nameplate4) = try InviteAttendance.allocate(relayURL: relayURL, timeout: .seconds(10))
        let binding4 = JoinBinding(intent: .join, nameplate: nameplate4)
        do {
            _ = try InviteAttendance.attendOne(
                on: fourth, words: words, binding: binding4, seed: seed, use: 0, published: false,
                inviterName: "Paul", deadline: .now + .milliseconds(500), keepOpenOnTimeout: true
            ) { _, _ in .approve(grant: grant) }
            Issue.record("nobody came: the wait must time out")
        } catch {
            #expect(error.code == "timed_out")
        }
        let zed = startJoiner(relayURL: relayURL, nameplate: nameplate4, words: words, name: "Zed")
        let resumed4 = try InviteAttendance.resume(relayURL: relayURL, machine: try roundTrip(fourth.machine))
        let outcome4 = try InviteAttendance.attendOne(
            on: resumed4, words: words, binding: binding4, seed: seed, use: 0, published: true,
            inviterName: "Paul", deadline: .now + .seconds(20)
        ) { _, _ in .approve(grant: grant) }
        #expect(outcome4 == .admitted(request("Zed")))
        #expect(try zed.take()?.get() == grant)

        // A code nobody attends fails after `firstAnswer`, long before the overall timeout.
        let start = ContinuousClock.now
        do {
            _ = try JoinRunner.join(
                relayURL: relayURL, nameplate: Rendezvous.Nameplate("98765"), words: words,
                request: request("Sam"), timeout: .seconds(60), firstAnswer: .seconds(1)
            ) { _ in }
            Issue.record("nobody attends that nameplate")
        } catch {
            #expect(error.code == "timed_out")
        }
        #expect(ContinuousClock.now - start < .seconds(10))
    }
}
