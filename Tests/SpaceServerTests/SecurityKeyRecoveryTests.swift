import ClientCore
import Foundation
import Net
import PAKE
import SpaceModel
import SpaceServer
import TestSupport
import Testing

/// A hardware token as a way back in, against the real home API on a loopback socket, with a
/// software authenticator in place of the token (``SoftwareAuthenticator``; no test machine has a
/// key; the hardware part of `RecoveryCredentialTests` runs when one is plugged in). The attacker
/// is a finder: someone holding Paul's token and its card (both left in a laptop bag), without
/// the PIN.
@Suite struct SecurityKeyRecoveryTests {
    struct World {
        let root: URL
        let server: SpaceHTTPServer
        let paul: HomeSync
        let spaces: [SavedSpace]

        /// A brand-new device's sync.
        func device(_ name: String) throws -> HomeSync {
            let state = LocalState(directory: StateDirectory(path: root.path + "/" + name))
            _ = try state.identity(create: true)
            return HomeSync(state: state)
        }

        func stop() {
            server.shutdown()
            try? FileManager.default.removeItem(at: root)
        }
    }

    /// A home server, and Paul signed in with three spaces.
    static func world() throws -> World {
        let root = try TestSupport.temporaryDirectory()
        let server = try HomeSyncTests.homeServer(in: root)
        let spaces = ["Family", "Work", "Club"].map {
            SavedSpace(
                space: .random(), name: $0, server: "http://127.0.0.1:1", member: .random(),
                ownerSigningKey: "k", deviceToken: "t-\($0)")
        }
        let state = LocalState(directory: StateDirectory(path: root.path + "/paul"))
        _ = try state.identity(create: true)
        var saved = SavedSpaces()
        for space in spaces { saved.save(space) }
        try state.save(saved)
        let paul = HomeSync(state: state)
        _ = try paul.signIn(server: server.baseURL, label: "laptop")
        return World(root: root, server: server, paul: paul, spaces: spaces)
    }

    /// Paul adds `token` as a way back in (typing `pin`); returns the card a new device needs
    /// besides it.
    static func add(_ token: SoftwareAuthenticator, pin: String, for w: World) throws -> SecurityKeyCard {
        try SecurityKey.checkUsable(token)
        let key = try SecurityKey.makeCredential(device: token, pin: pin)
        let salt = SecretBytes.randomBytes(RecoveryAnchor.byteCount)
        let identity = try RecoveryAnchor.identity(key, salt: salt)
        let anchor = identity.anchor(.recovery).id(accountKey: try w.paul.accountKey())
        try w.paul.addRecovery(identity, label: "hardware token")
        return SecurityKeyCard(
            home: w.server.baseURL, anchor: anchor, salt: salt, credentialID: key.credentialID)
    }

    /// `eleven recover --security-key` on a new device, typing `pin`.
    static func recover(
        _ token: SoftwareAuthenticator, _ card: SecurityKeyCard, pin: String, on device: HomeSync
    )
        throws -> SyncReport
    {
        try SecurityKey.checkUsable(token)
        let key = SecurityKey(device: token, credentialID: card.credentialID, pin: pin)
        return try device.recover(
            home: card.home, anchor: card.anchor,
            identity: try RecoveryAnchor.identity(key, salt: card.saltBytes),
            label: "new laptop")
    }

    static func failure(_ body: () throws -> Void) -> RecoveryError? {
        do {
            try body()
            return nil
        } catch let error as RecoveryError {
            return error
        } catch {
            Issue.record("not a RecoveryError: \(error)")
            return nil
        }
    }

    /// The attack: Paul's laptop bag is found with his token and its card. The finder does not
    /// know the PIN; recovering on a device of the finder's must get no space, whatever it tries.
    @Test func aFinderHoldingTheTokenAndItsCardRecoversNothing() async throws {
        try await TestSupport.offPool {
            let w = try Self.world()
            defer { w.stop() }
            // A token without a PIN is refused as a way back in: whoever found it could use it.
            let token = SoftwareAuthenticator(pin: nil)
            let refused = Self.failure { _ = try Self.add(token, pin: "", for: w) }
            print(
                "adding a token without a PIN: \(refused?.code.rawValue ?? "accepted") \(refused?.message ?? "")"
            )
            #expect(refused?.code == .securityKeyNoPin)
            #expect(refused?.message.contains("has no PIN") == true)
            #expect(try w.paul.recoveryCredentials().isEmpty)
            #expect(token.touches == 0, "the token was used before it was refused")

            // Paul sets a PIN and adds it; the finder has the token and the card.
            token.setPIN("paul-4711")
            let card = try Self.add(token, pin: "paul-4711", for: w)
            let finder = try w.device("finder")
            let none = Self.failure { _ = try Self.recover(token, card, pin: "", on: finder) }
            #expect(none?.code == .securityKeyPinRequired, "\(String(describing: none))")
            // Guessing: each wrong PIN is refused and says plainly how many tries are left,
            // until the token locks itself; then even the right PIN opens nothing.
            var messages: [String] = []
            for guess in 1...SoftwareAuthenticator.maximumRetries {
                let wrong = Self.failure {
                    _ = try Self.recover(token, card, pin: "guess-\(guess)", on: finder)
                }
                messages.append(wrong?.message ?? "accepted")
                let left = SoftwareAuthenticator.maximumRetries - guess
                #expect(
                    wrong?.code
                        == (left == 0 ? RecoveryError.Code.securityKeyPinBlocked : .securityKeyPinWrong))
                if left > 1 {
                    #expect(wrong?.message.contains("allows \(left) more tries") == true, "\(messages)")
                }
                if left == 1 { #expect(wrong?.message.contains("allows 1 more try") == true, "\(messages)") }
            }
            print("the finder's guesses: \(messages.first ?? "") … \(messages.last ?? "")")
            let locked = Self.failure { _ = try Self.recover(token, card, pin: "paul-4711", on: finder) }
            #expect(locked?.code == .securityKeyPinBlocked)
            let got = try finder.state.spaces().spaces.map(\.name)
            print("the finder has \(got)")
            let signedIn = try finder.home() != nil
            #expect(got.isEmpty && !signedIn, "a finder without the PIN recovered \(got)")
        }
    }

    /// Paul, on a new laptop after losing every device: a mistyped PIN first (the token says how
    /// many tries are left), then the right one brings back every space; the count is restored.
    @Test func theRightPINRecoversEverySpace() async throws {
        try await TestSupport.offPool {
            let w = try Self.world()
            defer { w.stop() }
            let token = SoftwareAuthenticator(pin: "paul-4711")
            #expect(
                Self.failure { _ = try Self.add(token, pin: "", for: w) }?.code == .securityKeyPinRequired
            )
            let card = try Self.add(token, pin: "paul-4711", for: w)
            // The card holds nothing secret, and nothing from the PIN.
            let cardText = String(decoding: try JSONEncoder().encode(card), as: UTF8.self)
            #expect(!cardText.contains("4711"))

            let laptop = try w.device("new-laptop")
            let typo = Self.failure { _ = try Self.recover(token, card, pin: "paul-4712", on: laptop) }
            #expect(typo?.code == .securityKeyPinWrong)
            #expect(
                typo?.message
                    == "That PIN is not right. The hardware token allows 7 more tries before it locks itself for good."
            )
            let report = try Self.recover(token, card, pin: "paul-4711", on: laptop)
            #expect(report.spaces == 3)
            #expect(try laptop.state.spaces().spaces.map(\.space) == w.spaces.map(\.space))
            #expect(try token.pinRetries() == SoftwareAuthenticator.maximumRetries)
            // Another token (even with the same PIN) is not the one added.
            let other = SoftwareAuthenticator(pin: "paul-4711")
            let stranger = try w.device("stranger")
            #expect(
                Self.failure { _ = try Self.recover(other, card, pin: "paul-4711", on: stranger) }?.code
                    == .wrongSecurityKey)
        }
    }

    /// A token that says it has a PIN but answers without checking it (faulty or counterfeit:
    /// its answers lack the "user verified" flag), and one without hmac-secret, are refused.
    @Test func aTokenThatDoesNotCheckItsPINIsRefused() async throws {
        try await TestSupport.offPool {
            let w = try Self.world()
            defer { w.stop() }
            let lax = SoftwareAuthenticator(pin: "1234", checksPIN: false)
            #expect(
                Self.failure { _ = try Self.add(lax, pin: "0000", for: w) }?.code
                    == .securityKeyNotVerified)
            let old = SoftwareAuthenticator(pin: "1234", hmacSecret: false)
            #expect(
                Self.failure { _ = try Self.add(old, pin: "1234", for: w) }?.code
                    == .securityKeyUnsupported)
            #expect(try w.paul.recoveryCredentials().isEmpty)
        }
    }
}
