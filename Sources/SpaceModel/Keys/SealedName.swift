import CSodium
import PAKE

/// A member's display name as the roster carries it: sealed under a key every member holds, so
/// the space server stores and serves only ciphertext (DESIGN.md promise 10).
///
/// The key is derived from the key of a thread, named by `thread`: the space's names thread,
/// which every member is given (attendants wrap it to joiners like every shared thread, and a
/// link carries it, a direct conversation's included). The box is signed as part of its
/// membership event (the event signs these bytes, not the name), so a server cannot move a
/// name from one event to another, and it is bound to its space, thread and member id.
public struct SealedName: Hashable, Sendable {
    /// The largest box: a nonce, the longest name and a tag.
    public static var maximumBoxByteCount: Int { SecretBox.overhead + MemberRecord.maximumNameByteCount }

    /// The thread whose key (through ``nameKey(_:)``) seals the name.
    public let thread: ThreadID
    /// `nonce ‖ ciphertext ‖ tag` (``SecretBox``).
    public let box: [UInt8]

    /// Adopts received parts, checking only their size (opening needs the key).
    public init(thread: ThreadID, box: [UInt8]) throws(KeyModelError) {
        guard box.count >= SecretBox.overhead, box.count <= Self.maximumBoxByteCount else {
            throw KeyModelError(
                .invalidLength, "A sealed name has \(box.count) bytes, which no name seals to.")
        }
        self.thread = thread
        self.box = box
    }

    /// Seals `name` for `member` of `space` under the key of `thread`.
    public static func seal(
        _ name: String, key: ThreadKey, space: SpaceID, thread: ThreadID, member: MemberID
    ) -> SealedName {
        let box = SecretBox.seal(
            Array(name.utf8), key: nameKey(key),
            ad: associatedData(space: space, thread: thread, member: member))
        // A name within the limit seals within the limit.
        return SealedName(trusted: thread, box: box)
    }

    private init(trusted thread: ThreadID, box: [UInt8]) {
        self.thread = thread
        self.box = box
    }

    /// The name, when `key` (the key of ``thread``) opens the box for `member` of `space`; nil
    /// when it does not (another key, another member's box, anything changed).
    public func open(key: ThreadKey, space: SpaceID, member: MemberID) -> String? {
        guard
            let plain = SecretBox.open(
                box, key: Self.nameKey(key),
                ad: Self.associatedData(space: space, thread: thread, member: member))
        else { return nil }
        return String(validating: plain, as: UTF8.self)
    }

    /// A key for names only, apart from the thread's message key.
    static func nameKey(_ key: ThreadKey) -> SecretBytes {
        Sodium.ensureInitialized()
        let domain = Array(Domain.memberNameKey.utf8)
        return SecretBytes(count: 32) { out in
            key.secret.withUnsafeBytes { k in
                _ = crypto_generichash(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), 32, domain, UInt64(domain.count),
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
            }
        }
    }

    static func associatedData(space: SpaceID, thread: ThreadID, member: MemberID) -> [UInt8] {
        var encoder = CanonicalEncoder(domain: Domain.memberName)
        encoder.append(space.bytes)
        encoder.append(thread.bytes)
        encoder.append(member.bytes)
        return encoder.bytes
    }
}

extension SealedName: Codable {
    private enum CodingKeys: String, CodingKey { case thread, box }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let thread = try c.decode(ThreadID.self, forKey: .thread)
        self = try c.decodeChecked(forKey: .box) { b throws(KeyModelError) in
            try SealedName(thread: thread, box: b)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(thread, forKey: .thread)
        try c.encodeBytes(box, forKey: .box)
    }
}
