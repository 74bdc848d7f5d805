import Mailbox

/// `list`, `allocate`, `claim`, `release`: nameplates, the short names that lead to mailboxes.
extension RelayCore {
    mutating func list(connection id: ConnectionID, app: AppID) -> Result<Void, RelayError> {
        let names = config.allowList ? (namesByApp[app] ?? []).sorted() : []
        if config.allowList { noteReadAnywhere() }
        send(.nameplates(names), to: id)
        return .success(())
    }

    mutating func allocate(
        connection id: ConnectionID, app: AppID, side: Side, now: RelayInstant, orig: JSONValue = .null
    ) -> Result<Void, RelayError> {
        guard let connection = connections[id] else { return .success(()) }
        guard !connection.didAllocate else { return .failure(.alreadyAllocated) }
        if !isExempt(connection), !allocationLimiter.take(connection.source, now: now) {
            return .failure(.allocationRateLimited)
        }
        if let problem = nameplateLimitProblem(connection) { return .failure(problem) }
        let taken = unallocatable(app)
        if isShared {
            // The store picks the first of these still free on every node.
            let candidates = NameplateAllocator.candidates(
                taken: taken, count: Self.allocationCandidates, using: &random)
            guard !candidates.isEmpty else { return .failure(.noFreeNameplate) }
            requestNameplate(candidates, app: app, isAllocation: true, connection: id, orig: orig)
            return .success(())
        }
        guard
            let name = NameplateAllocator.allocate(taken: taken, using: &random)
        else { return .failure(.noFreeNameplate) }
        // Allocation claims the nameplate for the caller (it cannot fail for a fresh name).
        // Like the reference it does not count as this connection's `claim`.
        let claimed = claimNameplate(NameplateKey(app: app, name: name), side: side, by: connection, now: now)
        if case .failure(let error) = claimed { return .failure(error) }
        connections[id]?.didAllocate = true
        metrics.nameplatesAllocated += 1
        send(.allocated(name), to: id)
        return .success(())
    }

    /// The nameplates allocation must not hand out: every existing one, and the short ones
    /// still resting after their deletion.
    mutating func unallocatable(_ app: AppID) -> NameplateAllocator.Taken {
        forgetRestedNames()
        return NameplateAllocator.Taken(
            live: namesByApp[app] ?? [], resting: restingNames[app] ?? [:],
            unavailableShort: unavailableShort[app] ?? [0, 0, 0])
    }

    /// Forgets the names whose rest is over, at most once a second (so a name may rest up to a
    /// second longer than the delay).
    mutating func forgetRestedNames() {
        guard now.seconds(since: restingPrunedAt) >= 1 || now < restingPrunedAt else { return }
        restingPrunedAt = now
        for (app, names) in restingNames {
            var recent = names
            for (name, since) in names where now.seconds(since: since) >= config.nameplateReuseDelay {
                recent[name] = nil
                if let length = NameplateAllocator.shortLength(name) {
                    unavailableShort[app]?[length - 1] -= 1
                }
            }
            restingNames[app] = recent.isEmpty ? nil : recent
        }
    }

    mutating func claim(
        _ field: Result<Nameplate, RelayError>, connection id: ConnectionID, app: AppID, side: Side,
        now: RelayInstant, orig: JSONValue = .null
    ) -> Result<Void, RelayError> {
        guard let connection = connections[id] else { return .success(()) }
        if case .failure(let error) = field, error.code == .claimRequiresNameplate { return .failure(error) }
        guard !connection.didClaim else { return .failure(.onlyOneClaim) }
        if !isExempt(connection), !claimLimiter.take(connection.source, now: now) {
            return .failure(.claimRateLimited)
        }
        connections[id]?.didClaim = true
        let text: String
        switch field {
        case .failure(let error): return .failure(error)
        case .success(let value): text = value.value
        }
        guard let name = Nameplate(validating: text) else { return .failure(.invalidNameplate) }
        connections[id]?.claimedNameplate = name
        let key = NameplateKey(app: app, name: name)
        if state.nameplates[key] == nil, let problem = nameplateLimitProblem(connection) {
            return .failure(problem)
        }
        if isShared, connection.allocatedNameplate != name {
            // Another node may have made, deleted or remade it a moment ago, and this node's
            // copy may not show it yet: the store says where it leads, and the answer waits
            // until this node has caught up with the store.
            requestNameplate([name], app: app, isAllocation: false, connection: id, orig: orig)
            return .success(())
        }
        switch claimNameplate(key, side: side, by: connection, now: now) {
        case .failure(let error): return .failure(error)
        case .success(let mailbox):
            metrics.nameplatesClaimed += 1
            send(.claimed(mailbox), to: id)
            return .success(())
        }
    }

    /// Attaches `side` to the nameplate (creating it and its mailbox if needed) and opens the
    /// mailbox for the side. Refusals (`reclaimed`, `crowded`) write nothing.
    mutating func claimNameplate(
        _ key: NameplateKey, side: Side, by connection: ConnectionState, now: RelayInstant
    ) -> Result<MailboxID, RelayError> {
        noteRead(.nameplate(key))
        if let nameplate = state.nameplates[key] {
            let mailboxKey = MailboxKey(app: key.app, id: nameplate.mailbox)
            noteRead(.mailbox(mailboxKey))
            if let row = nameplate.sides[side] {
                if !row.claimed { return .failure(.reclaimed) }
            } else if nameplate.sides.count >= 2 {
                return .failure(.crowded)
            }
            if isCrowded(mailboxKey, adding: side) { return .failure(.crowded) }
            if nameplate.sides[side] == nil {
                write(.putNameplateSide(key, side, NameplateSideRecord(claimed: true, added: now)))
            }
            openMailboxSide(mailboxKey, side: side, forNameplate: true, now: now)
            return .success(nameplate.mailbox)
        }
        let mailbox = newMailboxID(app: key.app)
        let mailboxKey = MailboxKey(app: key.app, id: mailbox)
        write(.putMailbox(mailboxKey, forNameplate: true, updated: now))
        write(.putNameplate(key, mailbox: mailbox))
        write(.putNameplateSide(key, side, NameplateSideRecord(claimed: true, added: now)))
        nameplateOwners[key] = connection.source
        openNameplatesByAddress[connection.source, default: 0] += 1
        openMailboxSide(mailboxKey, side: side, forNameplate: true, now: now)
        return .success(mailbox)
    }

    mutating func release(
        _ field: Result<Nameplate?, RelayError>, connection id: ConnectionID, app: AppID, side: Side,
        now: RelayInstant
    ) -> Result<Void, RelayError> {
        guard let connection = connections[id] else { return .success(()) }
        guard !connection.didRelease else { return .failure(.onlyOneRelease) }
        let given: String?
        switch field {
        case .failure(let error): return .failure(error)
        case .success(let value): given = value?.value
        }
        let text: String
        if let given {
            if let claimed = connection.claimedNameplate, claimed.value != given {
                return .failure(.releaseNameplateMismatch)
            }
            text = given
        } else {
            guard let claimed = connection.claimedNameplate else { return .failure(.releaseWithoutClaim) }
            text = claimed.value
        }
        connections[id]?.didRelease = true
        // Releasing something unknown (or invalid) silently succeeds, as in the reference.
        if let name = Nameplate(validating: text) {
            releaseNameplate(NameplateKey(app: app, name: name), side: side, now: now)
        }
        send(.released, to: id)
        return .success(())
    }

    mutating func releaseNameplate(_ key: NameplateKey, side: Side, now: RelayInstant) {
        noteRead(.nameplate(key))
        guard let nameplate = state.nameplates[key], let row = nameplate.sides[side] else { return }
        if row.claimed {
            write(.putNameplateSide(key, side, NameplateSideRecord(claimed: false, added: row.added)))
        }
        guard let updated = state.nameplates[key], !updated.sides.values.contains(where: \.claimed) else {
            return
        }
        retireNameplate(key, pruned: false)
    }

    /// Deletes a nameplate and records how it ended.
    mutating func retireNameplate(_ key: NameplateKey, pruned: Bool) {
        guard let nameplate = state.nameplates[key] else { return }
        let sides = nameplate.sides.count
        let result: String
        if sides > 2 {
            result = "crowded"
        } else if pruned {
            result = "pruney"
        } else {
            result = sides == 2 ? "happy" : "lonely"
        }
        metrics.nameplateResults[result, default: 0] += 1
        write(.deleteNameplate(key))
    }

    func isExempt(_ connection: ConnectionState) -> Bool {
        config.limits.exemptAddresses.contains(connection.source)
    }

    func nameplateLimitProblem(_ connection: ConnectionState) -> RelayError? {
        guard !isExempt(connection) else { return nil }
        let limit = config.limits.maximumNameplatesPerAddress
        return openNameplatesByAddress[connection.source, default: 0] >= limit ? .nameplateLimit(limit) : nil
    }
}
