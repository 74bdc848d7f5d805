import Foundation

/// SIGPIPE ignored for the whole process, once: a write to a closed socket or to the pipe of a
/// child that has exited returns EPIPE, an error the writer handles, instead of ending the
/// process (a test runner was killed that way mid-suite). Every event loop, every `Subprocess`
/// and the demo ask for it; a child gets the default action back (``Subprocess``).
public enum BrokenPipes {
    /// Idempotent.
    public static func ignore() {
        _ = once
    }

    private static let once: Void = {
        signal(SIGPIPE, SIG_IGN)
    }()
}
