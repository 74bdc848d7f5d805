/// The size limit the relay and the clients agree on, so a client refuses up front what the
/// relay would refuse, with the same number (Net carries both sides, but this is a protocol
/// limit, not a socket one).
public enum WormholeLimits {
    /// The largest client message `eleven-relay` accepts by default (one WebSocket message:
    /// the mailbox command's JSON). Message bodies travel hex-encoded, so a text of about half
    /// this fits; 1 MiB lets stock clients' ordinary texts (a few hundred KB) through, where the
    /// reference relay has no limit at all.
    public static let maximumMessageBytes = 1 << 20

    /// Bytes of the `add` command around its hex body (`type`, `phase`, `id` and the JSON
    /// punctuation, spaced as the Python client writes it), with room to spare.
    public static let addCommandOverhead = 256

    /// The longest sealed body (nonce, ciphertext, tag) whose `add` fits `maximumMessageBytes`.
    public static let maximumBodyBytes = (maximumMessageBytes - addCommandOverhead) / 2

    /// Largest message a client accepts from the relay: the relay's `message` repeats a body of
    /// up to `maximumMessageBytes` hex characters with its side, phase, id and timestamps.
    public static let maximumRelayMessageBytes = maximumMessageBytes + 64 * 1024
}
