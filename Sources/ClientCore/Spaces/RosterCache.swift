import Foundation

/// A space's membership chain kept verified between calls: each refresh fetches only the events
/// after the last one seen and applies them to the verified roster, instead of fetching and
/// verifying the whole chain again (what an attendant admitting many joiners needs). A chain
/// that no longer extends the cached one is fetched and verified from the start.
public final class RosterCache: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [MembershipEvent] = []
    private var roster: Roster?

    public init() {}

    /// The roster verified at the last refresh, without asking the server (nil before one).
    public var latest: Roster? {
        lock.lock()
        defer { lock.unlock() }
        return roster
    }

    /// The events and roster as last verified, without asking the server (nil before a
    /// refresh): what an attendant signs its next event onto, refreshing only when the server
    /// refuses it because the chain moved.
    public var verified: (events: [MembershipEvent], roster: Roster)? {
        lock.lock()
        defer { lock.unlock() }
        return roster.map { (events, $0) }
    }

    /// Records an event this device appended (the server took it) onto the chain of `count`
    /// events, with the roster after it. Nothing changes if the cache moved meanwhile: the next
    /// refresh reads the event from the server like any other.
    public func extend(_ event: MembershipEvent, onto count: Int, giving updated: Roster) {
        lock.lock()
        defer { lock.unlock() }
        guard roster != nil, events.count == count, updated.head == event.hash else { return }
        events.append(event)
        roster = updated
    }

    /// The current events and the roster verified from the session's saved owner key.
    public func refresh(_ session: SpaceSession) throws(SpaceClientError) -> (
        events: [MembershipEvent], roster: Roster
    ) {
        lock.lock()
        defer { lock.unlock() }
        if var current = roster {
            let newer = try session.client.events(session.saved.space, from: events.count)
            do throws(KeyModelError) {
                for event in newer { try current.apply(event) }
                events += newer
                roster = current
                return (events, current)
            } catch {
                // Not an extension of what we verified: start over below.
            }
        }
        let all = try session.client.events(session.saved.space)
        let verified = try session.verifiedRoster(all)
        events = all
        roster = verified
        return (all, verified)
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
