import ClientCore
import Foundation
import JoinProtocol
import PAKE
import Support
import TestSupport
import Testing

/// Joins run by `JoinRunner` (rendezvous client, key agreement, encrypted request and grant)
/// through the reference Magic Wormhole mailbox server (PyPI magic-wormhole-mailbox-server) over
/// real loopback WebSockets. The same helpers run against our relay in RelayTests.
@Suite(.serialized) struct RendezvousInteropTests {
    static let interop = !TestSupport.interopSkipped

    @Test(.enabled(if: interop)) func joinThroughTheReferenceMailboxServer() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let server = try TestSupport.startReferenceMailboxServer(in: dir)
            defer { server.stop() }
            try JoinScenarios.runAll(relayURL: "ws://127.0.0.1:\(server.port)/v1")
        }
    }

    @Test func unreachableRelayIsAClearError() throws {
        let port = try TestSupport.freePort()
        do {
            _ = try JoinRunner.join(
                relayURL: "ws://127.0.0.1:\(port)/v1", nameplate: Rendezvous.Nameplate("4"),
                words: "coral-piano", request: JoinScenarios.request, timeout: .seconds(5)
            ) { _ in }
            Issue.record("connecting to a closed port must fail")
        } catch {
            #expect(error.code == "relay_unreachable")
            #expect(error.description.contains("can't reach the relay at ws://127.0.0.1:\(port)/v1"))
        }
    }
}

/// Join scenarios over any mailbox relay.
enum JoinScenarios {
    static let request = JoinRequest(
        displayName: "Sam", deviceLabel: "laptop", publicKeys: JoinerKeys(text: "keys-of-sam"))

    typealias Box = Handoff

    /// Starts an attendant on another thread; returns the nameplate and a box for its outcome.
    static func startAttendant(
        relayURL: String, words: String, decision: JoinDecision
    ) -> (nameplate: String?, outcome: Box<Result<JoinRequest, JoinRunError>>) {
        let nameplate = Box<String>()
        let outcome = Box<Result<JoinRequest, JoinRunError>>()
        Thread.detachNewThread {
            do {
                let r = try JoinRunner.attend(
                    relayURL: relayURL, words: words, inviterName: "Paul", announceWaiting: true,
                    timeout: .seconds(30), onNameplate: { nameplate.put($0.value) },
                    decide: { _, _ in decision })
                outcome.put(.success(r))
            } catch let error as JoinRunError {
                nameplate.put("none")
                outcome.put(.failure(error))
            } catch {
                nameplate.put("none")
            }
        }
        return (nameplate.take(), outcome)
    }

    static func runAll(relayURL: String) throws {
        let grant = Array(#"{"space":"Family"}"#.utf8)

        // The right code: granted, with progress in order.
        let (np, attended) = startAttendant(
            relayURL: relayURL, words: "coral-piano", decision: .approve(grant: grant))
        let nameplate = try #require(np)
        #expect(!nameplate.isEmpty && nameplate.allSatisfy { $0.isNumber })
        let seen = Box<[JoinProgress]>()
        var progress: [JoinProgress] = []
        let result = try JoinRunner.join(
            relayURL: relayURL, nameplate: Rendezvous.Nameplate(nameplate), words: "coral-piano",
            request: request, timeout: .seconds(30)
        ) { progress.append($0) }
        seen.put(progress)
        #expect(result == grant)
        #expect(progress.first == .connecting)
        #expect(progress.contains(.waitingForApproval(inviter: "Paul")))
        #expect(progress.contains { if case .codeAccepted = $0 { true } else { false } })
        #expect(try attended.take()?.get() == request)

        // A wrong code: the joiner hears at once; the attendant burns the code.
        let (np2, attended2) = startAttendant(
            relayURL: relayURL, words: "coral-piano", decision: .approve(grant: grant))
        let nameplate2 = Rendezvous.Nameplate(try #require(np2))
        do {
            _ = try JoinRunner.join(
                relayURL: relayURL, nameplate: nameplate2, words: "coral-violin",
                request: request, timeout: .seconds(30)
            ) { _ in }
            Issue.record("a wrong code must fail")
        } catch {
            #expect(error == .failed(.codeMismatch))
            #expect(error.description == "That code didn't match. Codes work once: ask for a new one.")
        }
        if case .failure(let e) = attended2.take() {
            #expect(e == .failed(.codeMismatch))
        } else {
            Issue.record("the attendant must burn the code")
        }

        // A refusal reaches the joiner with its message.
        let (np3, _) = startAttendant(
            relayURL: relayURL, words: "lamp-violin",
            decision: .refuse(reason: .declined, message: "Paul said no."))
        let nameplate3 = Rendezvous.Nameplate(try #require(np3))
        do {
            _ = try JoinRunner.join(
                relayURL: relayURL, nameplate: nameplate3, words: "lamp-violin",
                request: request, timeout: .seconds(30)
            ) { _ in }
            Issue.record("a refusal must fail the join")
        } catch {
            #expect(error == .refused(reason: "declined", message: "Paul said no."))
        }
    }
}
