import Foundation
import JoinProtocol
import SpaceModel
import Synchronization
import Testing

@testable import ClientCore

/// An attendant admitting several joiners at once through an ``AdmissionQueue``: the chain stays
/// in order and verifies, every joiner is added once, and those who arrive while an addition is
/// on its way are added together in one request.
@Suite struct AdmissionQueueTests {
    private func joiner(_ name: String) -> JoinRequest {
        JoinRequest(
            displayName: name, deviceLabel: "phone",
            publicKeys: JoinerKeys(DeviceIdentity.generate().publicKeys))
    }

    private func invite(_ session: SpaceSession) -> SignedInvite {
        let now = Int64(Date().timeIntervalSince1970)
        return session.identity.signInvite(
            space: session.saved.space, inviter: session.saved.member, nameplate: "7", createdAt: now,
            expiresAt: now + 600, uses: 100)
    }

    /// Admits `requests` from one thread each, all released at once (with the key cache `keys`,
    /// as the bot admits); returns what each got.
    private func admitTogether(
        _ requests: [JoinRequest], session: SpaceSession, invite: SignedInvite, queue: AdmissionQueue,
        rosters: RosterCache, keys: ThreadKeyCache? = nil
    ) -> [Result<(grant: JoinGrant, member: MemberRecord), SpaceClientError>] {
        let results = Mutex<[Int: Result<(grant: JoinGrant, member: MemberRecord), SpaceClientError>]>([:])
        let start = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for (index, request) in requests.enumerated() {
            group.enter()
            Thread.detachNewThread {
                start.wait()
                let result = Result { () throws(SpaceClientError) in
                    try session.admit(
                        request: request, invite: invite, carryInvite: true, rosters: rosters,
                        admissions: queue, keys: keys)
                }
                results.withLock { $0[index] = result }
                group.leave()
            }
        }
        for _ in requests { start.signal() }
        _ = group.wait(timeout: .now() + 60)
        let lost = SpaceClientError(.unreachable, code: "lost", message: "no answer within 60 s")
        return results.withLock { all in
            requests.indices.map { all[$0] ?? .failure(lost) }
        }
    }

    /// `count` joiners admitted together on a fresh space; the members they became, and the
    /// server, session, cache and queue, and the chain's length before them.
    private func admitted(_ count: Int, maximumEventsPerRequest: Int = 100) throws -> (
        members: [MemberRecord], requests: [JoinRequest], running: HTTPServerTests.Running,
        session: SpaceSession, rosters: RosterCache, queue: AdmissionQueue, start: Int
    ) {
        let running = try HTTPServerTests.Running(maximumEventsPerRequest: maximumEventsPerRequest)
        let (session, _, _, _) = try running.space()
        let rosters = RosterCache()
        let queue = AdmissionQueue()
        let start = try rosters.refresh(session).events.count
        let requests = (0..<count).map { joiner("J\($0)") }
        let results = admitTogether(
            requests, session: session, invite: invite(session), queue: queue, rosters: rosters)
        let members = try results.map { try $0.get().member }
        return (members, requests, running, session, rosters, queue, start)
    }

    @Test func joinersArrivingTogetherAreAddedInFewerRequests() throws {
        let (members, requests, running, session, rosters, queue, start) = try admitted(12)
        let events = try session.client.events(session.saved.space)
        let verified = try session.verifiedRoster(events)
        #expect(events.count == start + 12)
        for (request, member) in zip(requests, members) {
            #expect(verified.members[member.id]?.name == request.displayName)
            #expect(verified.members[member.id]?.keys == (try request.publicKeys.keys()))
        }
        #expect(Set(members.map(\.id)).count == 12)
        let counts = queue.counts
        #expect(counts.events == 12)
        #expect(counts.requests < 12, "nobody was added together with anyone: \(counts)")
        let posts = running.log.lines.withLock {
            $0.filter { $0.contains(#""method":"POST""#) && $0.contains("/members") }.count
        }
        #expect(posts == counts.requests)
        // What the cache holds is the server's chain.
        let cached = try #require(rosters.verified)
        #expect(cached.events.count == events.count)
        #expect(cached.roster.head == verified.head)
    }

    @Test func aStaleCacheIsReadAgainAndAKnownKeyIsRefused() throws {
        let running = try HTTPServerTests.Running()
        let (session, _, _, _) = try running.space()
        let rosters = RosterCache()
        let queue = AdmissionQueue()
        let start = try rosters.refresh(session).events.count
        // The chain moves behind the cache's back.
        let ann = joiner("Ann")
        _ = try session.addMember(keys: try ann.publicKeys.keys(), name: "Ann")

        let bea = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "Bea")
        let added = try queue.add(bea, invite: nil, session: session, rosters: rosters)
        // The event the server stored for Bea, on the moved chain; the cache holds the chain.
        #expect(added.event.sequence == UInt64(start + 1))
        #expect(added.event.change.adds(bea.id))
        #expect(rosters.verified?.events.count == start + 2)
        #expect(rosters.verified?.events.last == added.event)
        #expect(added.roster.members[bea.id]?.name == "Bea")
        let refusals = { running.log.lines.withLock { $0.filter { $0.contains(#""status":409"#) }.count } }
        #expect(refusals() == 1)

        // Ann's keys under another id: refused, and nothing is sent for it.
        let again = MemberRecord(
            id: .random(), keys: try ann.publicKeys.keys(), name: "Ann 2")
        #expect {
            try queue.add(again, invite: nil, session: session, rosters: rosters)
        } throws: { error in
            (error as? SpaceClientError)?.code == "already_member"
        }
        #expect(try session.client.events(session.saved.space).count == start + 2)
        #expect(queue.counts.requests == 1)
    }

    /// Joiners admitted together as the bot admits them (with its key cache): each joiner's
    /// wraps ride with its event (no `POST …/wraps`), the admissions share thread lists (fewer
    /// than one each), and every joiner opens its grant and finds its keys on the server. A
    /// server that ignores the bundles (as one from before) gets them posted apart.
    @Test(arguments: [true, false]) func wrapsRideWithTheEventsAndTheThreadListIsShared(storesBundles: Bool)
        throws
    {
        let count = 12
        let running = try HTTPServerTests.Running(storesBundlesWithMembers: storesBundles)
        let (session, _, keys, _) = try running.space()
        let rosters = RosterCache()
        _ = try rosters.refresh(session)
        let identities = (0..<count).map { _ in DeviceIdentity.generate() }
        let requests = identities.enumerated().map {
            JoinRequest(
                displayName: "J\($0.offset)", deviceLabel: "phone",
                publicKeys: JoinerKeys($0.element.publicKeys))
        }
        let before = Self.settled(running, session: session)
        let results = admitTogether(
            requests, session: session, invite: invite(session), queue: AdmissionQueue(), rosters: rosters,
            keys: ThreadKeyCache())
        let lines = Self.lines(running, from: before, session: session)
        func sent(_ method: String, _ tail: String) -> Int {
            lines.filter { $0.contains(#""method":"\#(method)""#) && $0.contains(tail + #"""#) }.count
        }
        #expect(sent("GET", "/threads") < count, "every admission read the thread list alone")
        #expect(sent("POST", "/wraps") == (storesBundles ? 0 : count))
        let now = Int64(Date().timeIntervalSince1970)
        for (identity, result) in zip(identities, results) {
            let grant = try result.get().grant
            let opened = try grant.open(identity: identity, deviceLabel: "phone", now: now, nameplate: "7")
            #expect(opened.verified.threadKeys.count == keys.count)
            // What the server holds for the joiner opens to the same keys.
            let joiner = try SpaceSession(saved: opened.saved, identity: identity)
            let held = try joiner.threadKeys(roster: try joiner.roster())
            #expect(Set(held.keys) == Set(opened.verified.threadKeys.keys))
        }
    }

    /// An admission whose bundle the server refuses (here: addressed to someone who is not a
    /// member) is not refused with it: the events go again without the bundles, and the
    /// admission is told to post them itself (where the refusal stays with its joiner).
    @Test func aRefusedBundleDoesNotRefuseTheAdmission() throws {
        let running = try HTTPServerTests.Running()
        let (session, thread, keys, _) = try running.space()
        let rosters = RosterCache()
        let start = try rosters.refresh(session).events.count
        let bea = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "Bea")
        let stranger = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "")
        let key = try #require(keys[thread])
        let bundle = try #require(
            session.identity.wrapBundle([thread: key], for: stranger, in: session.saved.space))
        let added = try AdmissionQueue().add(
            bea, invite: nil, bundles: [bundle], session: session, rosters: rosters)
        #expect(!added.wrapsStored)
        #expect(added.roster.members[bea.id] != nil)
        #expect(try session.client.events(session.saved.space).count == start + 1)
        let refused = running.log.lines.withLock { $0.filter { $0.contains(#""status":422"#) }.count }
        #expect(refused == 1)
    }

    /// An admission signed onto a stale cache is refused (the chain moved), signed again and
    /// sent again with its bundles: still no `POST …/wraps`, and the joiner has its keys.
    @Test func aMovedChainSendsTheBundlesAgainWithTheEvent() throws {
        let running = try HTTPServerTests.Running()
        let (session, _, keys, _) = try running.space()
        let rosters = RosterCache()
        _ = try rosters.refresh(session)
        _ = try session.addMember(keys: DeviceIdentity.generate().publicKeys, name: "Ann")
        let identity = DeviceIdentity.generate()
        let before = Self.settled(running, session: session)
        let grant = try admitOne(identity, session: session, rosters: rosters, keys: ThreadKeyCache())
        let lines = Self.lines(running, from: before, session: session)
        #expect(lines.filter { $0.contains(#""status":409"#) }.count == 1)
        #expect(!lines.contains { $0.contains(#""method":"POST""#) && $0.contains(#"/wraps""#) })
        let opened = try grant.open(
            identity: identity, deviceLabel: "phone", now: Int64(Date().timeIntervalSince1970), nameplate: "7"
        )
        let joiner = try SpaceSession(saved: opened.saved, identity: identity)
        #expect(try joiner.threadKeys(roster: try joiner.roster()).count == keys.count)
    }

    /// Admissions one after another, as a bot with its key cache makes them: only the first
    /// reads the thread list (`GET …/threads`); each later one sends the list's length with its
    /// event and the server checks it. A thread created between two admissions is seen by the
    /// second: the server refuses its stale length (409 `threads_changed`, nothing stored), it
    /// reads the list and goes again, and its joiner gets the new thread's key. A server that
    /// does not check the length (`checksThreadCount` off, as one from before) gets the list
    /// read for every admission, and its joiners every key too.
    @Test(arguments: [true, false]) func sequentialAdmissionsReuseTheCheckedThreadList(checks: Bool) throws {
        let running = try HTTPServerTests.Running(checksThreadCount: checks)
        let (session, thread, keys, _) = try running.space()
        let rosters = RosterCache()
        _ = try rosters.refresh(session)
        let (queue, cache, signed) = (AdmissionQueue(), ThreadKeyCache(), invite(session))
        // Admits one joiner: the requests it made at the server, the keys the joiner holds (from
        // its grant, the same as from the server) and its grant's message count.
        func admitted(_ name: String) throws -> (lines: [String], keys: Set<ThreadID>, messages: Int) {
            let identity = DeviceIdentity.generate()
            let before = Self.settled(running, session: session)
            let grant = try self.admitOne(
                identity, name: name, session: session, rosters: rosters, keys: cache, queue: queue,
                invite: signed)
            let lines = Self.lines(running, from: before, session: session)
            return (lines, try Self.heldKeys(grant, identity), grant.historyHint.messages)
        }
        func sent(_ lines: [String], _ method: String, _ tail: String) -> Int {
            lines.filter { $0.contains(#""method":"\#(method)""#) && $0.contains(tail + #"""#) }.count
        }
        let first = try admitted("J0")
        #expect(sent(first.lines, "GET", "/threads") == 1)
        #expect(first.messages == 0)
        for index in 1...3 {
            let next = try admitted("J\(index)")
            #expect(sent(next.lines, "GET", "/threads") == (checks ? 0 : 1))
            #expect(sent(next.lines, "POST", "/wraps") == 0)
            #expect(next.keys == first.keys)
        }
        // A message (the next grant counts it), then a thread created behind the cache's back.
        try session.send("hello", to: thread, keys: keys)
        let created = try session.createThread(named: "Later")
        let after = try admitted("J4")
        #expect(after.keys == first.keys.union([created]))
        #expect(after.messages == 1)
        #expect(sent(after.lines, "GET", "/threads") == 1)
        #expect(sent(after.lines, "POST", "/wraps") == 0)
        let refused = after.lines.filter { $0.contains(#""status":409"#) && $0.contains(#"/members""#) }
        #expect(refused.count == (checks ? 1 : 0))
        // The list read then is reused in turn, its message count given by the server.
        try session.send("again", to: thread, keys: keys)
        let last = try admitted("J5")
        #expect(last.keys == after.keys)
        #expect(last.messages == 2)
        #expect(sent(last.lines, "GET", "/threads") == (checks ? 0 : 1))
    }

    /// A server that does not check the length, after one that did (the cache was told it
    /// checks, as a first admission on such a server tells it): the admission that reused the
    /// list reads it after all, and posts the key of a thread created since.
    @Test func anUncheckedReusedListIsReadAgain() throws {
        let running = try HTTPServerTests.Running(checksThreadCount: false)
        let (session, _, _, _) = try running.space()
        let rosters = RosterCache()
        _ = try rosters.refresh(session)
        let cache = ThreadKeyCache()
        cache.admitted(on: try cache.threadList(session), checked: true)
        let created = try session.createThread(named: "Later")
        let identity = DeviceIdentity.generate()
        let before = Self.settled(running, session: session)
        let grant = try admitOne(identity, session: session, rosters: rosters, keys: cache)
        let lines = Self.lines(running, from: before, session: session)
        #expect(lines.filter { $0.contains(#""method":"GET""#) && $0.contains(#"/threads""#) }.count == 1)
        #expect(lines.filter { $0.contains(#""method":"POST""#) && $0.contains(#"/wraps""#) }.count == 1)
        #expect(try Self.heldKeys(grant, identity).contains(created))
    }

    /// The threads whose keys the joiner `identity` holds once it opened `grant`: those the
    /// grant gave it, the same as the server holds for it.
    private static func heldKeys(_ grant: JoinGrant, _ identity: DeviceIdentity) throws -> Set<ThreadID> {
        let opened = try grant.open(
            identity: identity, deviceLabel: "phone", now: Int64(Date().timeIntervalSince1970), nameplate: "7"
        )
        let joiner = try SpaceSession(saved: opened.saved, identity: identity)
        let held = Set(try joiner.threadKeys(roster: try joiner.roster()).keys)
        #expect(held == Set(opened.verified.threadKeys.keys))
        return held
    }

    /// Admits `identity` alone, as the bot admits (with a roster cache, a queue and `keys`).
    private func admitOne(
        _ identity: DeviceIdentity, name: String = "Bea", session: SpaceSession, rosters: RosterCache,
        keys: ThreadKeyCache, queue: AdmissionQueue = AdmissionQueue(), invite signed: SignedInvite? = nil
    ) throws -> JoinGrant {
        try session.admit(
            request: JoinRequest(
                displayName: name, deviceLabel: "phone", publicKeys: JoinerKeys(identity.publicKeys)),
            invite: signed ?? invite(session), carryInvite: true, rosters: rosters, admissions: queue,
            keys: keys
        ).grant
    }

    /// The server's log lines from index `from` on, once every request answered so far is in
    /// it: a line is written after its answer, and a batch's answers in order, so a last
    /// request's line (waited for, bounded) comes after all of theirs.
    /// The log's length once every request made so far has its line. The server writes a
    /// request's line after answering it, so the line of a request whose answer the client
    /// already has can still come: a marker request made now (its own line awaited) and a log
    /// that then stops growing keep an earlier request's line out of the next count.
    private static func settled(_ running: HTTPServerTests.Running, session: SpaceSession) -> Int {
        _ = lines(running, from: running.log.lines.withLock { $0.count }, session: session)
        var count = running.log.lines.withLock { $0.count }
        for _ in 0..<100 {
            usleep(20_000)
            let now = running.log.lines.withLock { $0.count }
            if now == count { break }
            count = now
        }
        return count
    }

    private static func lines(_ running: HTTPServerTests.Running, from: Int, session: SpaceSession)
        -> [String]
    {
        _ = try? session.client.members(session.saved.space)
        for _ in 0..<500 {
            let lines = running.log.lines.withLock { Array($0[from...]) }
            if lines.contains(where: { $0.contains(#""method":"GET""#) && $0.contains(#"/members""#) }) {
                return lines
            }
            usleep(10_000)
        }
        return running.log.lines.withLock { Array($0[from...]) }
    }

    @Test func aServerTakingOneEventPerRequestGetsOneEach() throws {
        let (members, _, running, session, _, queue, start) = try admitted(8, maximumEventsPerRequest: 1)
        defer { withExtendedLifetime(running) {} }
        let verified = try session.verifiedRoster(try session.client.events(session.saved.space))
        #expect(members.allSatisfy { verified.members[$0.id] != nil })
        #expect(try session.client.events(session.saved.space).count == start + 8)
        #expect(queue.counts.requests == 8)
        #expect(queue.counts.events == 8)
    }
}
