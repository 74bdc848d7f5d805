import Foundation
import SpaceModel
import Support

/// Adds joiners to a space's membership chain for an attendant admitting several at once (the
/// bot). The chain takes one event at a time, in order; instead of one round trip per joiner
/// under a lock, whoever arrives while an addition is on its way waits, and the first of them
/// then signs every waiting record onto the chain and sends them in one request (one commit
/// on the server). A joiner alone still costs one request, the single-event form.
///
/// One queue per attendant session: every caller passes the same session and roster cache.
public final class AdmissionQueue: @unchecked Sendable {
    /// Most events in one request (the space server takes up to 100).
    public var maximumBatch: Int { queue.maximumBatch }

    /// Requests sent, and the events they carried (for tests and benchmarks).
    public var counts: (requests: Int, events: Int) { state.withLock { ($0.requests, $0.added) } }

    public init(maximumBatch: Int = 32) {
        queue = BatchQueue(maximumBatch: maximumBatch)
    }

    /// Adds `record` (brought by `invite`, carried in the event if given) onto the chain as the
    /// cache last verified it, reading the chain again only when the server refuses the events
    /// because it moved on. Returns the new event and the roster after it (and after whatever
    /// was added with it); the chain stays in `rosters`, so no caller holds a copy that the
    /// cache's next append would have to copy again. With them, the sign-in challenge the server
    /// issued for the new member (nil from an older server), for the grant.
    /// Refuses (`already_member`) a record whose keys a member already holds.
    public func add(
        _ record: MemberRecord, invite: SignedInvite?, session: SpaceSession, rosters: RosterCache
    ) throws(SpaceClientError) -> Admitted {
        try add(record, invite: invite, bundles: [], session: session, rosters: rosters)
    }

    /// ``add(_:invite:session:rosters:)`` with the joiner's wrap bundles (made before the event
    /// is accepted: the record, hence the member id, is known), sent in the same request as
    /// the event when the server stores them there. `wrapsStored` says whether it did (else
    /// post them: a server from before ignores them, and bundles beyond one request's keys
    /// are not sent). `threadCount`: the length of the thread list the bundles' keys were
    /// chosen from, sent for the server to check; `threadsChecked` says it did. When it finds
    /// another number of threads, nothing of the request is stored: this admission fails with
    /// `threads_changed` (choose the keys again from the list as it is now), and the others of
    /// its batch go again without it.
    public func add(
        _ record: MemberRecord, invite: SignedInvite?, bundles: [KeyWrapBundle], threadCount: Int? = nil,
        session: SpaceSession, rosters: RosterCache
    ) throws(SpaceClientError) -> Admitted {
        try queue.submit(Pending(record: record, invite: invite, bundles: bundles, threadCount: threadCount))
        {
            batch in
            add(batch, session: session, rosters: rosters)
            return batch.map {
                $0.result
                    ?? .failure(
                        SpaceClientError(.rejected, code: "internal", message: "The admission was lost."))
            }
        }.get()
    }

    /// One joiner added: their event, the roster after it, the server's sign-in challenge for
    /// them, whether the server stored their bundles with the event, whether it checked the
    /// thread count they were chosen on (and stored them, so the list was the space's), and
    /// then the messages their threads hold.
    public typealias Admitted = (
        event: MembershipEvent, roster: Roster, signInChallenge: String?, wrapsStored: Bool,
        threadsChecked: Bool, messages: Int?
    )

    /// The most keys the bundles carried by one request hold (the space server's default
    /// limit of keys per request; a server with a lower one refuses them, and they are posted
    /// apart).
    static let maximumCarriedKeys = 1000

    // MARK: Internals

    /// One joiner of a batch, and what became of them.
    private final class Pending: @unchecked Sendable {
        let record: MemberRecord
        let invite: SignedInvite?
        let bundles: [KeyWrapBundle]
        /// The length of the thread list ``bundles`` were chosen from.
        let threadCount: Int?
        var result: Result<Admitted, SpaceClientError>?
        /// The server stored ``bundles`` with the event.
        var wrapsStored = false
        /// The server stored them having checked ``threadCount``; and the messages they open.
        var threadsChecked = false
        var messages: Int?

        init(record: MemberRecord, invite: SignedInvite?, bundles: [KeyWrapBundle], threadCount: Int?) {
            self.record = record
            self.invite = invite
            self.bundles = bundles
            self.threadCount = threadCount
        }
    }

    private let queue: BatchQueue<Pending, Result<Admitted, SpaceClientError>>
    /// The counters and `singleOnly`.
    private struct State {
        /// The server refused the batch form (an older one): one event per request from then on.
        var singleOnly = false
        var requests = 0
        var added = 0
    }

    private let state = Locked(State())

    /// Signs `batch` onto the chain and sends it; gives every entry its result.
    private func add(_ batch: [Pending], session: SpaceSession, rosters: RosterCache) {
        // The chain's length only: holding its events would make the cache's append copy them.
        var count: Int
        var roster: Roster
        var fresh = false
        do throws(SpaceClientError) {
            if let cached = rosters.tip {
                (count, roster) = cached
            } else {
                (count, roster) = try Self.tip(rosters.refresh(session))
                fresh = true
            }
        } catch {
            for pending in batch { pending.result = .failure(error) }
            return
        }
        while true {
            let open = batch.filter { $0.result == nil }
            guard !open.isEmpty else { return }
            // Sign each onto the one before; a key held already (also by an earlier entry of
            // this batch) is refused, on a chain known fresh. One roster applied in place, with
            // what takes each event back if the server stores fewer: a roster kept per event
            // copied every member dictionary at each next event.
            var running = roster
            var signed: [MembershipEvent] = []
            var undos: [Roster.Undo] = []
            var sent: [Pending] = []
            var stale = false
            var failure: SpaceClientError?
            do throws(SpaceClientError) {
                for pending in open {
                    // Keys are unique among current members: a lookup, not a scan of the space.
                    if let holder = running.currentMember(signingKey: pending.record.keys.signing),
                        holder.keys == pending.record.keys
                    {
                        guard fresh else {
                            stale = true
                            break
                        }
                        pending.result = .failure(
                            SpaceClientError(
                                .rejected, code: "already_member",
                                message:
                                    "That key already belongs to \(SpaceSession.label(holder)) in \(session.saved.name)."
                            ))
                        continue
                    }
                    let event = try session.signed { () throws(KeyModelError) in
                        try running.nextEvent(
                            .memberAdded(pending.record), signedBy: session.identity, invite: pending.invite)
                    }
                    // Signed just now, here: every rule is checked, not this device's own
                    // signature; the invite record through the memo its admission was decided with.
                    let checks = Roster.SignatureChecks.signedHere(memo: rosters.signatures)
                    undos.append(
                        try session.signed { () throws(KeyModelError) in
                            try running.applyUndoably(event, checks: checks)
                        })
                    signed.append(event)
                    sent.append(pending)
                }
            } catch {
                failure = error
            }
            var stored = 0
            var challenges: [String?] = []
            if failure == nil && !stale && !signed.isEmpty {
                (stored, challenges, failure) = post(signed, of: sent, session: session)
            }
            // What the server took is the chain now, whatever happened to the rest.
            if stored > 0 {
                for undo in undos[stored...].reversed() { running.undo(undo) }
                rosters.extend(Array(signed.prefix(stored)), onto: count, giving: running)
                count += stored
                roster = running
                for (index, (pending, event)) in zip(sent, signed).prefix(stored).enumerated() {
                    pending.result = .success(
                        (
                            event, roster, challenges[index], pending.wrapsStored, pending.threadsChecked,
                            pending.messages
                        ))
                }
            }
            if let failure, stored == 0, failure.typedCode == .threadsChanged {
                // A thread was created since the list some of these chose their keys on: those
                // choose again (nothing was stored); the rest go again without them.
                var dropped = false
                for pending in sent where pending.threadCount != nil {
                    pending.result = .failure(failure)
                    dropped = true
                }
                if dropped { continue }
            }
            if let failure {
                if !fresh && SpaceSession.chainMoved(failure) {
                    stale = true
                } else {
                    for pending in sent.dropFirst(stored) { pending.result = .failure(failure) }
                    // Entries not signed yet (signing failed before them) fail the same way.
                    for pending in open where pending.result == nil { pending.result = .failure(failure) }
                    return
                }
            }
            if stale {
                do throws(SpaceClientError) {
                    (count, roster) = try Self.tip(rosters.refresh(session))
                    fresh = true
                } catch {
                    for pending in batch where pending.result == nil { pending.result = .failure(error) }
                    return
                }
                continue
            }
            return
        }
    }

    /// A refreshed chain's length and roster, its events let go at once.
    private static func tip(_ chain: (events: [MembershipEvent], roster: Roster)) -> (Int, Roster) {
        (chain.events.count, chain.roster)
    }

    /// Sends the events of `sent` (in order): one request, with their joiners' bundles up to
    /// ``maximumCarriedKeys`` (or one per event to a server without the batch form, without
    /// bundles). Returns how many events the server stored, in order, the sign-in challenge it
    /// issued for each of those, and why it took no more.
    private func post(_ events: [MembershipEvent], of sent: [Pending], session: SpaceSession) -> (
        Int, [String?], SpaceClientError?
    ) {
        let space = session.saved.space
        var keys = 0
        // One thread count per request: the bundles chosen on another list are posted apart
        // (they were chosen on the same cache, so in practice there is one).
        let threadCount = sent.first { !$0.bundles.isEmpty }?.threadCount
        var carried = sent.filter { pending in
            let count = pending.bundles.reduce(0) { $0 + $1.entries.count }
            guard count > 0, keys + count <= Self.maximumCarriedKeys, pending.threadCount == threadCount
            else {
                return false
            }
            keys += count
            return true
        }
        while (events.count > 1 || !carried.isEmpty) && !state.withLock({ $0.singleOnly }) {
            do throws(SpaceClientError) {
                let answer = try session.client.addMembers(
                    space, events: events, bundles: carried.isEmpty ? nil : carried.flatMap(\.bundles),
                    threadCount: carried.isEmpty ? nil : threadCount)
                state.withLock {
                    $0.requests += 1
                    $0.added += events.count
                }
                if answer.wrapsStored != nil {
                    for pending in carried {
                        pending.wrapsStored = true
                        pending.threadsChecked = threadCount != nil && answer.threadCount == threadCount
                    }
                }
                for (pending, appended) in zip(sent, answer.appended) where pending.threadsChecked {
                    pending.messages = appended.messages
                }
                return (events.count, answer.appended.map(\.signInChallenge), nil)
            } catch
                where (error.status == 400 && error.typedCode == .missingField)
                || (error.status == 413 && error.typedCode == .tooManyEvents)
            {
                // The server knows only `{"event"}` (an older one), or takes fewer at once:
                // nothing was stored; one at a time from now on.
                state.withLock { $0.singleOnly = true }
            } catch
                where !carried.isEmpty && (400..<500).contains(error.status ?? 0)
                && !SpaceSession.chainMoved(error) && error.typedCode != .threadsChanged
            {
                // A bundle the server refused (or more keys than it takes) refuses the whole
                // request: the events go again without them, and each admission posts its
                // own, so that a refusal stays with its joiner. (A moved chain is signed again
                // with the bundles; a failure without an answer may have been stored.)
                carried = []
            } catch {
                return (0, [], error)
            }
        }
        var challenges: [String?] = []
        for event in events {
            do throws(SpaceClientError) {
                challenges.append(try session.client.addMember(space, event: event).signInChallenge)
            } catch {
                return (challenges.count, challenges, error)
            }
            state.withLock {
                $0.requests += 1
                $0.added += 1
            }
        }
        return (events.count, challenges, nil)
    }
}
