import Mailbox

/// Token buckets keyed by source address. Pure: the caller passes the time.
struct RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var last: RelayInstant
    }

    let limit: RateLimit
    private var buckets: [SourceAddress: Bucket] = [:]

    init(limit: RateLimit) { self.limit = limit }

    /// Takes one token for `address`; false when the bucket is empty.
    mutating func take(_ address: SourceAddress, now: RelayInstant) -> Bool {
        guard limit.burst.isFinite else { return true }
        var bucket = buckets[address] ?? Bucket(tokens: limit.burst, last: now)
        let elapsed = max(0, now.seconds(since: bucket.last))
        bucket.tokens = min(limit.burst, bucket.tokens + elapsed * limit.perSecond)
        bucket.last = now
        guard bucket.tokens >= 1 else {
            buckets[address] = bucket
            return false
        }
        bucket.tokens -= 1
        buckets[address] = bucket
        return true
    }

    /// Takes `cost` tokens for `address` as a penalty, whatever is left: the bucket may go
    /// into debt down to minus its burst, so a repeat offender waits up to twice a full
    /// refill before `take` succeeds again.
    mutating func charge(_ address: SourceAddress, cost: Double, now: RelayInstant) {
        guard limit.burst.isFinite else { return }
        var bucket = buckets[address] ?? Bucket(tokens: limit.burst, last: now)
        let elapsed = max(0, now.seconds(since: bucket.last))
        bucket.tokens = max(-limit.burst, min(limit.burst, bucket.tokens + elapsed * limit.perSecond) - cost)
        bucket.last = now
        buckets[address] = bucket
    }

    /// Spends `amount` tokens for `address` whatever is left, and returns the debt (tokens
    /// below zero) the spending leaves, 0 when none: a byte budget, where the caller waits the
    /// debt off instead of refusing.
    mutating func spend(_ address: SourceAddress, _ amount: Double, now: RelayInstant) -> Double {
        guard limit.burst.isFinite else { return 0 }
        var bucket = buckets[address] ?? Bucket(tokens: limit.burst, last: now)
        let elapsed = max(0, now.seconds(since: bucket.last))
        bucket.tokens = min(limit.burst, bucket.tokens + elapsed * limit.perSecond) - amount
        bucket.last = now
        buckets[address] = bucket
        return max(0, -bucket.tokens)
    }

    /// Forgets buckets that have refilled completely (they equal a fresh bucket), so memory
    /// stays proportional to recently active addresses.
    mutating func forgetFullBuckets(now: RelayInstant) {
        guard limit.perSecond > 0 else { return }
        buckets = buckets.filter { _, bucket in
            bucket.tokens + max(0, now.seconds(since: bucket.last)) * limit.perSecond < limit.burst
        }
    }

    var trackedAddresses: Int { buckets.count }
}
