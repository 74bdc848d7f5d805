import Foundation
import Mailbox
import PAKE

@testable import ClientCore
@testable import JoinProtocol
@testable import SpaceModel

/// Every decoder of data that comes from a peer or a server, picked by the first byte, plus an
/// attacker without the code talking to each side of a join. Must never crash; the attacker must
/// never get a side to accept the code, and the decoders must never accept what they cannot
/// re-encode.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPeerMessages(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start, count > 0 else { return 0 }
    let selector = start[0]
    let body = Array(UnsafeBufferPointer(start: start + 1, count: count - 1))
    let decoder = JSONDecoder()
    switch selector % 10 {
    case 0:
        _ = try? JoinMessage(decoding: body, allowed: ["request", "status", "grant", "refusal"])
    case 1:
        if let grant = try? JoinGrant(decoding: body) {
            precondition((try? JoinGrant(decoding: grant.encoded())) == grant, "a grant did not round-trip")
        }
    case 2:
        _ = try? decoder.decode(MembershipEvent.self, from: Data(body))
        eventList(body)
    case 3:
        _ = try? decoder.decode(InboxNote.self, from: Data(body))
    case 4:
        mailboxMessages(body)
    case 5:
        _ = try? decoder.decode(KeyInviteWire.Invite.self, from: Data(body))
    case 6:
        attackJoiner(body)
    case 7:
        vaultDocument(body)
    case 8:
        if let note = try? decoder.decode(AttendantNote.self, from: Data(body)) {
            let again = try? decoder.decode(AttendantNote.self, from: JSONEncoder().encode(note))
            precondition(again == note, "an attendant note did not round-trip")
        }
    default:
        attackAttendant(body)
    }
    return 0
}

/// A vault plaintext as another device wrote it: parse, merge both ways with a local copy, and
/// re-encode; a document that parses must survive all three.
private func vaultDocument(_ bytes: [UInt8]) {
    guard let remote = try? VaultDocument(decoding: bytes),
        let anchor = try? AnchorID(bytes: [UInt8](repeating: 9, count: AnchorID.byteCount))
    else { return }
    var local = VaultDocument()
    local.note(device: anchor, label: "laptop", by: "fuzz-device")
    _ = local.merged(with: remote)
    let merged = remote.merged(with: local)
    precondition((try? VaultDocument(decoding: merged.encoded())) != nil, "a merged vault did not re-read")
    _ = merged.spaces
}

private let binding = JoinBinding(intent: .join, nameplate: Rendezvous.Nameplate("42"))

/// The attacker's bytes as the attendant's key-agreement and confirmation messages.
private func attackJoiner(_ bytes: [UInt8]) {
    var random = SeededRandom(seed: 7)
    var joiner = JoinerSession(
        words: "coral-piano", binding: binding,
        request: JoinRequest(displayName: "Sam", deviceLabel: "laptop", publicKeys: JoinerKeys(text: "keys")),
        using: &random)
    for (phase, body) in split(bytes) {
        for output in joiner.handle(phase: phase, body: body, using: &random) {
            switch output {
            case .codeAccepted, .codeProven, .granted, .status, .refused:
                preconditionFailure("the joiner accepted an attacker who does not know the code")
            case .send, .codeSent, .failed: break
            }
        }
    }
}

/// The attacker's bytes as the joiner's key-agreement, confirmation and request messages.
private func attackAttendant(_ bytes: [UInt8]) {
    var random = SeededRandom(seed: 11)
    var attendant = AttendantSession(
        words: "coral-piano", binding: binding, inviterName: "Paul", announceWaiting: true, using: &random)
    for (phase, body) in split(bytes) {
        for output in attendant.handle(phase: phase, body: body, using: &random) {
            if case .requestReceived = output {
                preconditionFailure("the attendant accepted an attacker who does not know the code")
            }
        }
    }
}

/// Splits the input at 0xFF bytes into messages; the first byte of each picks the phase.
private func split(_ bytes: [UInt8]) -> [(Rendezvous.Phase, [UInt8])] {
    let phases: [Rendezvous.Phase] = [
        .pake, .confirm, .request, .grant, .refusal, .abort, Rendezvous.Phase("status-1"),
    ]
    return bytes.split(separator: 0xFF, omittingEmptySubsequences: true).map { part in
        (phases[Int(part[part.startIndex]) % phases.count], Array(part.dropFirst()))
    }
}

/// The hand-written reader of `GET …/events` answers against `JSONDecoder`, on the input as an
/// answer and as the one event of an answer: whatever the reader accepts, the decoder accepts
/// with the same meaning (the reader gives up on anything else).
private func eventList(_ body: [UInt8]) {
    let wrapped = Array(#"{"events":["#.utf8) + body + Array("]}".utf8)
    for text in [body, wrapped] {
        for vouched in [false, true] {
            guard let fast = EventListReader.events(text, keysVouched: vouched) else { continue }
            let decoder = JSONDecoder()
            if vouched { decoder.userInfo = [.memberKeysVouched: true] }
            let slow = try? decoder.decode(SpaceWire.EventList.self, from: Data(text)).events
            precondition(slow == fast, "the event list reader and JSONDecoder disagree")
        }
    }
}

/// Both directions of the mailbox protocol's one codec: what a client decodes from a relay and
/// what the relay decodes from a client must come back the same after encoding.
private func mailboxMessages(_ body: [UInt8]) {
    if let message = try? ServerMessage(decoding: String(decoding: body, as: UTF8.self)) {
        let again = try? ServerMessage(decoding: message.encoded(serverTX: RelayInstant(secondsSince1970: 1)))
        precondition(again == message, "a server message did not round-trip")
    }
    if case .success(let frame) = ClientMessage.decode(body), case .success(let message) = frame.message {
        let again = ClientMessage.decode(message.encoded)
        precondition((try? again.get().message.get()) == message, "a client message did not round-trip")
    }
}
