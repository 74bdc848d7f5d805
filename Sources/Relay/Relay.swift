/// The Magic Wormhole mailbox protocol v1 (`wormhole-protocol.md` §2–§11): pure rules, storage
/// back-ends, and the seam the network glue plugs into.
///
/// Layers, inside out:
///
/// - The messages are the `Mailbox` module's, one definition shared with the clients:
///   `ClientMessage` (decoded here into a `ClientFrame`, whose field problems carry the
///   deployed server's error strings, `RelayError`), `ServerMessage` (encoded here), their
///   identifiers, and the strict JSON reader/writer that keeps member order and number text
///   (so `orig`, `id` and `pong` echo exactly).
/// - `Rules/`: ``RelayCore``, the state machine. ``RelayEvent`` in (connection opened, frame
///   received, connection closed, tick), ``RelayOutput`` out: ``StorageOp`` writes to commit
///   first, then ``RelayAction``s (send a frame, close a connection). Clock and randomness are
///   injected; no I/O.
/// - `Storage/`: ``RelayStorage`` and its back-ends, ``SQLiteRelayStorage`` (one WAL file,
///   versioned schema, group commit on its own queue), ``PostgresRelayStorage`` (libpq, a
///   bounded pool, versioned migrations, pipelined group commit; any number of nodes serve
///   from one database at once, following each other through a change feed, with nameplates
///   created by the database: `docs/multi-node.md`) and ``InMemoryRelayStorage``.
/// - `Service/`: ``RelayService`` owns a core and a storage and enforces "commit before the
///   reply that depends on it" while keeping each connection's frames in order; a frame waits
///   only for the writes it reveals, so one slow commit does not stall unrelated clients.
///   ``MetricsExposition`` renders the counters for `/metrics`.
/// - `Transit/`: the transit relay beside the mailbox (`--transit-listen`): ``TransitRules``,
///   the reference transit relay's handshake, pairing and limits as a pure state machine, and
///   ``TransitServer``, the glue that forwards joined connections' bytes blind.
///
/// ## The seam for the WebSocket glue
///
/// The glue (the `Net` server in `eleven-relay`) does only this:
///
/// 1. At start: `let storage = try SQLiteRelayStorage(path: dbPath)`, then
///    `let relay = try RelayService(config: config, storage: storage, sink: glue)`.
/// 2. Serve the WebSocket at `/v1` (and `GET /` → `Wormhole Relay\n`). For each connection
///    pick a unique ``ConnectionID``, and call
///    - `relay.connectionOpened(id:remote:)` when the handshake completes (the relay sends the
///      welcome; `remote` is the client's ``ClientAddress`` after trusted-proxy headers),
///    - `relay.received(text:from:)` for each text frame (`received(bytes:from:)` for binary
///      frames; the reference accepts those too),
///    - `relay.connectionClosed(id:)` when the connection ends, whoever closed it.
/// 3. Implement ``RelayConnectionSink``: `send(text:to:)` writes one text frame,
///    `close(_:)` closes after pending frames, `storageFailed(_:)` and `storageRecovered()`
///    report an outage (the service answers with errors meanwhile and reloads by itself). The
///    sink is called from the caller's thread or the storage thread, in order; hop to the
///    connection's loop and never block.
/// 4. Call `relay.tick()` every `config.expiry.checkIntervalSeconds`.
/// 5. WebSocket ping/pong keep-alives, frame-size caps (at least
///    `config.limits.maximumMessageBytes`), TLS, `/metrics` (serve
///    `MetricsExposition.render(metrics: relay.metrics, gauges: relay.gauges,
///    storage: storage.statistics)`) and `/healthz` belong to the glue.
/// 6. On SIGTERM: stop accepting, close connections, then `relay.shutdown()`.
///
/// ## Eleven's extension: quiet acks
///
/// Protocol v1 answers every typed command with an `ack` before processing it. A `bind` that
/// carries `"x-eleven-acks": false` (`ClientMessage.acksKey`) asks this relay to send none on
/// that connection, the `bind`'s own included; every other reply (`allocated`, `claimed`,
/// `released`, `message`, `closed`, `pong`, `error`) is sent as before. Only `false` counts,
/// and only on the connection's first `bind` that is not refused as "already bound"; a key on
/// any other command is ignored. The core then emits ``RelayAction/answered(_:)`` where the
/// ack would have gone (the glue's reply-latency histogram counts it; nothing is sent).
/// Eleven's clients (`RendezvousConnection`: the joiner and the bot) send the key: they never
/// wait for an ack, since what they need confirmed has its own reply (`claimed`, `released`,
/// the echo of an `add` they wait for, `closed`). The reference server ignores keys it
/// does not know, so the same `bind` works there and gets its acks; stock clients never send
/// the key and get every ack here. It cut the frames the relay sends per join from 46 to 26.5.
///
/// ## Eleven's extension: quiet echoes
///
/// Protocol v1 sends each `add` to every connection subscribed to the mailbox, the sender's
/// included. An `add` that carries `"x-eleven-echo": false` (`ClientMessage.echoKey`) asks this
/// relay not to send that message back to the connection that added it; every other subscriber
/// gets it, and an `open` replays it as any other stored message. Only `false` counts, only on
/// an `add`. Eleven's clients send it on the messages of a join that the peer answers (the
/// joiner's, the attendant's confirmation and nonce): the answer is their receipt, and until an
/// `open` replays them they are sent again after a reconnect. What they must see stored without
/// an answer (an attendant's first message, a status, the grant, an abort) keeps its echo. The
/// reference server ignores the key and echoes.
///
/// Blocking calls (`SQLiteRelayStorage.init`, `load`, `checkpoint`, `shutdown`) wait for the
/// storage's own queue: make them at start-up and shut-down, never on a loop thread. Per-event
/// calls never block on SQLite.
public enum RelayModule {}
