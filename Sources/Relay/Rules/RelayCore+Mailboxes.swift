import Mailbox

/// `open`, `add`, `close`: mailboxes, where the two sides' messages wait for each other.
extension RelayCore {
    /// More than two distinct sides on one mailbox is `crowded`.
    func isCrowded(_ key: MailboxKey, adding side: Side) -> Bool {
        guard let mailbox = state.mailboxes[key] else { return false }
        return mailbox.sides[side] == nil && mailbox.sides.count >= 2
    }

    /// How recent a mailbox's recorded activity may be for an `open` of a side it already has to
    /// record none: in a join each side's `open` follows its `claim` by milliseconds, and a
    /// touch of its own is a page write. Expiry counts idle time in hours, so the idle clock
    /// starting up to this much earlier changes nothing anyone sees.
    static let touchResolution = 1.0

    /// Creates the mailbox if needed, attaches `side` (a side that closed stays closed, as in
    /// the reference) and records the activity.
    mutating func openMailboxSide(_ key: MailboxKey, side: Side, forNameplate: Bool, now: RelayInstant) {
        if let mailbox = state.mailboxes[key] {
            let recent = now >= mailbox.updated && now.seconds(since: mailbox.updated) < Self.touchResolution
            if mailbox.sides[side] == nil || !recent {
                write(.touchMailbox(key, updated: now))
            }
        } else {
            write(.putMailbox(key, forNameplate: forNameplate, updated: now))
        }
        if state.mailboxes[key]?.sides[side] == nil {
            write(.putMailboxSide(key, side, MailboxSideRecord(opened: true, added: now)))
        }
    }

    mutating func open(
        _ field: Result<MailboxID, RelayError>, connection id: ConnectionID, app: AppID, side: Side,
        now: RelayInstant
    ) -> Result<Void, RelayError> {
        guard let connection = connections[id] else { return .success(()) }
        guard connection.openMailbox == nil else { return .failure(.onlyOneOpen) }
        let mailbox: MailboxID
        switch field {
        case .failure(let error): return .failure(error)
        case .success(let value): mailbox = value
        }
        connections[id]?.mailboxID = mailbox
        let key = MailboxKey(app: app, id: mailbox)
        noteRead(.mailbox(key))
        if isCrowded(key, adding: side) { return .failure(.crowded) }
        // Clients may open any string as a standalone mailbox.
        openMailboxSide(key, side: side, forNameplate: false, now: now)
        connections[id]?.openMailbox = key
        subscribers[key, default: []].append(id)
        metrics.mailboxesOpened += 1
        // Replay everything stored (both sides', in arrival order), then stream live.
        for message in state.mailboxes[key]?.messages ?? [] {
            send(.message(message), to: id)
        }
        return .success(())
    }

    /// Stores a message and hands it to everyone subscribed to the mailbox, the sender
    /// included unless its `add` asked for no copy back (`echo` false, Eleven's extension,
    /// ``ClientMessage/echoKey``).
    mutating func add(
        _ field: Result<(phase: Phase, body: String), RelayError>, id messageID: JSONValue, echo: Bool = true,
        connection id: ConnectionID,
        app: AppID, side: Side, now: RelayInstant
    ) -> Result<Void, RelayError> {
        guard let key = connections[id]?.openMailbox else { return .failure(.mustOpenBeforeAdding) }
        let request: (phase: Phase, body: String)
        switch field {
        case .failure(let error): return .failure(error)
        case .success(let value): request = value
        }
        noteRead(.mailbox(key))
        guard let mailbox = state.mailboxes[key] else { return .failure(.mailboxGone) }
        let limits = config.limits
        guard mailbox.messages.count < limits.maximumMailboxMessages else {
            return .failure(.mailboxMessageLimit(limits.maximumMailboxMessages))
        }
        let stored = mailbox.messages.reduce(0) { $0 + $1.body.utf8.count }
        guard request.body.utf8.count <= limits.maximumMailboxBytes - stored else {
            return .failure(.mailboxByteLimit(limits.maximumMailboxBytes))
        }
        guard request.body.utf8.count <= limits.maximumStoredBytes - storedBodyBytes else {
            return .failure(.storageFull)
        }
        // `server_rx` formatted once here: the echo, the peer's copy and any replay reuse it.
        let message = StoredMessage(
            side: side, phase: request.phase, body: request.body, serverRX: now, messageID: messageID
        ).formattingServerRX()
        write(.appendMessage(key, message))
        write(.touchMailbox(key, updated: now))
        metrics.messagesAdded += 1
        metrics.messageBodyBytesAdded += request.body.utf8.count
        // Everyone subscribed hears it, the sender included (the echo is its receipt) unless
        // it asked for no echo.
        for listener in subscribers[key] ?? [] where echo || listener != id {
            send(.message(message), to: listener)
        }
        return .success(())
    }

    mutating func close(
        _ field: Result<(mailbox: MailboxID?, mood: String?), RelayError>, connection id: ConnectionID,
        app: AppID, side: Side,
        now: RelayInstant
    ) -> Result<Void, RelayError> {
        guard let connection = connections[id] else { return .success(()) }
        guard !connection.didClose else { return .failure(.onlyOneClose) }
        let request: (mailbox: MailboxID?, mood: String?)
        switch field {
        case .failure(let error): return .failure(error)
        case .success(let value): request = value
        }
        let mailbox: MailboxID
        if let given = request.mailbox {
            if let opened = connection.mailboxID, opened != given { return .failure(.closeMailboxMismatch) }
            mailbox = given
        } else {
            guard let opened = connection.mailboxID else { return .failure(.closeWithoutOpen) }
            mailbox = opened
        }
        let key = MailboxKey(app: app, id: mailbox)
        noteRead(.mailbox(key))
        if connection.openMailbox == nil {
            // A reconnecting client may close without reopening: open implicitly first.
            if isCrowded(key, adding: side) { return .failure(.crowded) }
            if state.mailboxes[key] != nil { openMailboxSide(key, side: side, forNameplate: false, now: now) }
        } else if var listeners = subscribers[key] {
            listeners.removeAll { $0 == id }
            subscribers[key] = listeners.isEmpty ? nil : listeners
        }
        connections[id]?.didClose = true
        connections[id]?.openMailbox = nil
        metrics.countMood(request.mood)
        closeMailboxSide(key, side: side, mood: request.mood, now: now)
        send(.closed, to: id)
        return .success(())
    }

    /// Marks `side` closed; when no side remains open, deletes the mailbox, its messages and
    /// every nameplate pointing at it.
    mutating func closeMailboxSide(_ key: MailboxKey, side: Side, mood: String?, now: RelayInstant) {
        guard let mailbox = state.mailboxes[key], let row = mailbox.sides[side] else { return }
        write(.putMailboxSide(key, side, MailboxSideRecord(opened: false, added: row.added, mood: mood)))
        guard let updated = state.mailboxes[key], !updated.sides.values.contains(where: \.opened) else {
            return
        }
        retireMailbox(key, pruned: false)
    }

    /// Deletes a mailbox with its nameplates and records the usage result.
    mutating func retireMailbox(_ key: MailboxKey, pruned: Bool) {
        guard let mailbox = state.mailboxes[key] else { return }
        for name in (nameplatesByMailbox[key] ?? []).sorted() {
            retireNameplate(NameplateKey(app: key.app, name: name), pruned: pruned)
        }
        metrics.mailboxResults[Self.result(of: mailbox, pruned: pruned), default: 0] += 1
        write(.deleteMailbox(key))
    }

    /// The reference's usage summary: by side count, then moods (lonely < errory < scary),
    /// then pruned, then crowded.
    static func result(of mailbox: MailboxRecord, pruned: Bool) -> String {
        let sides = mailbox.sides.count
        var result = sides == 0 ? "quiet" : sides == 1 ? "lonely" : "happy"
        let moods = Set(mailbox.sides.values.compactMap(\.mood))
        if moods.contains("lonely") { result = "lonely" }
        if moods.contains("errory") { result = "errory" }
        if moods.contains("scary") { result = "scary" }
        if pruned { result = "pruney" }
        if sides > 2 { result = "crowded" }
        return result
    }
}
