import CSodium
import Foundation
import PAKE

/// The email identity anchor's codes, kept in memory only (a restart forgets pending codes,
/// which people then ask for again): a code is never written to the database or a log.
///
/// A pure machine: the time and the caller's source address are passed in; the home handlers do
/// the I/O (the mail, the database). Limits count per address (its blind index) and per source,
/// in a sliding hour. Every limit applies the same way whether or not an account exists for the
/// address, so the answers before a code is proved tell a prober nothing.
struct EmailCodes {
    /// How long a code works, in seconds.
    static let codeLifetime: Int64 = 600
    /// Wrong tries one code survives; the last one burns it.
    static let attemptsPerCode = 5
    /// Codes sent to one address per hour.
    static let codesPerAddress = 5
    /// Wrong codes for one address per hour, across its codes; then its codes stop working.
    static let failuresPerAddress = 10
    /// Code requests from one source per hour.
    static let requestsPerSource = 30
    /// Wrong codes from one source per hour.
    static let failuresPerSource = 30
    /// How long a proved address may be used (to sign in, make an account or add it), in seconds.
    static let ticketLifetime: Int64 = 600
    static let window: Int64 = 3600
    /// Most codes and tickets outstanding at once, and most counters (addresses and sources
    /// seen within the hour): the memory bound under a flood.
    static let maximumOutstanding = 20_000
    static let maximumCounters = 200_000

    struct Pending {
        let index: [UInt8]
        let code: [UInt8]
        let expiresAt: Int64
        var attempts: Int
    }

    struct Ticket {
        let index: [UInt8]
        let expiresAt: Int64
    }

    enum Refusal: Error, Equatable {
        /// Too many codes or wrong tries; `retryAfter` seconds.
        case tooMany(retryAfter: Int64)
        /// No such code, or the wrong code; `attemptsLeft` on this one (0 when unknown).
        case wrongCode(attemptsLeft: Int)
        case expired
        /// Too many outstanding codes server-wide.
        case busy
    }

    private(set) var pending: [[UInt8]: Pending] = [:]
    private(set) var tickets: [[UInt8]: Ticket] = [:]
    /// Event times per counter key (`a`/`f` + blind index, `s`/`x` + source), oldest first.
    private var events: [String: [Int64]] = [:]

    private mutating func count(_ key: String, now: Int64) -> (count: Int, retryAfter: Int64) {
        let kept = (events[key] ?? []).filter { $0 > now - Self.window }
        events[key] = kept.isEmpty ? nil : kept
        return (kept.count, (kept.first.map { $0 + Self.window - now }) ?? 0)
    }

    private mutating func note(_ key: String, now: Int64) { events[key, default: []].append(now) }

    private mutating func prune(now: Int64) {
        pending = pending.filter { $0.value.expiresAt > now }
        tickets = tickets.filter { $0.value.expiresAt > now }
        for key in Array(events.keys) { _ = count(key, now: now) }
    }

    private static func addressKey(_ prefix: String, _ index: [UInt8]) -> String {
        prefix + index.map { String($0, radix: 16) }.joined(separator: ".")
    }

    /// A new code for the address with blind index `index`, requested from `source`. Returns the
    /// challenge id the requester uses to prove it, and the six digits to mail.
    mutating func start(index: [UInt8], source: String, now: Int64, random: () -> [UInt8]) throws(Refusal)
        -> (challenge: [UInt8], code: String)
    {
        if pending.count + tickets.count >= Self.maximumOutstanding || events.count >= Self.maximumCounters {
            prune(now: now)
        }
        guard pending.count + tickets.count < Self.maximumOutstanding, events.count < Self.maximumCounters
        else {
            throw .busy
        }
        let bySource = count("s" + source, now: now)
        guard bySource.count < Self.requestsPerSource else { throw .tooMany(retryAfter: bySource.retryAfter) }
        let byAddress = count(Self.addressKey("a", index), now: now)
        guard byAddress.count < Self.codesPerAddress else { throw .tooMany(retryAfter: byAddress.retryAfter) }
        note("s" + source, now: now)
        note(Self.addressKey("a", index), now: now)
        let code = Self.sixDigits(random)
        let challenge = Array(random().prefix(16))
        pending[challenge] = Pending(
            index: index, code: Array(code.utf8), expiresAt: now + Self.codeLifetime, attempts: 0)
        return (challenge, code)
    }

    /// Checks `code` against the challenge; on success the code is spent and a ticket (single
    /// use, short-lived) stands for the proved address.
    mutating func verify(challenge: [UInt8], code: String, source: String, now: Int64, random: () -> [UInt8])
        throws(Refusal) -> [UInt8]
    {
        if events.count >= Self.maximumCounters { prune(now: now) }
        guard events.count < Self.maximumCounters else { throw .busy }
        let bySource = count("x" + source, now: now)
        guard bySource.count < Self.failuresPerSource else { throw .tooMany(retryAfter: bySource.retryAfter) }
        guard var entry = pending[challenge] else {
            note("x" + source, now: now)
            throw .wrongCode(attemptsLeft: 0)
        }
        guard entry.expiresAt > now else {
            pending[challenge] = nil
            throw .expired
        }
        let failures = count(Self.addressKey("f", entry.index), now: now)
        guard failures.count < Self.failuresPerAddress else {
            pending[challenge] = nil
            throw .tooMany(retryAfter: failures.retryAfter)
        }
        let typed = Array(code.filter { !$0.isWhitespace }.utf8)
        // Constant time in the code's contents; the length of a code is no secret.
        let matches =
            typed.count == entry.code.count
            && sodium_memcmp(typed, entry.code, entry.code.count) == 0
        guard matches else {
            note("x" + source, now: now)
            note(Self.addressKey("f", entry.index), now: now)
            entry.attempts += 1
            guard entry.attempts < Self.attemptsPerCode else {
                pending[challenge] = nil
                throw .tooMany(retryAfter: 0)
            }
            pending[challenge] = entry
            throw .wrongCode(attemptsLeft: Self.attemptsPerCode - entry.attempts)
        }
        pending[challenge] = nil
        let ticket = Array(random().prefix(32))
        tickets[ticket] = Ticket(index: entry.index, expiresAt: now + Self.ticketLifetime)
        return ticket
    }

    /// The proved address behind a ticket (spent now), or nil when it is unknown or expired.
    mutating func redeem(_ ticket: [UInt8], now: Int64) -> [UInt8]? {
        guard let entry = tickets.removeValue(forKey: ticket), entry.expiresAt > now else { return nil }
        return entry.index
    }

    /// Six decimal digits, uniform (32-bit draws above the largest multiple of a million are
    /// drawn again).
    static func sixDigits(_ random: () -> [UInt8]) -> String {
        let limit = UInt32.max - UInt32.max % 1_000_000
        while true {
            let value = random().prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            if value < limit {
                let digits = String(value % 1_000_000)
                return String(repeating: "0", count: 6 - digits.count) + digits
            }
        }
    }
}
