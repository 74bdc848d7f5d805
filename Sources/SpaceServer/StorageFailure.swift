import CSQLite

extension SQLiteError {
    /// The database cannot be written (disk full, file too large, read-only, I/O error), as
    /// opposed to a defect in a request or a damaged file: the caller stays up and retries.
    public var isStorageFailure: Bool {
        [SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_BUSY, SQLITE_LOCKED]
            .contains(code & 0xff)
    }

    /// 503 with a stable code: `storage_full` when SQLite says the disk is full, else
    /// `storage_unavailable`.
    var storageAPIError: APIError {
        code & 0xff == SQLITE_FULL
            ? APIError(
                503, "storage_full",
                "The server's disk is full, so nothing was changed; try again later.")
            : APIError(
                503, "storage_unavailable",
                "The server cannot write its database right now (\(description)); nothing was changed. "
                    + "Try again later.")
    }
}
