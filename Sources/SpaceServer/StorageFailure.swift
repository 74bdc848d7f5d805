import SQLite

extension SQLiteError {
    /// 503 with a stable code: `storage_full` when SQLite says the disk is full, else
    /// `storage_unavailable`.
    var storageAPIError: APIError {
        kind == .diskFull
            ? APIError(
                503, .storageFull,
                "The server's disk is full, so nothing was changed; try again later.")
            : APIError(
                503, .storageUnavailable,
                "The server cannot write its database right now (\(description)); nothing was changed. "
                    + "Try again later.")
    }
}
