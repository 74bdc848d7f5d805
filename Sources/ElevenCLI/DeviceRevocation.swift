import CLISupport
import ClientCore
import Foundation

/// After `eleven device remove`: the removed device holds the member identity of every space this
/// device shares with it, so this device moves the person to a new identity in each one
/// (`docs/key-model.md`) and saves the change, which the vault carries to the remaining devices.
/// Returns the names of the spaces it could not move (the server unreachable, say), where the
/// removed device can still act: the command says so.
func moveSpacesAwayFromRemovedDevice(label: String) -> [String] {
    let state = localState()
    guard let saved = try? state.spaces() else { return [] }
    var unmoved: [String] = []
    for space in saved.spaces {
        do {
            let session = try spaceSession(space, state: state)
            let (moved, identity) = try session.moveToNewIdentity(deviceLabel: label)
            try state.updateSpaces { (spaces) throws(LocalStateError) in
                var updated = moved
                updated.identityKey = try state.identityKey(for: identity)
                spaces.save(updated)
            }
        } catch {
            Terminal.err("\(space.name): \(error)")
            unmoved.append(space.name)
        }
    }
    vaultChanged()
    return unmoved
}
