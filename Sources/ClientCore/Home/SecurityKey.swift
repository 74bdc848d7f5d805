import CFIDO2
import Foundation
import PAKE
import SpaceModel

/// A FIDO2 security key as a recovery credential: a credential made on the key with the CTAP2
/// `hmac-secret` extension answers a 32-byte salt with a 32-byte output only that key can make
/// (after a touch). The credential id, salt, anchor id and home server are not secret; they are
/// kept in a small card file (``SecurityKeyCard``) next to the key, since the key cannot hold
/// the anchor id, which depends on the output.
public struct SecurityKey: RecoverySecret, Sendable {
    /// The relying party every Eleven recovery credential is made for.
    public static let relyingParty = "eleven.recovery"

    /// The key's device path (e.g. /dev/hidraw3).
    public let path: String
    /// The credential id the key made.
    public let credentialID: [UInt8]

    public var kindName: String { "hardware token" }

    public init(path: String, credentialID: [UInt8]) {
        self.path = path
        self.credentialID = credentialID
    }

    // MARK: Pure checks (tested without a key)

    /// Maps a libfido2 status to a clear error (nil for `FIDO_OK`).
    public static func error(fidoStatus status: Int32) -> RecoveryError? {
        switch status {
        case FIDO_OK: return nil
        case FIDO_ERR_NO_CREDENTIALS:
            return RecoveryError(
                "wrong_security_key", "This hardware token is not the one that was added as a way back in.")
        case FIDO_ERR_UNSUPPORTED_EXTENSION:
            return RecoveryError(
                "security_key_unsupported",
                "This hardware token cannot be a way back in (it lacks the hmac-secret extension).")
        case FIDO_ERR_PIN_REQUIRED, FIDO_ERR_PIN_INVALID:
            return RecoveryError(
                "security_key_pin", "This hardware token wants its PIN, which eleven does not ask for yet.")
        case FIDO_ERR_ACTION_TIMEOUT, FIDO_ERR_USER_ACTION_TIMEOUT:
            return RecoveryError(
                "security_key_timeout", "Nobody touched the hardware token in time; try again and touch it.")
        case FIDO_ERR_OPERATION_DENIED:
            return RecoveryError("security_key_denied", "The hardware token refused.")
        case FIDO_ERR_TX, FIDO_ERR_RX, FIDO_ERR_RX_NOT_CBOR, FIDO_ERR_RX_INVALID_CBOR:
            return RecoveryError(
                "security_key_unreachable", "The hardware token stopped answering; plug it in again.")
        default:
            let text = fido_strerr(status).map { String(cString: $0) } ?? "error \(status)"
            return RecoveryError("security_key_error", "The hardware token failed: \(text).")
        }
    }

    /// Throws the clear error for a libfido2 status other than `FIDO_OK`.
    static func check(_ status: Int32) throws(RecoveryError) {
        if let error = error(fidoStatus: status) { throw error }
    }

    /// The salt as the extension wants it: exactly 32 bytes.
    public static func checkSalt(_ salt: [UInt8]) throws(RecoveryError) {
        guard salt.count == RecoveryAnchor.byteCount else {
            throw RecoveryError("invalid_salt", "A recovery salt has 32 bytes, not \(salt.count).")
        }
    }

    /// The extension's output: exactly 32 bytes (one salt), else the key misbehaved.
    public static func checkOutput(_ output: [UInt8]) throws(RecoveryError) -> SecretBytes {
        guard output.count == RecoveryAnchor.byteCount else {
            throw RecoveryError(
                "invalid_output",
                "The hardware token answered with \(output.count) bytes instead of 32; it cannot be used.")
        }
        return SecretBytes(output)
    }

    /// A credential id as the key returned it: 1 to 1,024 bytes.
    public static func checkCredentialID(_ id: [UInt8]) throws(RecoveryError) -> [UInt8] {
        guard (1...1024).contains(id.count) else {
            throw RecoveryError("invalid_credential", "The hardware token returned no usable credential id.")
        }
        return id
    }

    // MARK: Hardware

    /// Paths of the FIDO2 devices plugged in now.
    public static func devicePaths() -> [String] {
        fido_init(0)
        let capacity = 16
        guard let list = fido_dev_info_new(capacity) else { return [] }
        var owned: OpaquePointer? = list
        defer { fido_dev_info_free(&owned, capacity) }
        var found = 0
        guard fido_dev_info_manifest(list, capacity, &found) == FIDO_OK else { return [] }
        return (0..<found).compactMap { index in
            fido_dev_info_ptr(list, index).flatMap { fido_dev_info_path($0) }.map { String(cString: $0) }
        }
    }

    /// The first security key plugged in, or "no security key found".
    public static func firstDevice() throws(RecoveryError) -> String {
        guard let path = devicePaths().first else {
            throw RecoveryError("no_security_key", "No hardware token found. Plug one in and try again.")
        }
        return path
    }

    private static func withDevice<T>(_ path: String, _ body: (OpaquePointer) throws -> T) throws -> T {
        fido_init(0)
        guard let device = fido_dev_new() else {
            throw RecoveryError("security_key_error", "Out of memory.")
        }
        var owned: OpaquePointer? = device
        defer { fido_dev_free(&owned) }
        try check(fido_dev_open(device, path))
        defer { fido_dev_close(device) }
        return try body(device)
    }

    /// Makes a new credential with `hmac-secret` on the key at `path` (the person touches it).
    public static func makeCredential(path: String) throws -> SecurityKey {
        try withDevice(path) { device in
            guard let cred = fido_cred_new() else {
                throw RecoveryError("security_key_error", "Out of memory.")
            }
            var owned: OpaquePointer? = cred
            defer { fido_cred_free(&owned) }
            let challenge = SecretBytes.randomBytes(32)
            let user = SecretBytes.randomBytes(16)
            try check(fido_cred_set_type(cred, COSE_ES256))
            try check(fido_cred_set_clientdata_hash(cred, challenge, challenge.count))
            try check(fido_cred_set_rp(cred, relyingParty, "Eleven recovery"))
            try check(fido_cred_set_user(cred, user, user.count, "eleven", "Eleven", nil))
            try check(fido_cred_set_extensions(cred, FIDO_EXT_HMAC_SECRET))
            try check(fido_dev_make_cred(device, cred, nil))
            let pointer = fido_cred_id_ptr(cred)
            let id =
                pointer.map { Array(UnsafeBufferPointer(start: $0, count: fido_cred_id_len(cred))) } ?? []
            return SecurityKey(path: path, credentialID: try checkCredentialID(id))
        }
    }

    /// The `hmac-secret` output for `salt` (the person touches the key).
    public func output(salt: [UInt8]) throws -> SecretBytes {
        try Self.checkSalt(salt)
        return try Self.withDevice(path) { device in
            guard let assertion = fido_assert_new() else {
                throw RecoveryError("security_key_error", "Out of memory.")
            }
            var owned: OpaquePointer? = assertion
            defer { fido_assert_free(&owned) }
            let challenge = SecretBytes.randomBytes(32)
            try Self.check(fido_assert_set_clientdata_hash(assertion, challenge, challenge.count))
            try Self.check(fido_assert_set_rp(assertion, Self.relyingParty))
            try Self.check(fido_assert_allow_cred(assertion, credentialID, credentialID.count))
            try Self.check(fido_assert_set_extensions(assertion, FIDO_EXT_HMAC_SECRET))
            try Self.check(fido_assert_set_hmac_salt(assertion, salt, salt.count))
            try Self.check(fido_dev_get_assert(device, assertion, nil))
            guard fido_assert_count(assertion) == 1, let pointer = fido_assert_hmac_secret_ptr(assertion, 0)
            else {
                throw RecoveryError("invalid_output", "The hardware token gave no recovery output.")
            }
            return try Self.checkOutput(
                Array(UnsafeBufferPointer(start: pointer, count: fido_assert_hmac_secret_len(assertion, 0))))
        }
    }
}

/// What a brand-new device needs, besides the security key itself, to restore the account: the
/// home server, the anchor id, the salt and the credential id. Nothing in it is secret (without
/// the key it opens nothing); it is written 0600 all the same.
public struct SecurityKeyCard: Codable, Sendable, Equatable {
    public static let format = "eleven-security-key"
    public var format: String
    public var version: Int
    public var home: String
    public var anchor: AnchorID
    public var salt: String
    public var credential: String

    public init(home: String, anchor: AnchorID, salt: [UInt8], credentialID: [UInt8]) {
        format = Self.format
        version = 1
        self.home = home
        self.anchor = anchor
        self.salt = Base64URL.encode(salt)
        credential = Base64URL.encode(credentialID)
    }

    /// Parses a card and checks its fields.
    public init(bytes: [UInt8]) throws(RecoveryError) {
        guard let card = try? JSONDecoder().decode(SecurityKeyCard.self, from: Data(bytes)),
            card.format == Self.format, card.version == 1,
            let salt = Base64URL.decode(card.salt), salt.count == RecoveryAnchor.byteCount,
            let id = Base64URL.decode(card.credential), (1...1024).contains(id.count)
        else {
            throw RecoveryError(
                "invalid_security_key_card",
                "That file is not an Eleven hardware token card (or it is damaged).")
        }
        self = card
    }

    public var saltBytes: [UInt8] { Base64URL.decode(salt) ?? [] }
    public var credentialID: [UInt8] { Base64URL.decode(credential) ?? [] }
}
