import Foundation
import PAKE

/// The names an invite card shows, the invitee's (the name suggested to them) and the inviter's,
/// sealed under the link's wrap key so that only the link's holder reads them: the space server
/// stores and serves the box, never the names (DESIGN.md promise 10).
public struct InviteNames: Codable, Sendable, Equatable {
    public let person: String?
    public let inviter: String?

    public init(person: String?, inviter: String?) {
        self.person = person
        self.inviter = inviter
    }

    /// The box for the invite `id`, under the link's `keys`.
    public func sealed(with keys: LinkKeys) -> [UInt8] {
        let plain = (try? JSONEncoder().encode(self)).map { Array($0) } ?? []
        return SecretBox.seal(plain, key: keys.wrapKey, ad: Self.associatedData(keys.id))
    }

    /// The names in `box`, when it opens with the link's `keys`; nil otherwise.
    public static func open(_ box: [UInt8], with keys: LinkKeys) -> InviteNames? {
        guard let plain = SecretBox.open(box, key: keys.wrapKey, ad: associatedData(keys.id)) else {
            return nil
        }
        return try? JSONDecoder().decode(Self.self, from: Data(plain))
    }

    /// Binds the box to its invite, apart from the payload sealed under the same key.
    static func associatedData(_ id: KeyInviteID) -> [UInt8] {
        var encoder = CanonicalEncoder(domain: "eleven/key-invite-names/v1")
        encoder.append(id.bytes)
        return encoder.bytes
    }
}
