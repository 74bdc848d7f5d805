import ClientCore
import SpaceModel

/// The owner of a new space on `url`, posting to its first thread and keeping the texts the
/// server acknowledged (the storage-fault tests compare them with what is read back).
final class PostingOwner {
    let session: SpaceSession
    let opened: (roster: Roster, keys: [ThreadID: ThreadKey], thread: SpaceThread)
    private(set) var acknowledged: [String] = []

    init(server url: String) throws {
        let identity = DeviceIdentity.generate()
        let saved = try SpaceSession.createSpace(
            name: "Family", server: url, identity: identity, ownerName: "Paul")
        session = try SpaceSession(saved: saved, identity: identity)
        opened = try session.open(thread: nil)
    }

    /// Posts `text`; nil when the server acknowledged it, else the error.
    func post(_ text: String) -> SpaceClientError? {
        do {
            _ = try session.send(text, to: opened.thread.id, keys: opened.keys)
            acknowledged.append(text)
            return nil
        } catch {
            return error
        }
    }

    /// The texts the thread holds now.
    func stored() throws -> [String] {
        try session.read(opened.thread.id, roster: opened.roster, keys: opened.keys).messages.map(\.text)
    }
}
