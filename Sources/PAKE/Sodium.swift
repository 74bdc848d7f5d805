import CSodium

/// The one-time `sodium_init()` guard.
///
/// libsodium must be initialised once per process before most of its functions are used;
/// `sodium_init` is itself idempotent and thread-safe, but calling it on every operation costs a
/// lock. Every PAKE entry point calls ``ensureInitialized()``, which runs `sodium_init` exactly
/// once (Swift initialises globals lazily and atomically) and is a cheap load afterwards.
/// Other modules that call libsodium directly should call it too.
public enum Sodium {
    /// Runs `sodium_init()` the first time it is called; later calls only check the result.
    /// Stops the process if libsodium cannot initialise (no usable entropy source): nothing
    /// secret can be done safely after that.
    @inline(__always)
    public static func ensureInitialized() {
        precondition(sodiumInitialized, "libsodium could not initialise (sodium_init failed)")
    }
}

private let sodiumInitialized: Bool = sodium_init() >= 0
