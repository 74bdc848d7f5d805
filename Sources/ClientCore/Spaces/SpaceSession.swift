import Foundation
import SpaceModel

/// A thread as this device sees it.
public struct SpaceThread: Sendable, Equatable {
    public let id: ThreadID
    /// The thread's name, decrypted; nil when this device holds no key for the thread.
    public let name: String?
    public let createdBy: MemberID
    public let createdAt: Int64
    /// What its creator sealed, when this device holds the key and it opened.
    public var metadata: ThreadMetadata? = nil
    /// Whether this device can read and write the thread.
    public var isReadable: Bool { name != nil }
}

/// A message decrypted and verified on this device.
public struct ReadMessage: Sendable, Equatable {
    public let cursor: Int64
    public let id: MessageID
    public let author: MemberID
    /// The author's name in the verified roster (may be empty).
    public let authorName: String
    public let text: String
}

/// The space operations of one device in one saved space: everything the client verifies
/// (rosters from the owner's key, wrap and message signatures) happens here, so the CLI, the bot
/// and tests share it. Blocking, like ``SpaceClient``.
public struct SpaceSession: Sendable {
    /// The thread every new space starts with.
    public static let defaultThreadName = "general"

    public let saved: SavedSpace
    public let identity: DeviceIdentity
    public let client: SpaceClient
    /// Where this device remembers the chains it verified, so each call checks only the events
    /// after them (``verifiedChain(revealing:)``); nil: the whole chain each time.
    public var chains: VerifiedChainStore?

    public init(saved: SavedSpace, identity: DeviceIdentity) throws(SpaceClientError) {
        self.saved = saved
        self.identity = identity
        client = try saved.client()
    }

    /// Creates a space on `server` owned by `identity`, with a first thread named
    /// ``defaultThreadName``. Returns what to save. `sealed`: the server is not told the space's
    /// name (its public card shows none); members learn it from whoever lets them in, and links
    /// carry it sealed under their branding key.
    public static func createSpace(
        name: String, server: String, identity: DeviceIdentity, ownerName: String = "",
        deviceLabel: String? = nil, sealed: Bool = false
    ) throws(SpaceClientError) -> SavedSpace {
        let anonymous = try SpaceClient(server: server)
        let space = SpaceID.random()
        let owner = MemberID.random()
        // The names thread's key seals the owner's name in the very first event; the thread
        // itself is made once the space exists.
        let names = (thread: ThreadID.random(), key: ThreadKey.random())
        let genesis = identity.createSpace(
            space, as: owner,
            ownerSealedName: SealedName.seal(
                ownerName, key: names.key, space: space, thread: names.thread, member: owner))
        let created = try anonymous.createSpace(
            name: sealed ? "" : name, genesis: genesis, deviceLabel: deviceLabel)
        let saved = SavedSpace(
            space: created.space, name: name, server: anonymous.server, member: created.owner,
            ownerSigningKey: identity.publicKeys.signing.description, deviceToken: created.deviceToken.token,
            adminToken: created.adminToken)
        let session = try SpaceSession(saved: saved, identity: identity)
        _ = try session.startThreads(names: names)
        return saved
    }

    /// A new space's first threads: the default thread, then the names thread (made in that
    /// order, so the default is the oldest thread that holds messages). Returns the default one.
    func startThreads(names: (thread: ThreadID, key: ThreadKey)) throws(SpaceClientError) -> ThreadID {
        let roster = try roster()
        let first = try createThread(named: Self.defaultThreadName, roster: roster).thread
        _ = try createThread(named: "", roster: roster, purpose: .names, preset: names)
        return first
    }

    /// Opens a space this device was added to (by public key): signs in with the device key and
    /// learns the owner's key (trusted from now on, and checked against the member list).
    public static func join(
        server: String, space: SpaceID, member: MemberID, identity: DeviceIdentity, deviceLabel: String? = nil
    ) throws(SpaceClientError) -> SavedSpace {
        var client = try SpaceClient(server: server)
        let token = try client.signIn(space, as: member, identity: identity, label: deviceLabel)
        client.token = token.token
        let info = try client.spaceInfo(space)
        let saved = SavedSpace(
            space: space, name: info.name, server: client.server, member: member,
            ownerSigningKey: info.ownerSigningKey, deviceToken: token.token)
        let ownerKey: SigningPublicKey
        do throws(LocalStateError) {
            ownerKey = try saved.ownerKey()
        } catch {
            throw SpaceClientError(.invalidResponse, code: "invalid_response", message: error.message)
        }
        let roster = try client.roster(space, ownerKey: ownerKey)
        guard roster.members[member]?.keys == identity.publicKeys else {
            throw SpaceClientError(
                .verification, code: "not_member",
                message: "The member list of that space does not list this device as \(member).")
        }
        return saved
    }

    // MARK: Members

    /// The membership chain, verified from the saved owner key.
    public func roster() throws(SpaceClientError) -> Roster {
        try verifiedChain().roster
    }

    /// `events` verified from the saved owner key.
    /// `revealing`: open the sealed names with this device's keys (fetched for it); a caller that
    /// fetches the keys anyway passes false and reveals with them (``revealNames(in:threadKeys:)``).
    func verifiedRoster(_ events: [MembershipEvent], revealing: Bool = true) throws(SpaceClientError)
        -> Roster
    {
        let ownerKey = try ownerKey()
        var roster = try checkedChain { () throws(KeyModelError) in
            try Roster.verify(events: events, ownerKey: ownerKey)
        }
        if revealing { revealNames(in: &roster) }
        return roster
    }

    /// The saved owner key.
    func ownerKey() throws(SpaceClientError) -> SigningPublicKey {
        do throws(LocalStateError) {
            return try saved.ownerKey()
        } catch {
            throw SpaceClientError(.verification, code: error.code.rawValue, message: error.message)
        }
    }

    /// `body`'s verification of the server's member list, its failure said as one.
    func checkedChain<T>(_ body: () throws(KeyModelError) -> T) throws(SpaceClientError) -> T {
        do throws(KeyModelError) {
            return try body()
        } catch {
            throw SpaceClientError(
                .verification, code: error.code.rawValue,
                message: "The member list from \(client.server) does not check out: \(error.message)")
        }
    }

    /// Adds a member by public keys, then wraps the key of every thread of the whole space this
    /// device holds to them so they can read the history (never a direct conversation). Returns the new record. `invite`: the inviter's signed record,
    /// carried in the event when this device attends for someone else (the space's bot).
    public func addMember(
        keys: MemberPublicKeys, name: String, rights: MemberRights = [], invite: SignedInvite? = nil
    ) throws(SpaceClientError) -> MemberRecord {
        var roster = try roster()
        if let existing = roster.members.values.first(where: { $0.keys == keys }) {
            throw SpaceClientError(
                .rejected, code: "already_member",
                message: "That key already belongs to \(Self.label(existing)) in \(saved.name).")
        }
        let record = try sealedRecord(keys: keys, rights: rights, name: name, roster: roster)
        let event = try signed { () throws(KeyModelError) in
            try roster.nextEvent(.memberAdded(record), signedBy: identity, invite: invite)
        }
        _ = try client.addMember(saved.space, event: event)
        try signed { () throws(KeyModelError) in try roster.apply(event) }
        try wrapThreadKeys(to: record, roster: roster, sharedOnly: true)
        return record
    }

    /// Removes a current member. Threads created from now on are not wrapped to them, and the
    /// server revokes their tokens.
    public func removeMember(_ member: MemberID) throws(SpaceClientError) {
        let roster = try roster()
        let event = try signed { () throws(KeyModelError) in
            try roster.nextEvent(.memberRemoved(member), signedBy: identity)
        }
        _ = try client.removeMember(saved.space, member, event: event)
    }

    /// Finds a current member by id or by name (case-insensitive).
    public static func findMember(_ text: String, in roster: Roster) -> MemberRecord? {
        if let id = try? MemberID(base64URL: text), let record = roster.members[id] { return record }
        let matches = roster.members.values.filter { $0.name.caseInsensitiveCompare(text) == .orderedSame }
        return matches.count == 1 ? matches.first : nil
    }

    // MARK: Threads

    /// The thread keys wrapped to this device, each wrap verified against `roster`.
    /// `only`: open just the wraps of these threads (each open verifies a signature and opens
    /// a sealed box; the names need one thread's key, not every thread's), and the bundles
    /// that hold any of them.
    public func threadKeys(roster: Roster, only: Set<ThreadID>? = nil) throws(SpaceClientError)
        -> [ThreadID: ThreadKey]
    {
        let list = try client.wraps(saved.space)
        var keys: [ThreadID: ThreadKey] = [:]
        for wrap in list.wraps
        where wrap.recipient == saved.member && only.map({ $0.contains(wrap.thread) }) ?? true {
            if let key = try? wrap.open(with: identity, verifyingAgainst: roster) { keys[wrap.thread] = key }
        }
        // A bundle opens whole (one signature covers every thread in it) or not at all.
        for bundle in list.bundles ?? []
        where bundle.recipient == saved.member && only.map({ !$0.isDisjoint(with: bundle.threads) }) ?? true {
            guard let opened = try? bundle.open(with: identity, verifyingAgainst: roster) else { continue }
            for (thread, key) in opened where only.map({ $0.contains(thread) }) ?? true { keys[thread] = key }
        }
        return keys
    }

    /// Every thread of the space that holds messages (not the names thread), with names where
    /// this device holds the key.
    public func threads(roster: Roster, keys: [ThreadID: ThreadKey]) throws(SpaceClientError) -> [SpaceThread]
    {
        try client.threads(saved.space).compactMap { info in
            var name: String?
            var opened: ThreadMetadata?
            if let key = keys[info.id], let metadata = info.metadata {
                opened = ThreadMetadata.open(metadata, key: key, roster: roster)
                name = opened?.name ?? info.id.base64URL
            }
            if opened?.purpose == .names { return nil }
            return SpaceThread(
                id: info.id, name: name, createdBy: info.createdBy, createdAt: info.createdAt,
                metadata: opened)
        }
    }

    /// Creates a thread named `name` for the whole space, wrapped to every current member (and
    /// handed to whoever joins later).
    public func createThread(named name: String) throws(SpaceClientError) -> ThreadID {
        try createThread(named: name, roster: try roster()).thread
    }

    /// Makes a thread for the whole space with a new key wrapped to every current member of
    /// `roster`; `continues` names the thread it takes over from (``ThreadMetadata/continues``);
    /// `purpose` and `preset` (its id and key, when chosen beforehand) make the names thread.
    /// `members`: instead, a thread for these current members only (``ThreadMetadata/Audience/members``).
    func createThread(
        named name: String, roster: Roster, continues: ThreadID? = nil,
        purpose: ThreadMetadata.Purpose? = nil,
        preset: (thread: ThreadID, key: ThreadKey)? = nil, members: Set<MemberID>? = nil
    )
        throws(SpaceClientError) -> (thread: ThreadID, key: ThreadKey)
    {
        let thread = preset?.thread ?? ThreadID.random()
        let key = preset?.key ?? ThreadKey.random()
        let recipients = roster.members.values.filter { members?.contains($0.id) ?? true }
        let wraps = recipients.sorted { $0.id < $1.id }.map { member in
            identity.wrap(key, for: member, in: saved.space, thread: thread)
        }
        let metadata = ThreadMetadata(
            name: name, audience: members == nil ? .space : .members, continues: continues,
            keyMadeAt: roster.nextSequence, purpose: purpose, members: members.map { $0.sorted() }
        ).sealed(by: identity, key: key, space: saved.space, thread: thread, author: saved.member)
        try client.createThread(saved.space, thread: thread, wraps: wraps, metadata: metadata)
        return (thread, key)
    }

    /// What sending and reading start from: the verified roster, this device's thread keys, and
    /// the thread named `text` (the default thread when nil).
    public func open(thread text: String?) throws(SpaceClientError)
        -> (roster: Roster, keys: [ThreadID: ThreadKey], thread: SpaceThread)
    {
        // One request for the keys, which open the names too.
        var roster = try verifiedChain(revealing: false).roster
        let keys = try threadKeys(roster: roster)
        revealNames(in: &roster, threadKeys: keys)
        return (roster, keys, try resolveThread(text, roster: roster, keys: keys))
    }

    /// Picks a thread by name or id; the default thread when `text` is nil.
    public func resolveThread(_ text: String?, roster: Roster, keys: [ThreadID: ThreadKey])
        throws(SpaceClientError) -> SpaceThread
    {
        let all = try threads(roster: roster, keys: keys)
        let wanted = text ?? Self.defaultThreadName
        if let id = try? ThreadID(base64URL: wanted), let thread = all.first(where: { $0.id == id }) {
            return Self.latest(try readable(thread), in: all)
        }
        let named = all.filter { $0.name?.caseInsensitiveCompare(wanted) == .orderedSame }
        if let thread = named.first { return Self.latest(thread, in: all) }
        if text == nil, let first = all.sorted(by: { $0.createdAt < $1.createdAt }).first(where: \.isReadable)
        {
            return Self.latest(first, in: all)
        }
        throw SpaceClientError(
            .rejected, code: "unknown_thread",
            message: "There is no thread \"\(wanted)\" in \(saved.name) that this device can read. "
                + "Run `eleven threads` to see them.")
    }

    private func readable(_ thread: SpaceThread) throws(SpaceClientError) -> SpaceThread {
        guard thread.isReadable else {
            throw SpaceClientError(
                .refused, code: "no_thread_key",
                message: "This device has not been given the key to that thread, so it cannot read it.")
        }
        return thread
    }

    // MARK: Messages

    /// Encrypts, signs and posts `text` to `thread`.
    @discardableResult
    public func send(_ text: String, to thread: ThreadID, keys: [ThreadID: ThreadKey])
        throws(SpaceClientError)
        -> Int64
    {
        guard let key = keys[thread] else {
            throw SpaceClientError(
                .refused, code: "no_thread_key",
                message: "This device has not been given the key to that thread, so it cannot write to it.")
        }
        let message = identity.encrypt(
            Array(text.utf8), with: key, in: saved.space, thread: thread, as: saved.member)
        return try client.post(message)
    }

    /// Messages after `since`, verified and decrypted, and the cursor to continue from. Messages
    /// that fail verification are left out and counted in `rejected`.
    public func read(
        _ thread: ThreadID, since: Int64 = 0, wait: Int = 0, roster: Roster, keys: [ThreadID: ThreadKey]
    ) throws(SpaceClientError) -> (messages: [ReadMessage], next: Int64, rejected: Int) {
        guard let key = keys[thread] else {
            throw SpaceClientError(
                .refused, code: "no_thread_key",
                message: "This device has not been given the key to that thread, so it cannot read it.")
        }
        var messages: [ReadMessage] = []
        var rejected = 0
        var cursor = since
        var currentWait = wait
        while true {
            let page = try client.messages(saved.space, thread: thread, since: cursor, wait: currentWait)
            for entry in page.messages {
                guard entry.message.thread == thread,
                    let plain = try? entry.message.decrypt(with: key, verifyingAgainst: roster)
                else {
                    rejected += 1
                    continue
                }
                let author = roster.everMember(entry.message.author)
                messages.append(
                    ReadMessage(
                        cursor: entry.cursor, id: entry.message.id, author: entry.message.author,
                        authorName: author?.name ?? "", text: String(decoding: plain, as: UTF8.self)))
            }
            guard page.next > cursor else { break }
            cursor = page.next
            currentWait = 0
            if page.messages.count < 500 { break }
        }
        return (messages, cursor, rejected)
    }

    // MARK: Helpers

    static func label(_ member: MemberRecord) -> String {
        member.name.isEmpty ? "member \(member.id)" : member.name
    }

    func signed<T>(_ body: () throws(KeyModelError) -> T) throws(SpaceClientError) -> T {
        do {
            return try body()
        } catch {
            throw SpaceClientError(.verification, code: error.code.rawValue, message: error.message)
        }
    }
}
