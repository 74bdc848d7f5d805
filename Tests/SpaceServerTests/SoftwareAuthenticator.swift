import CFIDO2
import ClientCore
import Foundation
import PAKE
import Support

/// A FIDO2 authenticator in software, behind the same boundary as a key plugged in
/// (``SecurityKeyDevice``), since no test machine has one. It behaves as a CTAP2 key does where
/// eleven relies on it:
/// - a PIN may be set or not; with one set, making a credential or an assertion without the PIN
///   is refused (`FIDO_ERR_PIN_REQUIRED`), and giving a PIN when none is set is refused
///   (`FIDO_ERR_PIN_NOT_SET`);
/// - a wrong PIN costs one of 8 tries (`FIDO_ERR_PIN_INVALID`); at 0 the key is locked for good
///   (`FIDO_ERR_PIN_BLOCKED`); a right PIN restores the count;
/// - credential ids are stateless, as on most keys: a nonce and a tag under the device secret
///   and relying party, so another key or relying party does not know the credential
///   (`FIDO_ERR_NO_CREDENTIALS`);
/// - `hmac-secret` answers HMAC-SHA256(CredRandom, salt), with CredRandom derived from the device
///   secret, the credential and whether the user was verified (CTAP2 keeps two CredRandoms, so an
///   output made with the PIN differs from one made without it).
/// Outputs report the UV flag as a key's authenticator data does.
final class SoftwareAuthenticator: SecurityKeyDevice, @unchecked Sendable {
    static let maximumRetries = 8

    private struct State {
        var pin: String?
        var retries = SoftwareAuthenticator.maximumRetries
        var touches = 0
    }

    private let secret = SecretBytes.randomBytes(32)
    private let hmacSecret: Bool
    private let checksPIN: Bool
    private let state: Locked<State>

    /// With `checksPIN` false, a faulty or counterfeit key: it says it has a PIN but answers
    /// without checking it (and without the UV flag).
    init(pin: String?, hmacSecret: Bool = true, checksPIN: Bool = true) {
        self.hmacSecret = hmacSecret
        self.checksPIN = checksPIN
        state = Locked(State(pin: pin))
    }

    /// The owner sets a PIN (`fido2-token -S`), as a key allows once when none is set.
    func setPIN(_ pin: String) { state.withLock { $0.pin = pin } }

    /// How many times the key was used (each make or assertion is a touch).
    var touches: Int { state.withLock { $0.touches } }

    func supportsHMACSecret() throws -> Bool { hmacSecret }
    func hasPIN() throws -> Bool { state.withLock { $0.pin != nil } }
    func pinRetries() throws -> Int {
        try state.withLock { state in
            guard state.pin != nil else { throw FIDOStatus(FIDO_ERR_PIN_NOT_SET) }
            return state.retries
        }
    }

    /// Checks `pin` as the key's clientPIN does; returns whether the user is verified.
    private func verify(_ pin: String?) throws -> Bool {
        try state.withLock { state in
            state.touches += 1
            guard checksPIN else { return false }
            guard let set = state.pin else {
                if pin != nil { throw FIDOStatus(FIDO_ERR_PIN_NOT_SET) }
                return false
            }
            guard state.retries > 0 else { throw FIDOStatus(FIDO_ERR_PIN_BLOCKED) }
            guard let pin else { throw FIDOStatus(FIDO_ERR_PIN_REQUIRED) }
            // Compared as HMACs of equal length, in constant time.
            let key = Array("pin".utf8)
            guard
                SecretBytes(HMACSHA256.authenticationCode(for: Array(pin.utf8), key: key))
                    == SecretBytes(HMACSHA256.authenticationCode(for: Array(set.utf8), key: key))
            else {
                state.retries -= 1
                throw FIDOStatus(state.retries == 0 ? FIDO_ERR_PIN_BLOCKED : FIDO_ERR_PIN_INVALID)
            }
            state.retries = Self.maximumRetries
            return true
        }
    }

    private func tag(relyingParty: String, nonce: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticationCode(for: Array("id \(relyingParty)".utf8) + nonce, key: secret)
    }

    func makeCredential(relyingParty: String, user: [UInt8], pin: String?) throws -> (
        id: [UInt8], userVerified: Bool
    ) {
        guard hmacSecret else { throw FIDOStatus(FIDO_ERR_UNSUPPORTED_EXTENSION) }
        let verified = try verify(pin)
        let nonce = SecretBytes.randomBytes(16)
        return (nonce + tag(relyingParty: relyingParty, nonce: nonce), verified)
    }

    func hmacSecret(relyingParty: String, credentialID: [UInt8], salt: [UInt8], pin: String?) throws -> (
        output: [UInt8], userVerified: Bool
    ) {
        let verified = try verify(pin)
        let nonce = Array(credentialID.prefix(16))
        guard credentialID.count == 48,
            SecretBytes(Array(credentialID.dropFirst(16)))
                == SecretBytes(tag(relyingParty: relyingParty, nonce: nonce))
        else { throw FIDOStatus(FIDO_ERR_NO_CREDENTIALS) }
        guard salt.count == 32 else { throw FIDOStatus(FIDO_ERR_INVALID_ARGUMENT) }
        let credRandom = HMACSHA256.authenticationCode(
            for: Array("credRandom".utf8) + [verified ? 1 : 0] + credentialID, key: secret)
        return (HMACSHA256.authenticationCode(for: salt, key: credRandom), verified)
    }
}
