import Mailbox
import Support

/// Everything an operator can tune, with defaults that are safe on the public internet. The
/// `eleven-relay` executable maps its flags and environment onto these fields.
public struct RelayConfig: Sendable, Equatable {
    public var welcome: WelcomeConfig
    /// Whether `list` reveals the AppID's nameplates. Off: enumeration only helps attackers,
    /// so `list` answers an empty list (as the reference's `--disallow-list`).
    public var allowList: Bool
    /// Optional admission control before `bind`.
    public var permission: PermissionPolicy
    public var expiry: ExpiryPolicy
    public var limits: RelayLimits
    /// Seconds a short nameplate (1 to 3 digits) is not allocated again after it was deleted
    /// (0: at once, as the reference). An attendant that claims its number back for the next
    /// use of an invite, or to leave the `ended` notice, then finds its own number and not a
    /// stranger's new invite; and a late joiner typing an old code reaches no stranger's
    /// invite, where the wrong words would burn it. Kept in memory: a restarted relay may hand
    /// out at once a number deleted just before.
    public var nameplateReuseDelay: Double

    public init(
        welcome: WelcomeConfig = WelcomeConfig(), allowList: Bool = false,
        permission: PermissionPolicy = .none, expiry: ExpiryPolicy = ExpiryPolicy(),
        limits: RelayLimits = RelayLimits(), nameplateReuseDelay: Double = 600
    ) {
        self.welcome = welcome
        self.allowList = allowList
        self.permission = permission
        self.expiry = expiry
        self.limits = limits
        self.nameplateReuseDelay = nameplateReuseDelay
    }
}

/// What the `welcome` message says.
public struct WelcomeConfig: Sendable, Equatable {
    /// Message of the day; clients print it and continue.
    public var motd: String?
    /// Clients print it and stop (`--signal-error`): for taking a relay out of service.
    public var signalError: String?
    /// `current_cli_version` for old Python CLIs (deprecated; normally unset).
    public var advertiseVersion: String?
    /// Whether to tell each client its own address (`your-address`), as server 0.8.0 does.
    public var includeYourAddress: Bool

    public init(
        motd: String? = nil, signalError: String? = nil, advertiseVersion: String? = nil,
        includeYourAddress: Bool = true
    ) {
        self.motd = motd
        self.signalError = signalError
        self.advertiseVersion = advertiseVersion
        self.includeYourAddress = includeYourAddress
    }
}

/// Admission control advertised as `permission-required` in the welcome.
public enum PermissionPolicy: Sendable, Equatable {
    /// Anyone may bind (the reference's behaviour).
    case none
    /// A Hashcash v1 stamp (`1:bits:date:resource::rand:counter`, SHA-1 with at least `bits`
    /// leading zero bits) for `resource`, dated within `maximumAge` seconds of now, each
    /// stamp usable once. Clients send it with `submit-permission` (or `submit-permissions`).
    case hashcash(bits: Int, resource: String, maximumAge: Double = 2 * 86400)
}

/// When mailboxes nobody is subscribed to are deleted.
public struct ExpiryPolicy: Sendable, Equatable {
    public struct Rule: Sendable, Equatable {
        /// Applies to AppIDs starting with this string; the longest matching prefix wins.
        public var appIDPrefix: String
        /// Seconds of inactivity (no subscriber, no open/add/close) before deletion.
        public var idleSeconds: Double
        public init(appIDPrefix: String, idleSeconds: Double) {
            self.appIDPrefix = appIDPrefix
            self.idleSeconds = idleSeconds
        }
    }

    public var rules: [Rule]
    /// For AppIDs no rule matches: the reference's 11 minutes.
    public var defaultIdleSeconds: Double
    /// How often the glue should deliver a clock tick (the reference checks every 5 minutes).
    public var checkIntervalSeconds: Double

    /// Eleven's AppIDs wait 72 hours, so a joiner can wait overnight for a human to let them in.
    public static let elevenRule = Rule(appIDPrefix: "elevenmessenger.com/", idleSeconds: 72 * 3600)

    public init(
        rules: [Rule] = [ExpiryPolicy.elevenRule], defaultIdleSeconds: Double = 11 * 60,
        checkIntervalSeconds: Double = 60
    ) {
        self.rules = rules
        self.defaultIdleSeconds = defaultIdleSeconds
        self.checkIntervalSeconds = checkIntervalSeconds
    }

    /// The idle time after which a mailbox of `app` expires.
    public func idleSeconds(for app: AppID) -> Double {
        var best: Rule?
        for rule in rules where app.value.hasPrefix(rule.appIDPrefix) {
            if best.map({ rule.appIDPrefix.count > $0.appIDPrefix.count }) ?? true { best = rule }
        }
        return best?.idleSeconds ?? defaultIdleSeconds
    }
}

/// A token bucket: `burst` tokens, refilled at `perSecond`.
public struct RateLimit: Sendable, Equatable {
    public var burst: Double
    public var perSecond: Double
    public init(burst: Double, perSecond: Double) {
        self.burst = burst
        self.perSecond = perSecond
    }
    /// No limit.
    public static let unlimited = RateLimit(burst: .infinity, perSecond: .infinity)
}

/// Abuse limits. Every rejection is an explicit `error` (or a welcome `error` and a close for
/// connections) and is counted in ``RelayMetrics``.
public struct RelayLimits: Sendable, Equatable {
    /// Largest accepted client message (one WebSocket payload, UTF-8 bytes). A larger one is
    /// read past, never held, and answered with a `message_too_large` error.
    public var maximumMessageBytes: Int
    /// Longest `appid`, `side`, `phase`, `mailbox`, `mood` value.
    public var maximumFieldBytes: Int
    /// Messages one mailbox may hold.
    public var maximumMailboxMessages: Int
    /// Sum of body lengths one mailbox may hold.
    public var maximumMailboxBytes: Int
    /// Sum of body lengths all mailboxes together may hold (the relay keeps them in memory).
    public var maximumStoredBytes: Int
    /// Nameplates that connections from one address may have created and not yet released.
    public var maximumNameplatesPerAddress: Int
    /// Connections open at once, all addresses together.
    public var maximumConnections: Int
    /// Bad messages one connection may send before it is closed.
    public var maximumErrorsPerConnection: Int
    public var connectionRate: RateLimit
    public var allocationRate: RateLimit
    public var claimRate: RateLimit
    /// Addresses the per-address limits do not apply to (a trusted proxy's own health checks,
    /// loopback load tests).
    public var exemptAddresses: Set<SourceAddress>

    public init(
        maximumMessageBytes: Int = WormholeLimits.maximumMessageBytes, maximumFieldBytes: Int = 1024,
        maximumMailboxMessages: Int = 256, maximumMailboxBytes: Int = 4 * 1024 * 1024,
        maximumStoredBytes: Int = 1024 * 1024 * 1024,
        maximumNameplatesPerAddress: Int = 100, maximumConnections: Int = 50_000,
        maximumErrorsPerConnection: Int = 32,
        connectionRate: RateLimit = RateLimit(burst: 120, perSecond: 4),
        allocationRate: RateLimit = RateLimit(burst: 60, perSecond: 1),
        claimRate: RateLimit = RateLimit(burst: 120, perSecond: 2),
        exemptAddresses: Set<SourceAddress> = []
    ) {
        self.maximumMessageBytes = maximumMessageBytes
        self.maximumFieldBytes = maximumFieldBytes
        self.maximumMailboxMessages = maximumMailboxMessages
        self.maximumMailboxBytes = maximumMailboxBytes
        self.maximumStoredBytes = maximumStoredBytes
        self.maximumNameplatesPerAddress = maximumNameplatesPerAddress
        self.maximumConnections = maximumConnections
        self.maximumErrorsPerConnection = maximumErrorsPerConnection
        self.connectionRate = connectionRate
        self.allocationRate = allocationRate
        self.claimRate = claimRate
        self.exemptAddresses = exemptAddresses
    }

    /// No limits at all (for benchmarks against the reference, which has none).
    public static let unlimited = RelayLimits(
        maximumMessageBytes: .max, maximumFieldBytes: .max, maximumMailboxMessages: .max,
        maximumMailboxBytes: .max, maximumStoredBytes: .max, maximumNameplatesPerAddress: .max,
        maximumConnections: .max,
        maximumErrorsPerConnection: .max, connectionRate: .unlimited, allocationRate: .unlimited,
        claimRate: .unlimited)
}

extension RelayConfig {
    /// What is wrong with this configuration, in words an operator can act on (empty when it
    /// is usable). The executable refuses to start on any problem.
    public var problems: [String] {
        var problems: [String] = []
        let l = limits
        for (name, value) in [
            ("maximum message size", l.maximumMessageBytes), ("maximum field size", l.maximumFieldBytes),
            ("messages per mailbox", l.maximumMailboxMessages), ("bytes per mailbox", l.maximumMailboxBytes),
            ("bytes stored in all", l.maximumStoredBytes),
            ("maximum connections", l.maximumConnections),
            ("errors per connection", l.maximumErrorsPerConnection),
        ] where value < 1 {
            problems.append("\(name) must be at least 1 (is \(value))")
        }
        if l.maximumNameplatesPerAddress < 0 {
            problems.append("nameplates per address must not be negative")
        }
        for (name, rate) in [
            ("connection rate", l.connectionRate), ("allocation rate", l.allocationRate),
            ("claim rate", l.claimRate),
        ] where !(rate.burst >= 1) || !(rate.perSecond >= 0) {
            problems.append("\(name) needs a burst of at least 1 and a non-negative refill")
        }
        if !(nameplateReuseDelay >= 0) { problems.append("the nameplate reuse delay must not be negative") }
        if !(expiry.defaultIdleSeconds > 0) { problems.append("the default idle time must be positive") }
        if !(expiry.checkIntervalSeconds > 0) {
            problems.append("the expiry check interval must be positive")
        }
        for rule in expiry.rules where !(rule.idleSeconds > 0) || rule.appIDPrefix.isEmpty {
            problems.append(
                "expiry rule '\(rule.appIDPrefix)' needs a non-empty prefix and a positive idle time")
        }
        if case .hashcash(let bits, let resource, let maximumAge) = permission {
            if !(1...40).contains(bits) { problems.append("hashcash bits must be 1 to 40 (is \(bits))") }
            if resource.isEmpty || resource.contains(":") {
                problems.append("the hashcash resource must be non-empty and contain no ':'")
            }
            if !(maximumAge > 0) { problems.append("the hashcash stamp age must be positive") }
        }
        return problems
    }
}
