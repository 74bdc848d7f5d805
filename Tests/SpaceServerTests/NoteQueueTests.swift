import Foundation
import SpaceModel
import SpaceServer
import Synchronization
import Testing

@testable import ClientCore

/// Inbox notes sent together (`POST …/inbox` with `{"notes"}`): the server stores them all or
/// none; a ``NoteQueue`` sends the notes of threads that send at once in one request, falls back
/// to one note per request where the server does not take several, and every recipient finds
/// each note in their inbox exactly as if it had been sent alone.
@Suite struct NoteQueueTests {
    /// A space whose owner sends; `count` other members, each signed in on a session of their own.
    private func world(_ count: Int, maximumNotesPerRequest: Int = 100) throws -> (
        running: HTTPServerTests.Running, owner: SpaceSession, members: [(SpaceSession, MemberRecord)]
    ) {
        let running = try HTTPServerTests.Running(maximumNotesPerRequest: maximumNotesPerRequest)
        let (owner, _, _, _) = try running.space()
        var members: [(SpaceSession, MemberRecord)] = []
        for index in 0..<count {
            let identity = DeviceIdentity.generate()
            let record = try owner.addMember(keys: identity.publicKeys, name: "M\(index)")
            let saved = try SpaceSession.join(
                server: running.url, space: owner.saved.space, member: record.id, identity: identity)
            members.append((try SpaceSession(saved: saved, identity: identity), record))
        }
        return (running, owner, members)
    }

    private func note(_ index: Int) -> AttendantNote {
        var note = AttendantNote(.joined, id: "invite-\(index)")
        note.name = "Joiner \(index)"
        note.message = "Joiner \(index) joined Family with your invite."
        return note
    }

    private func sealed(_ note: AttendantNote, from owner: SpaceSession, to record: MemberRecord) throws
        -> InboxNote
    {
        try owner.identity.note(note.encoded(), to: record, in: owner.saved.space, from: owner.saved.member)
    }

    /// The notes in `member`'s inbox, opened and checked against the roster, oldest first.
    private func inbox(_ member: SpaceSession) throws -> [AttendantNote] {
        try member.receiveNotes(since: 0).notes.map { received in
            #expect(received.sender != member.saved.member)
            return try received.content.get()
        }
    }

    /// The `POST …/inbox` lines in the server's log once there are `expected` (a line is written
    /// after its answer goes out, so the last may come a moment after the caller returned), or
    /// as many as there are after a bounded wait.
    private func inboxPosts(_ running: HTTPServerTests.Running, expecting expected: Int) -> Int {
        func count() -> Int {
            running.log.lines.withLock {
                $0.filter { $0.contains(#""method":"POST""#) && $0.contains("/inbox") }.count
            }
        }
        for _ in 0..<500 where count() < expected { usleep(10_000) }
        return count()
    }

    @Test func notesSentAtOnceGoInFewerRequestsAndArriveAsIfSentAlone() throws {
        let (running, owner, members) = try world(3)
        let queue = NoteQueue()
        let sent = (0..<24).map { (note($0), members[$0 % 3]) }
        let failures = Mutex(0)
        let start = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for (note, member) in sent {
            group.enter()
            Thread.detachNewThread {
                start.wait()
                if (try? owner.send(note, to: member.1, via: queue)) == nil { failures.withLock { $0 += 1 } }
                group.leave()
            }
        }
        for _ in sent { start.signal() }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(failures.withLock { $0 } == 0)
        let counts = queue.counts
        #expect(counts.notes == 24)
        #expect(counts.requests < 24, "no note was sent together with another: \(counts)")
        #expect(inboxPosts(running, expecting: counts.requests) == counts.requests)
        // Each member's inbox: their notes, each its own entry, the same as sent.
        for (index, member) in members.enumerated() {
            let received = try inbox(member.0)
            let expected = sent.filter { $0.1.1.id == member.1.id }.map(\.0)
            #expect(received.count == expected.count)
            #expect(Set(received.map(\.id)) == Set(expected.map(\.id)), "member \(index)")
            for note in received { #expect(expected.contains(note)) }
        }
    }

    @Test func theBatchFormIsStoredAllOrNone() throws {
        let (running, owner, members) = try world(3)
        defer { withExtendedLifetime(running) {} }
        let notes = try (0..<3).map { try sealed(note($0), from: owner, to: members[$0].1) }
        let ids = try owner.client.postNotes(notes)
        #expect(ids.count == 3)
        #expect(Set(ids).count == 3)
        for (index, member) in members.enumerated() { #expect(try inbox(member.0) == [note(index)]) }

        // One note to a member removed meanwhile refuses the request; nothing is stored.
        try owner.removeMember(members[2].1.id)
        let refused = try (3..<6).map { try sealed(note($0), from: owner, to: members[$0 - 3].1) }
        #expect {
            try owner.client.postNotes(refused)
        } throws: { error in
            let error = error as? SpaceClientError
            return error?.status == 404 && error?.code == "unknown_member"
                && error?.message.contains("Note 2:") == true
        }
        #expect(try inbox(members[0].0) == [note(0)])
        #expect(try inbox(members[1].0) == [note(1)])

        // A note of someone else's among them: refused whole.
        let forged = try members[0].0.identity.note(
            note(9).encoded(), to: members[1].1, in: owner.saved.space, from: members[0].1.id)
        #expect {
            try owner.client.postNotes([notes[0], forged])
        } throws: { error in
            (error as? SpaceClientError)?.code == "sender_mismatch"
        }
        #expect(try inbox(members[1].0) == [note(1)])
    }

    @Test func aRefusedNoteDoesNotStopTheOthersOfItsBatch() throws {
        let (running, owner, members) = try world(3)
        defer { withExtendedLifetime(running) {} }
        try owner.removeMember(members[1].1.id)
        let queue = NoteQueue()
        let notes = try (0..<3).map { try sealed(note($0), from: owner, to: members[$0].1) }
        let results = queue.send(notes, client: owner.client)
        #expect((try? results[0].get()) != nil)
        #expect(results[1].error?.code == "unknown_member")
        #expect((try? results[2].get()) != nil)
        #expect(try inbox(members[0].0) == [note(0)])
        #expect(try inbox(members[2].0) == [note(2)])
        // The refused batch, then one request per note.
        #expect(queue.counts == (2, 2))
        #expect(inboxPosts(running, expecting: 4) == 4)
    }

    @Test func aServerTakingFewerNotesGetsOneAtATime() throws {
        let (running, owner, members) = try world(2, maximumNotesPerRequest: 1)
        defer { withExtendedLifetime(running) {} }
        let queue = NoteQueue()
        let first = try (0..<2).map { try sealed(note($0), from: owner, to: members[$0].1) }
        #expect {
            try owner.client.postNotes(first)
        } throws: { error in
            let error = error as? SpaceClientError
            return error?.status == 413 && error?.typedCode == .tooManyNotes
        }
        #expect(queue.send(first, client: owner.client).allSatisfy { (try? $0.get()) != nil })
        #expect(queue.counts == (2, 2))
        // From then on one note per request without asking again.
        let second = try (2..<4).map { try sealed(note($0), from: owner, to: members[$0 - 2].1) }
        #expect(queue.send(second, client: owner.client).allSatisfy { (try? $0.get()) != nil })
        #expect(queue.counts == (4, 4))
        #expect(inboxPosts(running, expecting: 6) == 6)
        #expect(try inbox(members[0].0) == [note(0), note(2)])
        #expect(try inbox(members[1].0) == [note(1), note(3)])
    }
}

extension Result {
    fileprivate var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
