import Foundation
import SQLite
import Support

/// The last write the database refused (disk full, read-only, I/O error), kept until a write
/// succeeds again, for `/healthz`.
struct StorageFailureRecord {
    let error: SQLiteError
    /// Unix time of the first failure in this run of failures.
    let since: Int64
}

/// What `/healthz` answers.
struct HealthBody: Encodable {
    let ok: Bool
    let error: String?
    let message: String?
    /// Unix time since when writes fail.
    let failingSince: Int64?

    enum CodingKeys: String, CodingKey {
        case ok, error, message
        case failingSince = "failing_since"
    }
}

extension SpaceService {
    /// Notes `error` when it is the disk failing (full, read-only, I/O), else nothing.
    func noteIfStorageFailure(_ error: any Error) {
        if let error = error as? SQLiteError, error.isStorageFailure { noteStorageFailure(error) }
    }

    /// Notes a storage failure of a request (the first one of a run keeps its time).
    func noteStorageFailure(_ error: SQLiteError) {
        storageFailure = StorageFailureRecord(error: error, since: storageFailure?.since ?? clock.seconds())
    }

    /// `/healthz`: a real read of the database every time; while the last write failed, a real
    /// write too and room on the disk (``SQLiteDatabase/probeWrite()``), so the answer turns
    /// healthy by itself once the disk takes writes again. 200 `{"ok":true}`, else 503 with
    /// `storage_full` or `storage_unavailable` and since when writes fail.
    func health() -> APIResponse {
        do {
            try store.db.readFileHeader()
            _ = try store.schemaVersion()
            if storageFailure != nil {
                try store.db.probeWrite()
                storageFailure = nil
            }
            return .json(HealthBody(ok: true, error: nil, message: nil, failingSince: nil))
        } catch let error as SQLiteError where error.isStorageFailure {
            noteStorageFailure(error)
        } catch {
            return .json(
                HealthBody(
                    ok: false, error: "internal", message: "The database cannot be read: \(error)",
                    failingSince: nil), status: 503)
        }
        let failure = storageFailure
        let api = failure?.error.storageAPIError
        return .json(
            HealthBody(ok: false, error: api?.code, message: api?.message, failingSince: failure?.since),
            status: 503)
    }
}

extension SpaceAPI {
    /// `/healthz` (see ``SpaceService/health()``). Blocking: run it off the loop threads.
    public func health() -> APIResponse {
        state.withLock { $0.service.health() }
    }
}
