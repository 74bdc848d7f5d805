import Mailbox

/// Connections coming and going, the welcome, `bind`, and optional hashcash admission.
extension RelayCore {
    mutating func openConnection(_ id: ConnectionID, address: ClientAddress?, now: RelayInstant) {
        metrics.connectionsOpened += 1
        let source = address?.source ?? SourceAddress("unknown")
        let exempt = config.limits.exemptAddresses.contains(source)
        var refusal: RelayError?
        if connections.count >= config.limits.maximumConnections {
            refusal = .tooManyConnections
        } else if !exempt, !connectionLimiter.take(source, now: now) {
            refusal = .connectionRateLimited
        }
        if let refusal {
            // The welcome's `error` makes stock clients show the text and stop.
            metrics.connectionsRejected += 1
            metrics.errors[refusal.code, default: 0] += 1
            send(.welcome(Welcome(error: refusal.message)), to: id)
            output.actions.append(.close(id))
            return
        }
        connections[id] = ConnectionState(id: id, address: address)
        send(.welcome(welcome(for: address)), to: id)
    }

    func welcome(for address: ClientAddress?) -> Welcome {
        var welcome = Welcome(
            motd: config.welcome.motd, currentCLIVersion: config.welcome.advertiseVersion,
            error: config.welcome.signalError)
        if config.welcome.includeYourAddress { welcome.yourAddress = address }
        switch config.permission {
        case .none:
            break
        case .hashcash(let bits, let resource, _):
            welcome.permissionRequired = JSONObject([
                "hashcash": .object(
                    JSONObject(["bits": .number(JSONNumber(bits)), "resource": .string(resource)]))
            ])
        }
        return welcome
    }

    mutating func closeConnection(_ id: ConnectionID, now: RelayInstant) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        guard let key = connection.openMailbox, var listeners = subscribers[key] else { return }
        listeners.removeAll { $0 == id }
        if listeners.isEmpty {
            subscribers[key] = nil
            // Idle time counts from the moment the last listener left.
            if state.mailboxes[key] != nil { write(.touchMailbox(key, updated: now)) }
        } else {
            subscribers[key] = listeners
        }
    }

    mutating func bind(
        _ request: Result<(appID: AppID, side: Side), RelayError>, connection id: ConnectionID
    ) -> Result<Void, RelayError> {
        guard let connection = connections[id] else { return .success(()) }
        guard connection.binding == nil else { return .failure(.alreadyBound) }
        let bind: (appID: AppID, side: Side)
        switch request {
        case .failure(let error): return .failure(error)
        case .success(let value): bind = value
        }
        if case .hashcash = config.permission, !connection.permissionGranted {
            return .failure(.permissionRequired)
        }
        // `client_version` is deliberately not kept: it would only fingerprint users.
        connections[id]?.binding = (bind.appID, bind.side)
        return .success(())
    }

    mutating func submitPermission(
        _ submission: Result<(method: String, stamp: String?), RelayError>, connection id: ConnectionID,
        now: RelayInstant
    ) -> Result<Void, RelayError> {
        guard let connection = connections[id] else { return .success(()) }
        guard case .hashcash(let bits, let resource, let maximumAge) = config.permission else {
            // Without admission control this is just an unknown command, as in the reference.
            return .failure(connection.binding == nil ? .mustBindFirst : .unknownType)
        }
        guard !connection.permissionGranted, connection.binding == nil else {
            return .failure(.permissionAlreadyGranted)
        }
        let value: (method: String, stamp: String?)
        switch submission {
        case .failure(let error): return .failure(error)
        case .success(let s): value = s
        }
        guard value.method == "hashcash" else { return .failure(.permissionMethodUnsupported) }
        guard let stamp = value.stamp else { return .failure(.permissionInvalid("missing 'stamp'")) }
        if let problem = Hashcash.problem(
            stamp: stamp, requiredBits: bits, resource: resource, now: now, maximumAge: maximumAge)
        {
            return .failure(.permissionInvalid(problem))
        }
        guard usedStamps[stamp] == nil else { return .failure(.permissionReused) }
        usedStamps[stamp] = Hashcash.expiry(of: stamp, maximumAge: maximumAge) ?? now + maximumAge
        connections[id]?.permissionGranted = true
        return .success(())
    }
}
