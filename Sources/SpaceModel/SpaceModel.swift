/// # SpaceModel: what a space is made of, with no I/O
///
/// - `Keys/`: device identities, public keys, identifiers, thread keys, key wraps, sealed boxes,
///   encrypted messages, inbox notes, membership events, the roster and its checkpoints.
/// - `Invites/`: full-length invite links and their secrets (`LinkSecret`, `InvitePayload`,
///   Base58), and the short-code form of a link.
/// - `Home/`: the home account's key types (account key, vault key, key anchors, home proofs).
/// - `Wire/`: the JSON shapes of the space, home and key-invite APIs, shared by the clients in
///   `ClientCore` and the server in `SpaceServer`.
public enum SpaceModelModule {}
