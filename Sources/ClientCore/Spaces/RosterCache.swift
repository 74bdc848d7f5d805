import Foundation
import SpaceModel
import Support

/// A space's membership chain kept verified between calls: each refresh fetches only the events
/// after the last one seen and applies them to the verified roster, instead of fetching and
/// verifying the whole chain again (what an attendant admitting many joiners needs). A chain
/// that no longer extends the cached one is fetched and verified from the start.
public final class RosterCache: @unchecked Sendable {
    /// Guards `events` and `roster`.
    private let lock = Locked(())
    private var events: [MembershipEvent] = []
    private var roster: Roster?

    /// Signatures this process verified for the chain's space (invite records, checked for
    /// every joiner they bring): whoever decides on this cache's rosters passes it.
    public let signatures = SignatureMemo()

    public init() {}

    /// The roster verified at the last refresh, without asking the server (nil before one).
    public var latest: Roster? {
        lock.withLock { _ in roster }
    }

    /// The events and roster as last verified, without asking the server (nil before a
    /// refresh): what an attendant signs its next event onto, refreshing only when the server
    /// refuses it because the chain moved.
    public var verified: (events: [MembershipEvent], roster: Roster)? {
        lock.withLock { _ in roster.map { (events, $0) } }
    }

    /// ``verified`` without the events: how many there are. What a holder keeps while it works
    /// (the queue while its request is out); a holder of the events array makes the cache's next
    /// append copy the whole chain.
    public var tip: (count: Int, roster: Roster)? {
        lock.withLock { _ in roster.map { (events.count, $0) } }
    }

    /// Records events this device appended (the server took them), in chain order, onto the
    /// chain of `count` events, with the roster after the last of them. Nothing changes if the
    /// cache moved meanwhile: the next refresh reads them from the server like any other.
    public func extend(_ added: [MembershipEvent], onto count: Int, giving updated: Roster) {
        lock.withLock { _ in
            guard roster != nil, events.count == count, let last = added.last, updated.head == last.hash
            else {
                return
            }
            events += added
            roster = updated
        }
    }

    /// The current events and the roster verified from the session's saved owner key, as read
    /// by a request to the server that started after this call did. Concurrent callers (every
    /// joiner a bot decides on) share one request: one at a time is in flight, and everyone who
    /// came while it was asked takes the next one's answer, so the server sees one read per
    /// request's duration instead of one per caller, and nobody gets an answer older than their
    /// call. What a request brings is applied under the lock onto whatever the cache holds by
    /// then (``extend(_:onto:giving:)`` may have grown it meanwhile).
    public func refresh(_ session: SpaceSession) throws(SpaceClientError) -> (
        events: [MembershipEvent], roster: Roster
    ) {
        let verified = try flights.run { () throws(SpaceClientError) in try fetch(session) }
        // The cache as it is now: what the request brought, or more (an extension since). The
        // shared answer itself holds no events: kept for late callers, it would make every
        // later append copy the whole chain.
        return lock.withLock { _ in roster.map { (events, $0) } } ?? ([], verified)
    }

    /// ``refresh(_:)``'s shared requests.
    private let flights = SharedRequest<Roster>()

    /// One request: the events after the cached ones, applied to the verified roster, or the
    /// whole chain verified afresh when nothing is cached or the chain does not extend it.
    private func fetch(_ session: SpaceSession) throws(SpaceClientError) -> Roster {
        let (from, known) = lock.withLock { _ in (events.count, roster != nil) }
        if known {
            let newer = try session.client.events(session.saved.space, from: from)
            if let extended = lock.withLock({ _ in extend(from: from, with: newer) }) { return extended }
        }
        // Nothing verified yet, or the chain does not extend the cached one: start over.
        let all = try session.client.events(session.saved.space)
        let verified = try session.verifiedRoster(all)
        lock.withLock { _ in
            events = all
            roster = verified
        }
        return verified
    }

    /// Under `lock`: applies `newer` (the server's events from sequence `from` on) to the cache,
    /// which may have grown since they were asked for (another refresh, ``extend(_:onto:giving:)``).
    /// Nil when they do not fit the verified chain.
    private func extend(from: Int, with newer: [MembershipEvent]) -> Roster? {
        guard var current = roster, events.count >= from else { return nil }
        let overlap = events.count - from
        // What the cache gained meanwhile must be what the server sent; a cache ahead of the
        // answer (an event appended after it was read) is the fresher of the two.
        for (held, sent) in zip(events[from...], newer) where held.hash != sent.hash { return nil }
        guard newer.count > overlap else { return current }
        // Applied to a copy: the roster's dictionaries are shared with whoever holds the cached
        // roster anyway, and an event refused half way must leave the cache as it was.
        do throws(KeyModelError) {
            for event in newer[overlap...] { try current.apply(event) }
        } catch {
            return nil
        }
        events += newer[overlap...]
        roster = current
        return current
    }
}

extension SpaceClient {
    /// The membership events from sequence `from` on, in order.
    public func events(_ space: SpaceID, from: Int) throws(SpaceClientError) -> [MembershipEvent] {
        var events: [MembershipEvent] = []
        while true {
            let page = try eventPage(
                "/api/spaces/\(space.base64URL)/events?from=\(from + events.count)&limit=500",
                keysVouched: false)
            events += page
            if page.count < 500 { return events }
        }
    }
}
