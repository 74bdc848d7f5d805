import Foundation

/// This device's thread keys kept opened between calls: each refresh fetches the device's own
/// wraps (one request) and opens only the ones not opened before, instead of verifying and
/// opening every wrap again (what an attendant admitting many joiners needs). A wrap opened
/// earlier counts only while its signer is still a current member of `roster`, as when opened.
public final class ThreadKeyCache: @unchecked Sendable {
    private struct Opened {
        let signer: SigningPublicKey
        let key: ThreadKey
    }

    private let lock = NSLock()
    /// By wrap: thread and signature bytes.
    private var opened: [[UInt8]: Opened] = [:]

    public init() {}

    /// The thread keys this device holds, checked against `roster`.
    public func refresh(_ session: SpaceSession, roster: Roster) throws(SpaceClientError) -> [ThreadID:
        ThreadKey]
    {
        let wraps = try session.client.wraps(session.saved.space)
        lock.lock()
        defer { lock.unlock() }
        var keys: [ThreadID: ThreadKey] = [:]
        var current: [[UInt8]: Opened] = [:]
        for wrap in wraps where wrap.recipient == session.saved.member {
            let id = wrap.thread.bytes + wrap.signature.bytes
            if let known = opened[id], roster.currentMember(signingKey: known.signer) != nil {
                keys[wrap.thread] = known.key
                current[id] = known
            } else if let key = try? wrap.open(with: session.identity, verifyingAgainst: roster) {
                keys[wrap.thread] = key
                current[id] = Opened(signer: wrap.signer, key: key)
            }
        }
        opened = current
        return keys
    }
}
