import JoinProtocol
import PAKE
import SpaceModel
import Testing

/// Approving a device through the home server (``DeviceApproval``) when the home server is the
/// attacker: it carries every message, so it may swap the new device's keys, run an exchange of
/// its own with each side, or change the reveal. Each attack makes the two devices show
/// different words (the person says no), or fails outright; the server opens nothing.
@Suite struct DeviceApprovalTests {
    /// The new device's keys and both exchanges, relayed honestly.
    struct Honest {
        let device = DeviceIdentity.generate()
        let newSide = DeviceApproval()
        let approver = DeviceApproval()
    }

    static func words(_ agreement: DeviceApproval.Agreement) -> String {
        VerificationWords.words(for: agreement.verifier).joined(separator: " ")
    }

    @Test func anHonestRelayGivesBothSidesTheSameWordsAndAGrantOnlyTheyOpen() throws {
        let h = Honest()
        let mine = try h.newSide.agreeAsNewDevice(device: h.device.publicKeys, offer: h.approver.publicKey)
        let theirs = try h.approver.agreeAsApprover(
            device: h.device.publicKeys, commitment: h.newSide.commitment, reveal: h.newSide.publicKey,
            nonce: h.newSide.nonce)
        #expect(Self.words(mine) == Self.words(theirs))
        let grant = Array(#"{"accountKey":"secret-account-key"}"#.utf8)
        let sealed = theirs.seal(grant, "grant")
        #expect(try mine.open(sealed, "grant") == grant)
        #expect(!String(decoding: sealed, as: UTF8.self).contains("secret-account-key"))
        // A grant is not a label: the purposes do not open each other's boxes.
        #expect(throws: KeyModelError.self) { try mine.open(sealed, "label") }
        // The server holds every public value; an exchange of its own with them opens nothing.
        let server = DeviceApproval()
        let guess = try server.agreeAsNewDevice(device: h.device.publicKeys, offer: h.approver.publicKey)
        #expect(throws: KeyModelError.self) { try guess.open(sealed, "grant") }
    }

    /// The server lists its own device keys instead of the new device's (so the vault key would be
    /// wrapped to it): the approver's words cover the keys it sees, and differ.
    @Test func substitutedDeviceKeysChangeTheWords() throws {
        let h = Honest()
        let forged = DeviceIdentity.generate()
        let mine = try h.newSide.agreeAsNewDevice(device: h.device.publicKeys, offer: h.approver.publicKey)
        let theirs = try h.approver.agreeAsApprover(
            device: forged.publicKeys, commitment: h.newSide.commitment, reveal: h.newSide.publicKey,
            nonce: h.newSide.nonce)
        print("keys swapped: new device shows \(Self.words(mine)), approver shows \(Self.words(theirs))")
        #expect(Self.words(mine) != Self.words(theirs))
    }

    /// The server runs an exchange with each side (a man in the middle): it must commit to the
    /// key it shows the approver before it sees the approver's offer, and it offers the new device
    /// a key before that device reveals; its words on the two sides agree only by chance (2^-33).
    /// Over many runs no pair agrees.
    @Test func aManInTheMiddleShowsDifferentWordsOnTheTwoSides() throws {
        var agreed = 0
        for _ in 0..<200 {
            let h = Honest()
            let towardApprover = DeviceApproval()
            let towardNewDevice = DeviceApproval()
            let approverSide = try h.approver.agreeAsApprover(
                device: h.device.publicKeys, commitment: towardApprover.commitment,
                reveal: towardApprover.publicKey, nonce: towardApprover.nonce)
            let newSide = try h.newSide.agreeAsNewDevice(
                device: h.device.publicKeys, offer: towardNewDevice.publicKey)
            if Self.words(approverSide) == Self.words(newSide) { agreed += 1 }
        }
        #expect(agreed == 0)
    }

    /// A reveal other than the committed one (the server swapping the new device's ephemeral key
    /// after seeing the offer) is refused before any words are shown.
    @Test func aRevealThatIsNotTheCommittedOneIsRefused() throws {
        let h = Honest()
        let other = DeviceApproval()
        #expect(throws: KeyModelError.self) {
            try h.approver.agreeAsApprover(
                device: h.device.publicKeys, commitment: h.newSide.commitment, reveal: other.publicKey,
                nonce: h.newSide.nonce)
        }
        #expect(throws: KeyModelError.self) {
            try h.approver.agreeAsApprover(
                device: h.device.publicKeys, commitment: h.newSide.commitment, reveal: h.newSide.publicKey,
                nonce: other.nonce)
        }
    }

    /// Received points are validated: a small-order point (whose shared secret everyone knows)
    /// is refused on both sides.
    @Test func smallOrderPointsAreRefused() throws {
        let h = Honest()
        let zero = [UInt8](repeating: 0, count: 32)
        #expect(throws: KeyModelError.self) {
            try h.newSide.agreeAsNewDevice(device: h.device.publicKeys, offer: zero)
        }
        let commitment = DeviceApproval.commitment(ephemeral: zero, nonce: h.newSide.nonce)
        #expect(throws: KeyModelError.self) {
            try h.approver.agreeAsApprover(
                device: h.device.publicKeys, commitment: commitment, reveal: zero, nonce: h.newSide.nonce)
        }
    }
}
