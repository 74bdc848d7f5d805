import Foundation
import SpaceModel
import Support

/// This device's thread keys kept opened between calls: each refresh fetches the device's own
/// wraps (one request) and opens only the ones not opened before, instead of verifying and
/// opening every wrap again (what an attendant admitting many joiners needs). A wrap opened
/// earlier counts only while its signer is still a current member of `roster`, as when opened.
public final class ThreadKeyCache: @unchecked Sendable {
    private struct Opened {
        let thread: ThreadID
        let signer: SigningPublicKey
        let key: ThreadKey
    }

    /// By wrap (thread and signature bytes) or bundle (its signature bytes): what it opened.
    private let opened = Locked([[UInt8]: [Opened]]())

    public init() {}

    /// The space's threads as the server lists them, read by a request that started after this
    /// call did: concurrent callers (the joiners a bot admits at once) share one request, as
    /// ``RosterCache/refresh(_:)`` does, so nobody decides on a list older than its own start.
    public func threadList(_ session: SpaceSession) throws(SpaceClientError) -> [SpaceWire.ThreadInfo] {
        try threadLists.run { () throws(SpaceClientError) in try session.client.threads(session.saved.space) }
    }

    /// ``threadList(_:)``'s shared requests.
    private let threadLists = SharedRequest<[SpaceWire.ThreadInfo]>()

    /// The list to choose an admission's keys from. With `reuse`, the list held since the last
    /// admission, while the server checks the length sent with each admission (its request is
    /// refused, nothing stored, when a thread was created since: threads are never removed nor
    /// changed, so the same length is the same list); else one read by ``threadList(_:)``.
    /// `reused`: it was held, not read; only an admission that sends its length may use it
    /// (and one the server did not check must read the list after all). Its message counts are
    /// those of its reading: the server's answer gives them afresh.
    public func admissionThreads(_ session: SpaceSession, reuse: Bool) throws(SpaceClientError) -> (
        threads: [SpaceWire.ThreadInfo], reused: Bool
    ) {
        if reuse, let held = listed.withLock({ $0.serverChecks ? $0.threads : nil }) { return (held, true) }
        let read = try threadList(session)
        listed.withLock { $0.threads = read }
        return (read, false)
    }

    /// What the server answered to an admission sent with `threads.count`: it checked it (the
    /// list was the space's as the admission was stored, and may be reused) or not (a server
    /// from before: every admission reads the list again).
    public func admitted(on threads: [SpaceWire.ThreadInfo], checked: Bool) {
        listed.withLock { listed in
            listed.serverChecks = checked
            // Threads are only ever added: the longer list is the later one.
            if checked && threads.count >= listed.threads?.count ?? 0 { listed.threads = threads }
        }
    }

    /// The held list is stale (a thread was created since, maybe by this device): read it again.
    public func forgetThreads() {
        listed.withLock { $0.threads = nil }
    }

    private struct Listed {
        var threads: [SpaceWire.ThreadInfo]?
        /// The server's last answer to an admission said it checked the list's length.
        var serverChecks = false
    }

    private let listed = Locked(Listed())

    /// The thread keys this device holds, checked against `roster`. `threads`: the space's
    /// threads as the server lists them now; when this device holds a key for exactly those,
    /// each from a wrap whose signer is still a current member, its wraps are not fetched again
    /// (the server keeps a stored wrap until its signer leaves, so they are the same wraps).
    public func refresh(_ session: SpaceSession, roster: Roster, threads: [ThreadID]? = nil)
        throws(SpaceClientError) -> [ThreadID: ThreadKey]
    {
        if let threads, let known = known(exactly: threads, roster: roster) { return known }
        let list = try session.client.wraps(session.saved.space)
        return opened.withLock { opened in
            var current: [[UInt8]: [Opened]] = [:]
            func reuse(_ id: [UInt8], signer: SigningPublicKey, open: () throws(KeyModelError) -> [Opened]) {
                if let known = opened[id], roster.currentMember(signingKey: signer) != nil {
                    current[id] = known
                } else if let fresh = try? open() {
                    current[id] = fresh
                }
            }
            for wrap in list.wraps where wrap.recipient == session.saved.member {
                reuse(wrap.thread.bytes + wrap.signature.bytes, signer: wrap.signer) {
                    () throws(KeyModelError) in
                    [
                        Opened(
                            thread: wrap.thread, signer: wrap.signer,
                            key: try wrap.open(with: session.identity, verifyingAgainst: roster))
                    ]
                }
            }
            for bundle in list.bundles ?? [] where bundle.recipient == session.saved.member {
                reuse(bundle.signature.bytes, signer: bundle.signer) { () throws(KeyModelError) in
                    try bundle.open(with: session.identity, verifyingAgainst: roster).map {
                        Opened(thread: $0.key, signer: bundle.signer, key: $0.value)
                    }
                }
            }
            opened = current
            var keys: [ThreadID: ThreadKey] = [:]
            for entry in current.values.joined() { keys[entry.thread] = entry.key }
            return keys
        }
    }

    /// The keys opened at the last fetch, when they are for exactly `threads` (one each) and
    /// every signer is a current member of `roster`; otherwise nil.
    private func known(exactly threads: [ThreadID], roster: Roster) -> [ThreadID: ThreadKey]? {
        opened.withLock { opened in
            var keys: [ThreadID: ThreadKey] = [:]
            for entry in opened.values.joined() {
                guard keys[entry.thread] == nil, roster.currentMember(signingKey: entry.signer) != nil else {
                    return nil
                }
                keys[entry.thread] = entry.key
            }
            guard !keys.isEmpty, Set(threads) == Set(keys.keys) else { return nil }
            return keys
        }
    }
}
