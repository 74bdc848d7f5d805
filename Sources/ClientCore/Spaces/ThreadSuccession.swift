import SpaceModel

// A thread key is never taken back from someone who held it, so once a person who could read a
// thread has left the space (removed, left, or their identity replaced), the thread goes on under
// a new key in a successor thread wrapped to the members who remain (`docs/key-model.md`). The
// first remaining device that writes to it makes the successor, so nobody takes a step for it and
// nothing is sent again under a key a former member holds; older messages stay readable with the
// keys their readers already had.
extension SpaceSession {
    /// The newest readable thread continuing `thread` (itself when none does). When two devices
    /// continued it at the same moment, the earlier successor (then the smaller id) is the one.
    static func latest(_ thread: SpaceThread, in all: [SpaceThread]) -> SpaceThread {
        var current = thread
        var seen: Set<ThreadID> = [thread.id]
        while let next = successor(of: current.id, in: all), seen.insert(next.id).inserted {
            current = next
        }
        return current
    }

    private static func successor(of id: ThreadID, in all: [SpaceThread]) -> SpaceThread? {
        all.filter { $0.isReadable && $0.metadata?.continues == id }
            .min { ($0.createdAt, $0.id.base64URL) < ($1.createdAt, $1.id.base64URL) }
    }

    /// The threads to list: those no readable successor continues.
    public static func current(_ all: [SpaceThread]) -> [SpaceThread] {
        all.filter { successor(of: $0.id, in: all) == nil }
    }

    /// The readable threads `thread` continues, oldest first: their messages come before its own.
    public func earlierThreads(of thread: SpaceThread, roster: Roster, keys: [ThreadID: ThreadKey])
        throws(SpaceClientError) -> [SpaceThread]
    {
        let all = try threads(roster: roster, keys: keys)
        var chain: [SpaceThread] = []
        var seen: Set<ThreadID> = [thread.id]
        var current = thread
        while let previous = current.metadata?.continues,
            let found = all.first(where: { $0.id == previous && $0.isReadable }),
            seen.insert(found.id).inserted
        {
            chain.insert(found, at: 0)
            current = found
        }
        return chain
    }

    /// ``open(thread:)`` for writing: when someone who held the thread's key has left since the
    /// key was made, the thread first continues under a new key wrapped only to the current
    /// members (for a thread of a set of members, a direct conversation: to those of its members
    /// who remain), and that is the thread returned.
    public func openForSending(thread text: String?) throws(SpaceClientError)
        -> (roster: Roster, keys: [ThreadID: ThreadKey], thread: SpaceThread)
    {
        var (roster, keys, thread) = try open(thread: text)
        guard let metadata = thread.metadata, metadata.isShared || metadata.audience == .members,
            roster.hasLostMemberSince(metadata.keyMadeAt ?? 0)
        else { return (roster, keys, thread) }
        let members =
            metadata.isShared ? nil : try remainingMembers(of: thread, roster: roster, keys: keys)
        let (id, key) = try createThread(
            named: metadata.name, roster: roster, continues: thread.id, members: members)
        keys[id] = key
        // Another device may have continued it at the same moment: write where everyone reads.
        thread = try resolveThread(thread.id.base64URL, roster: roster, keys: keys)
        return (roster, keys, thread)
    }

    /// The current members a thread of a set of members is for: those its metadata names (a
    /// link's signer standing for whoever claimed the link, a re-keyed member for their new
    /// identity), this device's member always. Older metadata names nobody: then its creator and
    /// the authors of its messages (and of its predecessors'), as far as this device can read.
    private func remainingMembers(
        of thread: SpaceThread, roster: Roster, keys: [ThreadID: ThreadKey]
    ) throws(SpaceClientError) -> Set<MemberID> {
        var named: [MemberID] = []
        var current: SpaceThread? = thread
        var seen: Set<ThreadID> = []
        let all = try threads(roster: roster, keys: keys)
        while let this = current, seen.insert(this.id).inserted {
            named.append(this.createdBy)
            if let listed = this.metadata?.members {
                named += listed
                break
            }
            named += try read(this.id, roster: roster, keys: keys).messages.map(\.author)
            current = this.metadata?.continues.flatMap { id in all.first { $0.id == id && $0.isReadable } }
        }
        return roster.currentMembers(standingFor: named + [saved.member])
    }
}
