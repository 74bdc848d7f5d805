import CLISupport
import ClientCore
import Foundation

/// After a space is created on a device that is not signed in: once, a line toward signing in
/// with an address and adding a way back in, so an owner's spaces survive a lost device. Never
/// after a join, never twice, never in `--json` output, and never fails the command.
func nudgeTowardSigningIn(json: Bool) {
    guard !json, (try? homeSync().takeAnchorNudge()) == true else { return }
    Terminal.err(
        "Keep this space safe: save it to Eleven with `eleven signin --server URL --email ADDRESS`, "
            + "and add a way back in with `eleven recovery add`. (Shown once.)")
}

/// After a space is created or joined on a signed-in device whose account has no way back in:
/// once, a line offering a recovery file, so the spaces survive losing every device. One line on
/// stderr, never a question (no speed bump), never in `--json` output, never fails the command.
func offerWayBackIn(json: Bool) {
    guard !json, (try? homeSync().takeWayBackOffer()) == true else { return }
    Terminal.err(
        "Keep this space safe if you lose every device: `eleven recovery add --file PATH` saves a "
            + "recovery file (or use a hardware token with --security-key). (Shown once.)")
}
