import Foundation
import Support

/// Idle keep-alive connections by key (origin and TLS settings), most recently parked first.
/// A connection is here only between a complete response that allows reuse and the next
/// request; whoever takes one owns it.
class KeepAlivePool<Item: AnyObject>: @unchecked Sendable {
    /// Idle connections kept per origin; more are closed.
    let maxIdlePerOrigin: Int
    /// How long a connection may sit idle: well under the idle timeouts servers use (ours is
    /// 60 s; common servers 5 s or more), so the peer rarely closes one just as it is reused.
    let idleNanos: UInt64

    private struct Entry {
        let item: Item
        let since: UInt64
    }

    private let idle = Locked<[String: [Entry]]>([:])

    init(maxIdlePerOrigin: Int = 16, idleTime: Duration = .seconds(4)) {
        self.maxIdlePerOrigin = maxIdlePerOrigin
        idleNanos = idleTime.nanoseconds
    }

    /// The key of an origin: connections are shared only by requests that would have opened
    /// the same one (scheme, host, port, trust settings).
    static func key(_ url: NetURL, _ tls: TLSClientConfiguration) -> String {
        let trust = url.isSecure ? "|\(tls.caFile ?? "<system>")|\(tls.verifyPeer)" : ""
        return "\(url.scheme)://\(url.hostHeader)\(trust)"
    }

    /// Takes the most recently parked connection for `key` that `matches` and has not outlived
    /// the idle time. The caller owns it from here.
    func take(_ key: String, matching matches: (Item) -> Bool = { _ in true }) -> Item? {
        let now = monotonicNanos()
        return idle.withLock { idle -> Item? in
            guard var entries = idle[key] else { return nil }
            defer { idle[key] = entries.isEmpty ? nil : entries }
            var index = entries.count - 1
            while index >= 0 {
                let entry = entries[index]
                if now &- entry.since < idleNanos && matches(entry.item) {
                    entries.remove(at: index)
                    return entry.item
                }
                index -= 1
            }
            return nil
        }
    }

    /// Parks a connection; false when the origin already has enough idle ones.
    func park(_ item: Item, key: String) -> Bool {
        let entry = Entry(item: item, since: monotonicNanos())
        return idle.withLock { idle in
            var entries = idle[key] ?? []
            guard entries.count < maxIdlePerOrigin else { return false }
            entries.append(entry)
            idle[key] = entries
            return true
        }
    }

    /// Takes a connection out; false when it was not parked (someone took it to reuse).
    func remove(_ item: Item, key: String) -> Bool {
        idle.withLock { idle in
            guard var entries = idle[key], let index = entries.firstIndex(where: { $0.item === item })
            else { return false }
            entries.remove(at: index)
            idle[key] = entries.isEmpty ? nil : entries
            return true
        }
    }

    /// Takes out every connection (of any key) that has outlived the idle time.
    func removeExpired() -> [Item] {
        let now = monotonicNanos()
        return idle.withLock { idle in
            var expired: [Item] = []
            for (key, entries) in idle where entries.contains(where: { now &- $0.since >= idleNanos }) {
                let kept = entries.filter { now &- $0.since < idleNanos }
                expired += entries.filter { now &- $0.since >= idleNanos }.map { $0.item }
                idle[key] = kept.isEmpty ? nil : kept
            }
            return expired
        }
    }

    /// When the longest-parked connection outlives the idle time; nil when none is parked.
    var earliestExpiry: UInt64? {
        idle.withLock { idle in idle.values.compactMap { $0.first?.since }.min().map { $0 &+ idleNanos } }
    }

    /// Idle connections parked for `key` now.
    func idleCount(_ key: String) -> Int {
        idle.withLock { $0[key]?.count ?? 0 }
    }
}

/// Idle keep-alive connections of the loop-driven client (``HTTPClient``'s callback and
/// `async` requests use the shared one). A parked connection stays registered on its loop, so
/// a peer that closes it, bytes it sends unasked or its idle time running out close it and take
/// it out.
final class HTTPConnectionPool: KeepAlivePool<ClientConnection>, @unchecked Sendable {
    static let shared = HTTPConnectionPool()

    /// Takes the most recently parked connection for `key` (on `loop` if given) that has not
    /// outlived the idle time. It must be used on its own loop.
    func take(_ key: String, on loop: EventLoop?) -> ClientConnection? {
        take(key) { loop == nil || $0.loop === loop }
    }
}
