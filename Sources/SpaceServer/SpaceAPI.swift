import CSodium
import Foundation
import Net
import PAKE
import SQLite
import SpaceModel
import Support

/// Limits and policy of a space server.
public struct SpaceServerConfiguration: Sendable {
    /// Largest request body accepted, in bytes.
    public var maximumBodyBytes = 1 << 20
    /// Largest avatar image, in bytes.
    public var maximumAvatarBytes = 256 * 1024
    /// Largest message ciphertext, in bytes.
    public var maximumMessageBytes = 64 * 1024
    /// Largest opaque thread metadata blob, in bytes.
    public var maximumThreadMetadataBytes = 4096
    /// Most key wraps in one request.
    public var maximumWrapsPerRequest = 1000
    /// Most membership events in one request (members added together).
    public var maximumEventsPerRequest = 100
    /// Whether `POST …/members` stores the wrap bundles sent with its events. Off, the server
    /// ignores them as a server from before did (for tests of the clients that fall back).
    public var storesBundlesWithMembers = true
    /// Whether `POST …/members` checks the `threadCount` sent with its events (the thread list
    /// the sender chose the keys from). Off, the server ignores it as a server from before did
    /// (for tests of the clients that then read the list themselves).
    public var checksThreadCount = true
    /// Most inbox notes in one request (an attendant's notes to inviters sent together).
    public var maximumNotesPerRequest = 100
    /// Longest space name and token label, in UTF-8 bytes.
    public var maximumNameBytes = 128
    /// Default and largest page size of list endpoints.
    public var defaultPageSize = 100
    public var maximumPageSize = 500
    /// Lifetime of a device token unless the request asks for less, and the longest allowed.
    public var defaultTokenLifetime: Int64 = 365 * 24 * 3600
    public var maximumTokenLifetime: Int64 = 5 * 365 * 24 * 3600
    /// Lifetime of a sign-in challenge. The server keeps none until it is used, so their
    /// number needs no limit; used ones are a member's signed sign-ins.
    public var challengeLifetime: Int64 = 300
    /// The join relay this server advertises (`GET /api/relay`): its members' short codes use
    /// it, and a joiner who opens a word link naming this server learns it. Nil: none (404).
    public var relayURL: String?
    /// When set, creating a space needs `Authorization: Bearer <this>`; when nil anyone may.
    public var spaceCreationToken: String?
    /// Serve the home API (`/api/home/...`: accounts, vaults, key anchors).
    public var homeEnabled = false
    /// Mail sign-in codes for the email identity anchor (home only); nil: no email sign-in.
    public var homeMail: HomeMailConfiguration?
    /// Whether every commit is synced to the disk before it is answered (SQLite
    /// `synchronous=FULL`: survives power loss). Off (`NORMAL`), a commit survives a crash of the
    /// process but the last ones may be lost with the machine's power.
    public var syncEveryCommit = true

    public init() {}
}

/// A change that a request committed, reported so the HTTP layer can wake long-polls and
/// WebSocket subscribers without polling the database.
public enum SpaceChange: Sendable, Hashable {
    /// A message was appended to a thread.
    case message(space: SpaceID, thread: ThreadID, cursor: Int64)
    /// A membership event was stored (a space created, a member added or removed).
    case membership(space: SpaceID, sequence: UInt64)
    /// Key wraps for a thread were stored.
    case wraps(space: SpaceID, thread: ThreadID)
    /// A note was delivered to a member's inbox.
    case note(space: SpaceID, recipient: MemberID, id: Int64)
}

/// The space server's request handling: JSON in, JSON out, authorisation on every call, each
/// request's writes in one SQLite transaction (a refused request changes nothing).
///
/// Safe to call from several threads: every request runs under one lock, in order.
public final class SpaceAPI: @unchecked Sendable {
    /// The service, and how many batches it handled (for tests): touched only under this lock.
    let state: Locked<(service: SpaceService, batches: Int)>
    private let observer: (@Sendable (SpaceChange) -> Void)?

    /// Opens (or creates) the database at `databasePath`. `clock` gives the time of every
    /// request (injected so tests can move it). `observer` hears about every committed change,
    /// after the commit and outside the lock.
    public init(
        databasePath: String, configuration: SpaceServerConfiguration = SpaceServerConfiguration(),
        clock: any WallClock = SystemClock(),
        observer: (@Sendable (SpaceChange) -> Void)? = nil
    ) throws {
        Sodium.ensureInitialized()
        let store = try SpaceStore(path: databasePath, syncEveryCommit: configuration.syncEveryCommit)
        let service = SpaceService(
            store: store, configuration: configuration, clock: clock,
            challengeKey: try store.secret("sign_in_challenge", makingIfMissing: SpaceService.randomBytes(32))
        )
        if configuration.homeEnabled {
            service.homePepper = try HomePepper.load(besides: databasePath)
            service.homeMailer = configuration.homeMail.map(HomeMailer.init)
        }
        state = Locked((service, 0))
        self.observer = observer
    }

    /// Handles one request. Never throws: every failure is a 4xx/5xx response with
    /// `{ "error": code, "message": text }`.
    ///
    /// Requests that arrive while a batch is being committed wait, and are then handled together
    /// in one transaction (``SpaceService/handle(batch:)``); every one is answered only after the
    /// commit that made it durable, and as soon as that commit is done (not after later
    /// batches). With no batch running, this caller handles its own batch on its own thread.
    public func handle(_ request: APIRequest) -> APIResponse {
        let answer = Locked<APIResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        let leads = enqueue(request) { response in
            answer.withLock { $0 = response }
            done.signal()
        }
        if leads { lead(oneBatch: true) }
        done.wait()
        return answer.withLock { $0 }!
    }

    /// Handles one request like ``handle(_:)`` without blocking the caller (an event loop):
    /// `answer` runs on the thread that committed the request's batch. The batches run on a
    /// thread of their own, one after another, which answers every request of a batch itself:
    /// no thread waits per request (before, each request held a pool thread that the batch's
    /// leader woke to answer it: the pool threads' work outside the batches was 13.6% of the
    /// space server's CPU, now 3.6%; docs/bot.md, session 14).
    public func handle(_ request: APIRequest, answer: @escaping @Sendable (APIResponse) -> Void) {
        if enqueue(request, answer) {
            Self.leaders.submit { [self] in lead(oneBatch: false) }
        }
    }

    /// Threads that run batches for ``handle(_:answer:)``, shared by every API of the process.
    /// They never wait for anything but SQLite, so two are enough for any number of APIs (each
    /// has at most one batch running).
    private static let leaders = BlockingPool(threads: 2)

    /// A request waiting for a batch, and who hears its answer.
    private struct Waiting {
        let request: APIRequest
        let answer: @Sendable (APIResponse) -> Void
    }

    /// The requests waiting for a batch, and whether a batch is being handled.
    private struct Queue {
        var waiting: [Waiting] = []
        var leading = false
    }

    private let queue = Locked(Queue())

    /// Queues `request`; true when no batch is running, so the caller must run it (``lead``).
    private func enqueue(_ request: APIRequest, _ answer: @escaping @Sendable (APIResponse) -> Void) -> Bool {
        queue.withLock { queue in
            queue.waiting.append(Waiting(request: request, answer: answer))
            if queue.leading { return false }
            queue.leading = true
            return true
        }
    }

    /// Handles the waiting requests in batches until none wait. A caller of ``handle(_:)``
    /// handles one batch on its own thread and leaves any further ones to ``leaders``, so it
    /// returns with its answer.
    private func lead(oneBatch: Bool) {
        while true {
            let batch = queue.withLock { queue -> [Waiting] in
                if queue.waiting.isEmpty {
                    queue.leading = false
                    return []
                }
                var taken: [Waiting] = []
                swap(&taken, &queue.waiting)
                return taken
            }
            if batch.isEmpty { return }
            var changes: [SpaceChange] = []
            let responses = state.withLock { state in
                state.batches += 1
                let responses = state.service.handle(batch: batch.map { $0.request })
                changes = state.service.takeCommittedChanges()
                return responses
            }
            precondition(responses.count == batch.count, "one answer per request")
            for (waiting, response) in zip(batch, responses) { waiting.answer(response) }
            // After every answer of the batch went out.
            if let observer {
                for change in changes { observer(change) }
            }
            if oneBatch {
                let more = queue.withLock { queue in
                    if queue.waiting.isEmpty { queue.leading = false }
                    return queue.leading
                }
                if more { Self.leaders.submit { [self] in lead(oneBatch: false) } }
                return
            }
        }
    }

    /// Batches handled so far, for tests.
    var batchCount: Int { state.withLock { $0.batches } }

    /// Every row of every table, for diagnostics and for tests that check what the server stores.
    public func dumpTables() throws -> [String: [[SQLValue]]] {
        try state.withLock { try $0.service.store.dump() }
    }

    /// The schema version of the open database.
    public func schemaVersion() throws -> Int {
        try state.withLock { try $0.service.store.schemaVersion() }
    }
}

/// Who is making a request.
enum Principal {
    /// The holder of the space's admin token (an operator; not a member, holds no keys).
    case admin
    /// A member acting through one of their device tokens.
    case member(MemberRecord, tokenID: [UInt8])

    var member: MemberRecord? {
        if case .member(let record, _) = self { return record }
        return nil
    }
}

/// The state behind ``SpaceAPI``'s lock: the store and each space's verified roster.
final class SpaceService {
    let store: SpaceStore
    let configuration: SpaceServerConfiguration
    let clock: any WallClock
    /// Verified rosters, loaded on first use, with the events of the batch in progress applied
    /// in place (``applyEvent(_:space:)``); `rosterLog` takes them back if it rolls back.
    private var rosters: [SpaceID: Roster] = [:]
    /// How to take back what the batch in progress did to `rosters`, oldest first.
    private var rosterLog: [RosterChange] = []
    /// Changes made by the request in progress; reported if it commits.
    var pendingChanges: [SpaceChange] = []
    private var committedChanges: [SpaceChange] = []
    /// The current request's time.
    private(set) var now: Int64 = 0
    /// The last storage failure, until a write succeeds again (for `/healthz`).
    var storageFailure: StorageFailureRecord?
    /// The email identity anchor (home only): the blind index's pepper, the mailer, and the
    /// codes in flight (memory only).
    var homePepper: SecretBytes?
    var homeMailer: HomeMailer?
    var emailCodes = EmailCodes()
    /// The key of sign-in challenges' tags (``SignInChallenge``).
    let challengeKey: SecretBytes
    /// When used sign-in challenges are next cleared (at most once per challenge lifetime, so
    /// a sign-in rarely writes the page they leave from).
    var nextUsedChallengeCleanup: Int64 = 0
    /// Used challenges that expired before this were cleared, so no challenge that old is
    /// accepted even when the clock goes back (it would look unexpired and unused again). It
    /// starts at the time this server started: every clearing before a restart happened earlier,
    /// so a challenge it cleared expired before then (only a clock set back before the restart
    /// itself escapes this; docs/bot.md, "Session 10").
    var usedChallengesClearedBefore: Int64
    /// New devices waiting for an enrolled device's approval (memory only, short-lived).
    var homeApprovals: [String: PendingApproval] = [:]

    init(
        store: SpaceStore, configuration: SpaceServerConfiguration, clock: any WallClock,
        challengeKey: SecretBytes
    ) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.challengeKey = challengeKey
        usedChallengesClearedBefore = clock.seconds()
    }

    func handle(_ request: APIRequest) -> APIResponse {
        handle(batch: [request])[0]
    }

    /// Handles `requests` in order in one transaction, each in a savepoint of its own (a refused
    /// request leaves nothing behind), and commits once: one sync of the database file makes
    /// the whole batch durable (group commit). No answer counts before that commit: if it fails,
    /// every answer that reported success becomes the storage error, and nothing is reported.
    func handle(batch requests: [APIRequest]) -> [APIResponse] {
        rosterLog = []
        pendingChanges = []
        defer {
            rosterLog = []
            pendingChanges = []
        }
        let changesBefore = store.db.totalChanges
        do {
            try store.db.run("BEGIN IMMEDIATE")
        } catch {
            noteIfStorageFailure(error)
            return requests.map { _ in Self.response(for: error) }
        }
        var broken = false
        var responses: [APIResponse] = []
        for request in requests {
            responses.append(
                broken ? Self.response(for: BatchAborted()) : handleInBatch(request, broken: &broken))
        }
        do {
            if broken { throw BatchAborted() }
            let writes = store.db.totalChanges != changesBefore
            // While writes fail, a small write may still fit in room the WAL already has on a
            // full disk: it commits only once the disk has room again, so the server stays
            // failed (and says so) until it takes writes again.
            if writes, storageFailure != nil { try store.db.requireRoom() }
            try store.db.run("COMMIT")
            rosterLog = []
            committedChanges = pendingChanges
            // A write reached the disk: it takes writes again.
            if writes { storageFailure = nil }
            return responses
        } catch {
            noteIfStorageFailure(error)
            try? store.db.run("ROLLBACK")
            rollBackRosters(to: 0)
            let failure = Self.response(for: error)
            return responses.map { $0.status < 400 ? failure : $0 }
        }
    }

    /// One request of a batch, in a savepoint. Sets `broken` when its changes could not be undone
    /// (then the whole batch must roll back).
    private func handleInBatch(_ request: APIRequest, broken: inout Bool) -> APIResponse {
        now = clock.seconds()
        guard request.body.count <= configuration.maximumBodyBytes else {
            return APIError(
                413, .bodyTooLarge,
                "The request body is larger than \(configuration.maximumBodyBytes) bytes."
            ).response
        }
        let (rostersBefore, changesBefore) = (rosterLog.count, pendingChanges)
        do {
            try store.db.run("SAVEPOINT request")
        } catch {
            noteIfStorageFailure(error)
            return Self.response(for: error)
        }
        do {
            let response = try route(request)
            // A response that is an error must leave nothing behind.
            if response.status >= 400 { throw RolledBack(response: response) }
            try store.db.run("RELEASE request")
            return response
        } catch {
            do {
                try store.db.run("ROLLBACK TO request")
                try store.db.run("RELEASE request")
            } catch {
                broken = true
            }
            rollBackRosters(to: rostersBefore)
            pendingChanges = changesBefore
            noteIfStorageFailure(error)
            return Self.response(for: error)
        }
    }

    /// The answer for a request that failed with `error` (nothing of it was kept).
    private static func response(for error: any Error) -> APIResponse {
        switch error {
        case let rolledBack as RolledBack: rolledBack.response
        case let error as APIError: error.response
        case let error as KeyModelError: apiError(error).response
        case let error as SQLiteError where error.isStorageFailure: error.storageAPIError.response
        default:
            APIError(500, .internal, "The server failed to handle this request; nothing was changed.")
                .response
        }
    }

    /// A batch whose transaction could not be kept.
    private struct BatchAborted: Error {}

    /// The changes of the last committed request (once).
    func takeCommittedChanges() -> [SpaceChange] {
        defer { committedChanges = [] }
        return committedChanges
    }

    private struct RolledBack: Error {
        let response: APIResponse
    }

    // MARK: Shared helpers

    /// Maps a key-model failure to an API error with the same code.
    static func apiError(_ error: KeyModelError) -> APIError {
        let status: Int
        switch error.code {
        case .invalidLength, .invalidEncoding, .invalidPublicKey, .unsupportedVersion, .invalidEvent,
            .wrongContext:
            status = 400
        case .notAuthorised, .signerNotMember: status = 403
        case .eventOutOfOrder, .eventChainBroken: status = 409
        case .badSignature, .wrongRecipient, .decryptionFailed, .ownerKeyMismatch: status = 422
        }
        return APIError(status, reporting: error.code.rawValue, error.message)
    }

    /// Runs a key-model check, turning its error into an API error.
    @discardableResult
    func check<T>(_ body: () throws(KeyModelError) -> T) throws(APIError) -> T {
        do {
            return try body()
        } catch {
            throw Self.apiError(error)
        }
    }

    /// Decodes a JSON body, describing what is wrong and where.
    func decode<T: Decodable>(_ type: T.Type, from request: APIRequest) throws(APIError) -> T {
        guard !request.body.isEmpty else {
            throw APIError.badRequest(.invalidJson, "This request needs a JSON body.")
        }
        do {
            return try WireJSON.decode(type, from: request.body)
        } catch let error as DecodingError {
            throw Self.describe(error)
        } catch {
            throw APIError.badRequest(.invalidJson, "The request body is not valid JSON.")
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }.joined()
            .trimmingCharacters(in: CharacterSet(charactersIn: "."))
    }

    private static func describe(_ error: DecodingError) -> APIError {
        switch error {
        case .typeMismatch(_, let context) where context.codingPath.isEmpty:
            return .badRequest(.invalidJson, "The request body should be a JSON object.")
        case .typeMismatch(let type, let context):
            return .badRequest(
                .invalidField, "Field \(path(context.codingPath)) should be \(describe(type)).")
        case .valueNotFound(_, let context):
            return .badRequest(.invalidField, "Field \(path(context.codingPath)) must not be null.")
        case .keyNotFound(let key, let context):
            return .badRequest(
                .missingField, "Field \(path(context.codingPath + [key])) is missing.")
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return .badRequest(.invalidJson, "The request body is not valid JSON.")
            }
            return .badRequest(
                .invalidField, "Field \(path(context.codingPath)): \(context.debugDescription).")
        @unknown default:
            return .badRequest(.invalidJson, "The request body could not be read.")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is UInt64.Type: "an integer"
        case is [Any].Type: "an array"
        default: "an object"
        }
    }

    /// A non-negative integer query parameter.
    func integerQuery(_ request: APIRequest, _ name: String, default value: Int64) throws(APIError) -> Int64 {
        guard let text = request.query[name] else { return value }
        guard let number = Int64(text), number >= 0 else {
            throw APIError.badRequest(
                .invalidQuery, "Query parameter \(name) must be a non-negative integer.")
        }
        return number
    }

    /// The `limit` query parameter within the configured page size.
    func pageSize(_ request: APIRequest) throws(APIError) -> Int {
        let limit = try integerQuery(request, "limit", default: Int64(configuration.defaultPageSize))
        guard limit >= 1, limit <= configuration.maximumPageSize else {
            throw APIError.badRequest(
                .invalidQuery,
                "Query parameter limit must be between 1 and \(configuration.maximumPageSize).")
        }
        return Int(limit)
    }

    /// Checks a short human text (space name, label): length and no control characters.
    func checkName(_ text: String, field: String, allowEmpty: Bool) throws(APIError) {
        if !allowEmpty && text.trimmingCharacters(in: .whitespaces).isEmpty {
            throw APIError.badRequest(.invalidField, "Field \(field) must not be empty.")
        }
        guard text.utf8.count <= configuration.maximumNameBytes else {
            throw APIError.badRequest(
                .invalidField, "Field \(field) is longer than \(configuration.maximumNameBytes) bytes.")
        }
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw APIError.badRequest(.invalidField, "Field \(field) must not contain control characters.")
        }
    }

    /// Decodes a base64url field value.
    func bytes(_ text: String, field: String) throws(APIError) -> [UInt8] {
        guard let bytes = Base64URL.decode(text) else {
            throw APIError.badRequest(.invalidField, "Field \(field) is not valid base64url.")
        }
        return bytes
    }

    // MARK: Spaces, rosters, tokens

    /// The space named in the path, or 404.
    func existingSpace(_ text: Substring) throws -> SpaceRow {
        guard let id = try? SpaceID(base64URL: String(text)), let space = try store.space(id) else {
            throw APIError.notFound(.unknownSpace, "There is no space with that id on this server.")
        }
        return space
    }

    /// The verified roster of a space (including changes made earlier in this request).
    func roster(_ space: SpaceID) throws -> Roster {
        if let roster = rosters[space] { return roster }
        let decoder = JSONDecoder()
        var roster: Roster?
        var from: UInt64 = 0
        while true {
            let page = try store.events(space: space, from: from, limit: 1000)
            for text in page {
                let event = try decoder.decode(MembershipEvent.self, from: Data(text.utf8))
                if roster == nil {
                    roster = try Roster(genesis: event)
                } else {
                    try roster!.apply(event)
                }
            }
            if page.count < 1000 { break }
            from += UInt64(page.count)
        }
        guard let roster else { throw APIError(500, .internal, "This space has no stored events.") }
        rosters[space] = roster
        return roster
    }

    /// A change the batch in progress made to `rosters`.
    private enum RosterChange {
        case created(SpaceID)
        case applied(SpaceID, Roster.Undo)
    }

    /// Keeps the roster of a space the request just created (taken back if it rolls back).
    func addRoster(_ roster: Roster) {
        rosters[roster.space] = roster
        rosterLog.append(.created(roster.space))
    }

    /// Checks `event` against the space's roster and applies it in place (taken back if the
    /// request rolls back). Returns whether the event's signer was a current member before
    /// and is not after (a link's signer retired by its last use).
    func applyEvent(_ event: MembershipEvent, space: SpaceID) throws -> (head: EventHash, retiredSigner: Bool)
    {
        _ = try roster(space)
        // Taken out while it changes, so the dictionary's is the only reference and nothing is
        // copied.
        var roster = rosters.removeValue(forKey: space)!
        defer { rosters[space] = roster }
        let wasMember = roster.members[event.signer] != nil
        let undo = try check { () throws(KeyModelError) in try roster.applyUndoably(event) }
        rosterLog.append(.applied(space, undo))
        return (roster.head, wasMember && roster.members[event.signer] == nil)
    }

    /// Takes back the roster changes after the first `count`, newest first.
    private func rollBackRosters(to count: Int) {
        while rosterLog.count > count {
            switch rosterLog.removeLast() {
            case .created(let space): rosters[space] = nil
            case .applied(let space, let undo): rosters[space]?.undo(undo)
            }
        }
    }

    /// Authenticates the bearer token for `space`.
    func authenticate(_ request: APIRequest, space: SpaceID) throws -> Principal {
        guard let header = request.header("Authorization") else {
            throw APIError.unauthorised(.tokenMissing, "Sign in first: this request needs a token.")
        }
        guard header.hasPrefix("Bearer ") else {
            throw APIError.unauthorised(
                .tokenMissing, "Send the token as \"Authorization: Bearer <token>\".")
        }
        guard let raw = Base64URL.decode(String(header.dropFirst(7))), raw.count == 32 else {
            throw APIError.unauthorised(.tokenInvalid, "That token is not valid for this space.")
        }
        let hash = Self.hashToken(raw)
        if let token = try store.token(hash: hash) {
            guard token.space == space else {
                throw APIError.unauthorised(.tokenInvalid, "That token is not valid for this space.")
            }
            // Removal revokes every token of the member; say why rather than just "revoked".
            guard let member = try store.member(space: space, id: token.member), member.removedSequence == nil
            else {
                throw APIError.unauthorised(
                    .tokenRevoked, "You were removed from this space, so it no longer lets you in.")
            }
            if token.revokedAt != nil {
                throw APIError.unauthorised(.tokenRevoked, "That token was revoked. Sign in again.")
            }
            if now >= token.expiresAt {
                throw APIError.unauthorised(.tokenExpired, "That token has expired. Sign in again.")
            }
            return .member(member.record, tokenID: token.id)
        }
        if try store.space(adminTokenHash: hash) == space {
            return .admin
        }
        throw APIError.unauthorised(.tokenInvalid, "That token is not valid for this space.")
    }

    /// The acting member; the admin token holds no member keys, so it is refused here.
    func requireMember(_ principal: Principal) throws(APIError) -> MemberRecord {
        guard let member = principal.member else {
            throw APIError.forbidden(
                .memberRequired,
                "This request must be made with a member's device token, not the admin token.")
        }
        return member
    }

    static func hashToken(_ raw: [UInt8]) -> [UInt8] { SHA256.hash(raw) }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var random = SystemRandom()
        return random.bytes(count: count)
    }

    /// Issues a device token for `member`; only its hash is stored.
    func issueToken(space: SpaceID, member: MemberID, label: String?, expiresIn: Int64?) throws -> IssuedToken
    {
        let label = label ?? ""
        try checkName(label, field: "label", allowEmpty: true)
        let lifetime = expiresIn ?? configuration.defaultTokenLifetime
        guard lifetime >= 60, lifetime <= configuration.maximumTokenLifetime else {
            throw APIError.badRequest(
                .invalidField,
                "Field expiresIn must be between 60 and \(configuration.maximumTokenLifetime) seconds.")
        }
        var raw = Self.randomBytes(32)
        defer { sodium_memzero(&raw, raw.count) }
        let id = Self.randomBytes(16)
        let expiresAt = now + lifetime
        try store.insertToken(
            id: id, hash: Self.hashToken(raw), space: space, member: member, label: label, now: now,
            expiresAt: expiresAt)
        return IssuedToken(
            token: Base64URL.encode(raw), id: Base64URL.encode(id), member: member, expiresAt: expiresAt)
    }
}
