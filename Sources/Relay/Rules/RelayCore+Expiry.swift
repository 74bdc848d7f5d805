import Mailbox

/// Expiry: mailboxes nobody is subscribed to are deleted once idle for their AppID's time.
extension RelayCore {
    mutating func expire(now: RelayInstant) {
        if isShared {
            touchSubscribedMailboxes(now: now)
            if expiresMailboxes { retireMailboxesClosedOnSeveralNodes() }
        }
        var expired: [MailboxKey] = []
        for (key, mailbox) in state.mailboxes where expiresMailboxes && subscribers[key]?.isEmpty ?? true {
            let lastActivity = max(mailbox.updated, startedAt)
            if now.seconds(since: lastActivity) > config.expiry.idleSeconds(for: key.app) {
                expired.append(key)
            }
        }
        // A stable order keeps the writes reproducible.
        expired.sort { ($0.app.value, $0.id.value) < ($1.app.value, $1.id.value) }
        for key in expired { retireMailbox(key, pruned: true) }
        connectionLimiter.forgetFullBuckets(now: now)
        allocationLimiter.forgetFullBuckets(now: now)
        claimLimiter.forgetFullBuckets(now: now)
        usedStamps = usedStamps.filter { $0.value > now }
        forgetRestedNames()
    }
}
