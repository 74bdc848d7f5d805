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
    /// members, and that is the thread returned. Threads for a set of members (a direct
    /// conversation) keep their key (`docs/key-model.md`, "Not yet").
    public func openForSending(thread text: String?) throws(SpaceClientError)
        -> (roster: Roster, keys: [ThreadID: ThreadKey], thread: SpaceThread)
    {
        var (roster, keys, thread) = try open(thread: text)
        guard let metadata = thread.metadata, metadata.isShared,
            roster.hasLostMemberSince(metadata.keyMadeAt ?? 0)
        else { return (roster, keys, thread) }
        let (id, key) = try createThread(named: metadata.name, roster: roster, continues: thread.id)
        keys[id] = key
        // Another device may have continued it at the same moment: write where everyone reads.
        thread = try resolveThread(thread.id.base64URL, roster: roster, keys: keys)
        return (roster, keys, thread)
    }
}
