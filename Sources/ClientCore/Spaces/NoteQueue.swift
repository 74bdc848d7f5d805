import Foundation
import SpaceModel
import Support

/// Delivers inbox notes for a sender that sends many at once (the space's bot telling each
/// inviter who joined): whoever sends while a request is on its way waits, and the first of
/// them then sends every waiting note in one request (``SpaceClient/postNotes(_:)``), one
/// request and one commit on the server instead of one per note. A note alone still goes in
/// the one-note form, and so does every note to a server that does not take several.
///
/// Each recipient's inbox holds each note as its own entry, exactly as if sent alone: nothing
/// changes for whoever reads them.
public final class NoteQueue: @unchecked Sendable {
    /// Requests sent, and the notes they carried (for tests and benchmarks).
    public var counts: (requests: Int, notes: Int) { state.withLock { ($0.requests, $0.notes) } }

    public init(maximumBatch: Int = 32) {
        queue = BatchQueue(maximumBatch: maximumBatch)
    }

    /// Delivers `note` with `client` (every caller passes the same client's space and token);
    /// returns its id in the recipient's inbox.
    @discardableResult
    public func post(_ note: InboxNote, client: SpaceClient) throws(SpaceClientError) -> Int64 {
        try queue.submit(note) { batch in send(batch, client: client) }.get()
    }

    // MARK: Internals

    private let queue: BatchQueue<InboxNote, Result<Int64, SpaceClientError>>

    private struct State {
        /// The server refused the batch form (an older one): one note per request from then on.
        var singleOnly = false
        var requests = 0
        var notes = 0
    }

    private let state = Locked(State())

    /// One request for the batch when the server takes it; else one per note.
    func send(_ batch: [InboxNote], client: SpaceClient) -> [Result<Int64, SpaceClientError>] {
        if batch.count > 1 && !state.withLock({ $0.singleOnly }) {
            do throws(SpaceClientError) {
                let ids = try client.postNotes(batch)
                counted(batch.count)
                return ids.map { .success($0) }
            } catch
                where (error.status == 400 && error.typedCode == .missingField)
                || (error.status == 413 && error.typedCode == .tooManyNotes)
            {
                // The server knows only `{"note"}` (an older one), or takes fewer at once:
                // nothing was stored; one at a time from now on.
                state.withLock { $0.singleOnly = true }
            } catch  where error.status.map({ (400..<500).contains($0) }) ?? false {
                // One note refused (its recipient removed meanwhile) refuses them all and stores
                // none: each goes alone, so the others still arrive.
            } catch {
                // Unreachable, or no answer: the server may have stored them; not sent again.
                return batch.map { _ in .failure(error) }
            }
        }
        return batch.map { note in
            Result { () throws(SpaceClientError) in
                let id = try client.postNote(note)
                counted(1)
                return id
            }
        }
    }

    private func counted(_ notes: Int) {
        state.withLock {
            $0.requests += 1
            $0.notes += notes
        }
    }
}
