import Foundation
import JoinProtocol
import SpaceModel

/// The notes members and the space's attendant (the sidecar bot) exchange through their inboxes
/// on the space server: sealed to the recipient, signed by the sender (``InboxNote``).
///
/// ```
/// inviter                                   bot
/// invite_request {id, words, policy}  ──▶  verify signer holds the invite right; allocate
///                                     ◀──  invite_ready {id, nameplate}   (or invite_refused)
/// invite_record {id, signed invite}   ──▶  check it matches the request; attend
///                                     ◀──  approval_needed {id, name}     (policy "ask")
/// approval {id, approve}              ──▶
///                                     ◀──  joined {id, name, member} / invite_burned {id}
///                                     ◀──  attempt_reported {id, name, nameplate, message}
/// attempt_reported {id, relay, nameplate, side, at, reason}  ──▶   (a member who joined by link)
/// ```
/// `attempt_reported`, bot → member: a joiner said an earlier attempt of theirs failed after their
/// code went out and the bot never heard from them (someone else answered on the relay). Member →
/// bot: that report itself, from a member who joined with a full-length link (a short-code
/// joiner's travels in its join request).
/// The plaintext is a JSON object with `"v": 1` and `"type"`; anything else fails clearly.
public struct AttendantNote: Codable, Sendable, Equatable {
    public static let currentVersion = 1

    public enum Kind: String, Codable, Sendable {
        case inviteRequest = "invite_request"
        case inviteReady = "invite_ready"
        case inviteRecord = "invite_record"
        case inviteRefused = "invite_refused"
        case inviteBurned = "invite_burned"
        case inviteEnded = "invite_ended"
        case approvalNeeded = "approval_needed"
        case approval
        case joined
        case attemptReported = "attempt_reported"
    }

    public let v: Int
    public let type: Kind
    /// The invite this note is about (chosen by the inviter, 1…64 characters).
    public let id: String
    // invite_request
    public var words: String?
    public var uses: Int?
    public var expiresAt: Int64?
    public var maxFailures: Int?
    public var ask: Bool?
    public var inviterName: String?
    /// When the inviter made the request (Unix seconds); the bot drops a request it finds too
    /// late, since the inviter may have attended the invite itself meanwhile.
    public var createdAt: Int64?
    // invite_ready
    public var nameplate: String?
    // invite_record
    public var invite: SignedInvite?
    // invite_refused, invite_burned, invite_ended
    public var reason: String?
    public var message: String?
    // approval_needed, joined
    public var name: String?
    public var member: MemberID?
    public var verification: String?
    // approval_needed, approval: which use of the invite is being decided
    public var use: Int?
    // approval
    public var approve: Bool?
    // attempt_reported (member → bot): a ``JoinAttemptReport``, with `nameplate` and `reason`
    public var relay: String?
    public var side: String?
    public var at: Int64?

    enum CodingKeys: String, CodingKey {
        case v, type, id, words, uses, ask, nameplate, invite, reason, message, name, member, verification
        case use, approve, relay, side, at
        case expiresAt = "expires_at"
        case maxFailures = "max_failures"
        case inviterName = "inviter_name"
        case createdAt = "created_at"
    }

    public init(_ type: Kind, id: String) {
        v = Self.currentVersion
        self.type = type
        self.id = id
    }

    /// The request a member sends the bot: the code's words (secret: the note is sealed) and
    /// the invite's policy.
    public static func inviteRequest(
        id: String, words: String, uses: Int, expiresAt: Int64, maxFailures: Int, ask: Bool,
        inviterName: String?
    ) -> AttendantNote {
        var note = AttendantNote(.inviteRequest, id: id)
        note.words = words
        note.uses = uses
        note.expiresAt = expiresAt
        note.maxFailures = maxFailures
        note.ask = ask
        note.inviterName = inviterName
        return note
    }

    /// A member's report of a failed attempt of theirs to the space's attendant.
    public static func attemptReport(id: String, _ report: JoinAttemptReport) -> AttendantNote {
        var note = AttendantNote(.attemptReported, id: id)
        note.relay = report.relay
        note.nameplate = report.nameplate.value
        note.side = report.side.value
        note.at = report.at
        note.reason = report.outcome
        return note
    }

    /// The report a member sent, when this note is one.
    public var attemptReport: JoinAttemptReport? {
        guard type == .attemptReported, let relay, relay.utf8.count <= 512, let nameplate,
            (1...16).contains(nameplate.utf8.count), let side, (1...64).contains(side.utf8.count), let at,
            let reason, reason.utf8.count <= 64
        else { return nil }
        return JoinAttemptReport(
            relay: relay, nameplate: Rendezvous.Nameplate(nameplate), side: Rendezvous.Side(side), at: at,
            outcome: reason)
    }

    /// A note carrying a reason code and a human message.
    public static func notice(_ type: Kind, id: String, reason: RefusalReason, message: String)
        -> AttendantNote
    {
        var note = AttendantNote(type, id: id)
        note.reason = reason.rawValue
        note.message = message
        return note
    }

    /// The UTF-8 JSON plaintext.
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { Array($0) } ?? []
    }

    /// Parses a decrypted note; checks the version, the id and the fields its type needs.
    public init(decoding bytes: [UInt8]) throws(AttendantNoteError) {
        struct Version: Decodable { let v: Int }
        guard let version = try? JSONDecoder().decode(Version.self, from: Data(bytes)) else {
            throw AttendantNoteError("not a note this version understands")
        }
        guard version.v == Self.currentVersion else {
            throw AttendantNoteError("note version \(version.v) is not supported")
        }
        guard let note = try? JSONDecoder().decode(AttendantNote.self, from: Data(bytes)) else {
            throw AttendantNoteError("a field is missing or malformed")
        }
        guard (1...64).contains(note.id.utf8.count) else { throw AttendantNoteError("a bad invite id") }
        switch note.type {
        case .inviteRequest:
            guard let words = note.words, (3...200).contains(words.utf8.count), note.uses != nil,
                note.expiresAt != nil
            else { throw AttendantNoteError("an invite request without its words or policy") }
        case .inviteReady:
            guard note.nameplate != nil else { throw AttendantNoteError("no nameplate") }
        case .inviteRecord:
            guard note.invite != nil else { throw AttendantNoteError("no invite record") }
        case .approval:
            guard note.approve != nil else { throw AttendantNoteError("no answer") }
        case .inviteRefused, .inviteBurned, .inviteEnded, .approvalNeeded, .joined, .attemptReported:
            break
        }
        self = note
    }
}

/// A note that could not be read.
public struct AttendantNoteError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A note from the inbox, opened and verified against the roster, or why it could not be.
public struct ReceivedNote: Sendable {
    /// The note's id in the inbox (delete it once handled).
    public let inboxID: Int64
    public let sender: MemberID
    public let content: Result<AttendantNote, AttendantNoteError>
}

extension SpaceSession {
    /// Seals `note` to `recipient` and delivers it to their inbox; through `queue` (one for
    /// every note this session sends) together with notes sent meanwhile by other threads.
    public func send(_ note: AttendantNote, to recipient: MemberRecord, via queue: NoteQueue? = nil)
        throws(SpaceClientError)
    {
        let sealed: InboxNote
        do throws(KeyModelError) {
            sealed = try identity.note(note.encoded(), to: recipient, in: saved.space, from: saved.member)
        } catch {
            throw SpaceClientError(.verification, code: error.code.rawValue, message: error.message)
        }
        if let queue {
            try queue.post(sealed, client: client)
        } else {
            try client.postNote(sealed)
        }
    }

    /// The notes in this member's inbox after `since`, each opened with this device's key and
    /// checked against the roster verified now (sender a member who signed it), which is
    /// returned too (nil when the inbox was empty). Returns where to continue. With `rosters`, the
    /// roster is brought up to date from that cache (only new events verified) instead of being
    /// verified from the first event.
    public func receiveNotes(since: Int64, rosters: RosterCache? = nil) throws(SpaceClientError)
        -> (notes: [ReceivedNote], next: Int64, roster: Roster?)
    {
        let page = try client.notes(saved.space, since: since)
        guard !page.notes.isEmpty else { return ([], page.next, nil) }
        let roster = if let rosters { try rosters.refresh(self).roster } else { try roster() }
        let notes = page.notes.map { entry in
            let content: Result<AttendantNote, AttendantNoteError>
            do {
                let plain = try entry.note.open(with: identity, verifyingAgainst: roster)
                content = .success(try AttendantNote(decoding: plain))
            } catch let error as KeyModelError {
                content = .failure(AttendantNoteError(error.message))
            } catch let error as AttendantNoteError {
                content = .failure(error)
            } catch {
                content = .failure(AttendantNoteError("\(error)"))
            }
            return ReceivedNote(inboxID: entry.id, sender: entry.note.sender, content: content)
        }
        return (notes, page.next, roster)
    }
}
