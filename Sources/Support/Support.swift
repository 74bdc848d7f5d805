/// # Support: small mechanisms shared by the other modules
///
/// - ``Locked``: a value behind a lock (the one lock type; why not `Mutex` is in its comment).
/// - ``BatchQueue``: group handling of work that goes one batch at a time (group commit).
/// - ``Handoff``: a value handed from one thread to a blocking waiter, with a time limit.
/// - ``Backoff``: the delay between retries, grown after each failure, reset by a success.
/// - ``WallClock``: where the time comes from (``SystemClock``; ``ManualClock`` for tests that
///   move it): time is an input to the pure machines, handed to whatever drives them.
/// - ``WormholeLimits``: the message size the relay and the clients agree on.
/// - ``BrokenPipes``: SIGPIPE ignored once for the process (writes to closed pipes are EPIPE).
/// - ``Subprocess``: a child program started with `posix_spawn` (why not Foundation's `Process`
///   is in its comment), stopped and collected by its process id.
public enum SupportModule {}
