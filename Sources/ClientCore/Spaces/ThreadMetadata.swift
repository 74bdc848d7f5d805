import Foundation
import SpaceModel
import Support

/// What a thread's creator seals into the thread's metadata (under the thread's key, signed by
/// the creator, so the space server can neither read nor forge it): the thread's name and who it
/// is for.
///
/// An attendant wraps a thread's key to a joiner only when this says the thread is the whole
/// space's (``Audience/space``): a direct conversation or a thread for a set of members stays
/// with them (DESIGN.md promise 10). Metadata in the older form (the bare name) says nothing
/// about its audience, so no joiner is handed that thread.
public struct ThreadMetadata: Codable, Sendable, Equatable {
    /// Who a thread is for.
    public enum Audience: String, Codable, Sendable {
        /// Every member, present and future: a joiner is given the key.
        case space
        /// The members it was wrapped to when made (a direct conversation): nobody else.
        case members
    }

    /// What a thread is for beyond messages.
    public enum Purpose: String, Codable, Sendable {
        /// The space's names thread: its key seals members' names (``SealedName``); it holds no
        /// messages and is not listed.
        case names
    }

    public let name: String
    /// Nil in the older form, which did not say.
    public let audience: Audience?
    /// Nil for a thread of messages.
    public let purpose: Purpose?
    /// For a thread of a set of members (``Audience/members``): who it is for, as member ids
    /// (a link's signer stands for whoever claims the link), so that whoever writes after
    /// someone left can continue it for those who remain. Nil for the space's threads and in
    /// older metadata.
    public let members: [MemberID]?
    /// The thread this one continues with a new key after someone who could read it left
    /// (`docs/key-model.md`); nil for a thread of its own.
    public let continues: ThreadID?
    /// The roster's `nextSequence` when the thread's key was made: whoever left the space at or
    /// after it held the key. Nil in older metadata (every removal counts).
    public let keyMadeAt: UInt64?

    /// The format's mark, so that a message posted in a thread is never read as its metadata.
    private let format: String

    private static let currentFormat = "eleven-thread-1"

    enum CodingKeys: String, CodingKey {
        case name, audience, format, continues, keyMadeAt, purpose, members
    }

    public init(
        name: String, audience: Audience, continues: ThreadID? = nil, keyMadeAt: UInt64? = nil,
        purpose: Purpose? = nil, members: [MemberID]? = nil
    ) {
        self.name = name
        self.audience = audience
        self.purpose = purpose
        self.members = members
        self.continues = continues
        self.keyMadeAt = keyMadeAt
        format = Self.currentFormat
    }

    /// Reads the plaintext sealed in a thread's metadata: this form, or the older bare name.
    public init(plaintext: [UInt8]) {
        if let decoded = try? JSONDecoder().decode(Self.self, from: Data(plaintext)),
            decoded.format == Self.currentFormat
        {
            self = decoded
        } else {
            name = String(decoding: plaintext, as: UTF8.self)
            audience = nil
            purpose = nil
            members = nil
            continues = nil
            keyMadeAt = nil
            format = ""
        }
    }

    /// Whether a joiner of the space is to be given the thread's key.
    public var isShared: Bool { audience == .space }

    /// The plaintext to seal.
    public func plaintext() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { Array($0) } ?? Array(name.utf8)
    }

    /// Seals this metadata for `thread` under `key` as `identity` (member `author`), in the
    /// bytes the space server keeps.
    func sealed(
        by identity: DeviceIdentity, key: ThreadKey, space: SpaceID, thread: ThreadID, author: MemberID
    ) -> [UInt8]? {
        let sealed = identity.encrypt(plaintext(), with: key, in: space, thread: thread, as: author)
        return (try? JSONEncoder().encode(sealed)).map { Array($0) }
    }

    /// Opens a thread's metadata as the space server lists it (base64url), checking the
    /// creator's signature against `roster`; nil if it does not open.
    static func open(_ metadata: String, key: ThreadKey, roster: Roster) -> ThreadMetadata? {
        guard let bytes = Base64URL.decode(metadata),
            let sealed = try? JSONDecoder().decode(EncryptedMessage.self, from: Data(bytes)),
            let plain = try? sealed.decrypt(with: key, verifyingAgainst: roster)
        else { return nil }
        return ThreadMetadata(plaintext: plain)
    }
}

extension SpaceSession {
    /// Of `keys` (this device's thread keys), those a joiner is to be given: threads whose
    /// metadata, sealed by a member, says they are the whole space's. `threads`: the space's
    /// threads as the server lists them (nil when they could not be fetched: then none).
    public static func sharedThreadKeys(
        _ keys: [ThreadID: ThreadKey], threads: [SpaceWire.ThreadInfo]?, roster: Roster
    ) -> [ThreadID: ThreadKey] {
        var shared: [ThreadID: ThreadKey] = [:]
        for info in threads ?? [] {
            guard let key = keys[info.id], let metadata = info.metadata,
                isShared(info.id, metadata, key, roster)
            else { continue }
            shared[info.id] = key
        }
        return shared
    }

    /// Verified audiences by thread and metadata text. A thread's metadata never changes once
    /// its creator sealed it, so an attendant admitting many joiners opens and verifies each
    /// thread's once, not once per joiner (it was a signature check and a decryption per
    /// thread per join). Only metadata that opened is remembered; bounded.
    private static let verifiedAudiences = Locked<[String: ThreadMetadata]>([:])
    static let verifiedAudiencesCapacity = 4096

    private static func isShared(_ thread: ThreadID, _ metadata: String, _ key: ThreadKey, _ roster: Roster)
        -> Bool
    {
        verifiedMetadata(thread, metadata, key, roster)?.isShared ?? false
    }

    /// A thread's metadata opened and verified, once per thread and metadata text.
    static func verifiedMetadata(_ thread: ThreadID, _ metadata: String, _ key: ThreadKey, _ roster: Roster)
        -> ThreadMetadata?
    {
        let cacheKey = thread.base64URL + ":" + metadata
        if let known = verifiedAudiences.withLock({ $0[cacheKey] }) { return known }
        guard let opened = ThreadMetadata.open(metadata, key: key, roster: roster) else { return nil }
        verifiedAudiences.withLock { cache in
            if cache.count >= verifiedAudiencesCapacity { cache.removeAll() }
            cache[cacheKey] = opened
        }
        return opened
    }

    /// The space's names thread as this device holds it: of the threads whose verified metadata
    /// says they are for names, the oldest (then the smallest id), so every member seals under
    /// the same one even when two were made at once, followed to its newest successor (one
    /// continues it after someone who held its key left, as a message thread does). Nil when
    /// there is none (a space from before names were sealed) or this device holds no key to it.
    public static func namesThread(
        _ keys: [ThreadID: ThreadKey], threads: [SpaceWire.ThreadInfo]?, roster: Roster
    ) -> (thread: ThreadID, key: ThreadKey)? {
        namesThreads(keys, threads: threads, roster: roster).last.map { ($0.thread, $0.key) }
    }

    /// Every names thread this device holds, the oldest first and the one to seal under last,
    /// with its metadata: a direct conversation's link carries them all, so its holder reads the
    /// names sealed under earlier ones too.
    static func namesThreads(
        _ keys: [ThreadID: ThreadKey], threads: [SpaceWire.ThreadInfo]?, roster: Roster
    ) -> [(thread: ThreadID, key: ThreadKey, metadata: ThreadMetadata, createdAt: Int64)] {
        let all = (threads ?? []).compactMap {
            info -> (thread: ThreadID, key: ThreadKey, metadata: ThreadMetadata, createdAt: Int64)? in
            guard let key = keys[info.id], let text = info.metadata,
                let metadata = verifiedMetadata(info.id, text, key, roster), metadata.purpose == .names
            else { return nil }
            return (info.id, key, metadata, info.createdAt)
        }.sorted { ($0.createdAt, $0.thread) < ($1.createdAt, $1.thread) }
        guard var current = all.first else { return [] }
        var chain = [current]
        while let next = all.first(where: { $0.metadata.continues == current.thread }),
            !chain.contains(where: { $0.thread == next.thread })
        {
            chain.append(next)
            current = next
        }
        return all.filter { one in !chain.contains { $0.thread == one.thread } } + chain
    }
}
