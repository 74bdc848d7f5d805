import CFIDO2
import Foundation
import PAKE
import SpaceModel

/// A libfido2 status other than `FIDO_OK`, thrown by a ``SecurityKeyDevice``.
public struct FIDOStatus: Error, Sendable, Equatable {
    public let status: Int32
    public init(_ status: Int32) { self.status = status }
}

/// What eleven asks of a FIDO2 authenticator: the boundary at libfido2. ``FIDO2Device`` is the
/// real one (a key plugged in); tests put a software authenticator here, since no test machine
/// has a key. Failures are thrown as ``FIDOStatus`` so the hardware and the tests share one
/// mapping to clear errors.
public protocol SecurityKeyDevice: Sendable {
    /// The key supports the CTAP2 `hmac-secret` extension.
    func supportsHMACSecret() throws -> Bool
    /// The key has a PIN set (the CTAP2 `clientPin` option is true).
    func hasPIN() throws -> Bool
    /// PIN tries left before the key locks itself.
    func pinRetries() throws -> Int
    /// Makes a credential with `hmac-secret` for `relyingParty` (the person touches the key); with
    /// `pin`, the key checks it first. Returns the credential id and whether the key says it
    /// verified the user (the UV flag of the authenticator data).
    func makeCredential(relyingParty: String, user: [UInt8], pin: String?) throws -> (
        id: [UInt8], userVerified: Bool
    )
    /// The `hmac-secret` output of credential `credentialID` for `salt` (a touch; with `pin`, the
    /// key checks it first), and whether the key says it verified the user.
    func hmacSecret(relyingParty: String, credentialID: [UInt8], salt: [UInt8], pin: String?) throws -> (
        output: [UInt8], userVerified: Bool
    )
}

/// A FIDO2 security key as a recovery credential: a credential made on the key with the CTAP2
/// `hmac-secret` extension answers a 32-byte salt with a 32-byte output only that key can make
/// (after a touch). The credential id, salt, anchor id and home server are not secret; they are
/// kept in a small card file (``SecurityKeyCard``) next to the key, since the key cannot hold
/// the anchor id, which depends on the output.
///
/// A found key must open nothing: only a key with a PIN is used, and every use gives the PIN to
/// the key (user verification), which counts wrong tries and locks itself after its limit. The
/// answer must carry the key's "user verified" flag; CTAP2 keys also derive a different
/// `hmac-secret` output with verification than without, so an output made without the PIN would
/// not open the anchor either.
public struct SecurityKey: RecoverySecret, Sendable, CustomStringConvertible {
    /// The relying party every Eleven recovery credential is made for.
    public static let relyingParty = "eleven.recovery"

    /// The key.
    public let device: any SecurityKeyDevice
    /// The credential id the key made.
    public let credentialID: [UInt8]
    /// The key's PIN, as the person typed it (never printed).
    private let pin: String

    public var kindName: String { "hardware token" }
    public var description: String { "SecurityKey(\(credentialID.count)-byte credential, PIN redacted)" }

    public init(device: any SecurityKeyDevice, credentialID: [UInt8], pin: String) {
        self.device = device
        self.credentialID = credentialID
        self.pin = pin
    }

    /// Makes a new credential with `hmac-secret` on `device`, verified with its `pin` (the person
    /// touches it). Refuses a key without a PIN.
    public static func makeCredential(device: any SecurityKeyDevice, pin: String) throws -> SecurityKey {
        try requirePIN(device, pin)
        let user = SecretBytes.randomBytes(16)
        let made = try fido(device) {
            try device.makeCredential(relyingParty: relyingParty, user: user, pin: pin)
        }
        guard made.userVerified else { throw notVerified }
        return SecurityKey(device: device, credentialID: try checkCredentialID(made.id), pin: pin)
    }

    /// The `hmac-secret` output for `salt`, with the PIN checked by the key (a touch).
    public func output(salt: [UInt8]) throws -> SecretBytes {
        try Self.checkSalt(salt)
        try Self.requirePIN(device, pin)
        let answer = try Self.fido(device) {
            try device.hmacSecret(
                relyingParty: Self.relyingParty, credentialID: credentialID, salt: salt, pin: pin)
        }
        guard answer.userVerified else { throw Self.notVerified }
        return try Self.checkOutput(answer.output)
    }

    /// Refuses a key before its PIN is asked for: one without `hmac-secret`, one without a PIN (a
    /// finder could use it), one already locked.
    public static func checkUsable(_ device: any SecurityKeyDevice) throws {
        guard try fido(device, { try device.supportsHMACSecret() }) else {
            throw error(fidoStatus: FIDO_ERR_UNSUPPORTED_EXTENSION)!
        }
        guard try fido(device, { try device.hasPIN() }) else {
            throw error(fidoStatus: FIDO_ERR_PIN_NOT_SET)!
        }
        guard try fido(device, { try device.pinRetries() }) > 0 else {
            throw error(fidoStatus: FIDO_ERR_PIN_BLOCKED)!
        }
    }

    /// ``checkUsable(_:)``, and a PIN was typed.
    static func requirePIN(_ device: any SecurityKeyDevice, _ pin: String) throws {
        try checkUsable(device)
        guard !pin.isEmpty else { throw error(fidoStatus: FIDO_ERR_PIN_REQUIRED)! }
    }

    static let notVerified = RecoveryError(
        .securityKeyNotVerified,
        "The hardware token did not check its PIN, so it cannot be a way back in.")

    /// Runs `body`, turning a thrown libfido2 status into its clear error; a wrong PIN says how
    /// many tries the key has left.
    static func fido<T>(_ device: any SecurityKeyDevice, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let status as FIDOStatus {
            if status.status == FIDO_ERR_PIN_INVALID, let left = try? device.pinRetries() {
                throw wrongPIN(triesLeft: left)
            }
            throw error(fidoStatus: status.status)
                ?? RecoveryError(.securityKeyError, "The hardware token failed.")
        }
    }

    /// A wrong PIN, with the tries the key has left before it locks itself.
    public static func wrongPIN(triesLeft: Int?) -> RecoveryError {
        let left =
            switch triesLeft {
            case nil: ""
            case 1: " The hardware token allows 1 more try before it locks itself for good."
            case let count?: " The hardware token allows \(count) more tries before it locks itself for good."
            }
        return RecoveryError(.securityKeyPinWrong, "That PIN is not right." + left)
    }

    // MARK: Pure checks (tested without a key)

    /// Maps a libfido2 status to a clear error (nil for `FIDO_OK`).
    public static func error(fidoStatus status: Int32) -> RecoveryError? {
        switch status {
        case FIDO_OK: return nil
        case FIDO_ERR_NO_CREDENTIALS:
            return RecoveryError(
                .wrongSecurityKey, "This hardware token is not the one that was added as a way back in.")
        case FIDO_ERR_UNSUPPORTED_EXTENSION:
            return RecoveryError(
                .securityKeyUnsupported,
                "This hardware token cannot be a way back in (it lacks the hmac-secret extension).")
        case FIDO_ERR_PIN_NOT_SET:
            return RecoveryError(
                .securityKeyNoPin,
                "This hardware token has no PIN, so anyone who found it could open your spaces with it. "
                    + "Set a PIN on it first (for example `fido2-token -S /dev/hidrawN`), then try again.")
        case FIDO_ERR_PIN_REQUIRED:
            return RecoveryError(
                .securityKeyPinRequired,
                "Type the hardware token's PIN: without it the token opens nothing.")
        case FIDO_ERR_PIN_INVALID:
            return wrongPIN(triesLeft: nil)
        case FIDO_ERR_PIN_POLICY_VIOLATION:
            return RecoveryError(.securityKeyPinWrong, "That is not a PIN this hardware token accepts.")
        case FIDO_ERR_PIN_BLOCKED:
            return RecoveryError(
                .securityKeyPinBlocked,
                "This hardware token locked itself after too many wrong PINs; it opens nothing any more. "
                    + "Use another way back in.")
        case FIDO_ERR_PIN_AUTH_BLOCKED:
            return RecoveryError(
                .securityKeyPinPaused,
                "Too many wrong PINs in a row: unplug the hardware token, plug it in again, and retry.")
        case FIDO_ERR_ACTION_TIMEOUT, FIDO_ERR_USER_ACTION_TIMEOUT:
            return RecoveryError(
                .securityKeyTimeout, "Nobody touched the hardware token in time; try again and touch it.")
        case FIDO_ERR_OPERATION_DENIED:
            return RecoveryError(.securityKeyDenied, "The hardware token refused.")
        case FIDO_ERR_TX, FIDO_ERR_RX, FIDO_ERR_RX_NOT_CBOR, FIDO_ERR_RX_INVALID_CBOR:
            return RecoveryError(
                .securityKeyUnreachable, "The hardware token stopped answering; plug it in again.")
        default:
            let text = fido_strerr(status).map { String(cString: $0) } ?? "error \(status)"
            return RecoveryError(.securityKeyError, "The hardware token failed: \(text).")
        }
    }

    /// The salt as the extension wants it: exactly 32 bytes.
    public static func checkSalt(_ salt: [UInt8]) throws(RecoveryError) {
        guard salt.count == RecoveryAnchor.byteCount else {
            throw RecoveryError(.invalidSalt, "A recovery salt has 32 bytes, not \(salt.count).")
        }
    }

    /// The extension's output: exactly 32 bytes (one salt), else the key misbehaved.
    public static func checkOutput(_ output: [UInt8]) throws(RecoveryError) -> SecretBytes {
        guard output.count == RecoveryAnchor.byteCount else {
            throw RecoveryError(
                .invalidOutput,
                "The hardware token answered with \(output.count) bytes instead of 32; it cannot be used.")
        }
        return SecretBytes(output)
    }

    /// A credential id as the key returned it: 1 to 1,024 bytes.
    public static func checkCredentialID(_ id: [UInt8]) throws(RecoveryError) -> [UInt8] {
        guard (1...1024).contains(id.count) else {
            throw RecoveryError(.invalidCredential, "The hardware token returned no usable credential id.")
        }
        return id
    }
}

/// A FIDO2 key plugged in, through libfido2. Each call opens the device and closes it again.
public struct FIDO2Device: SecurityKeyDevice {
    /// The key's device path (e.g. /dev/hidraw3).
    public let path: String

    public init(path: String) { self.path = path }

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
    public static func first() throws(RecoveryError) -> FIDO2Device {
        guard let path = devicePaths().first else {
            throw RecoveryError(.noSecurityKey, "No hardware token found. Plug one in and try again.")
        }
        return FIDO2Device(path: path)
    }

    private static func check(_ status: Int32) throws {
        if status != FIDO_OK { throw FIDOStatus(status) }
    }

    private func withDevice<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        fido_init(0)
        guard let device = fido_dev_new() else { throw FIDOStatus(FIDO_ERR_INTERNAL) }
        var owned: OpaquePointer? = device
        defer { fido_dev_free(&owned) }
        try Self.check(fido_dev_open(device, path))
        defer { fido_dev_close(device) }
        return try body(device)
    }

    public func supportsHMACSecret() throws -> Bool {
        try withDevice { device in
            guard let info = fido_cbor_info_new() else { throw FIDOStatus(FIDO_ERR_INTERNAL) }
            var owned: OpaquePointer? = info
            defer { fido_cbor_info_free(&owned) }
            try Self.check(fido_dev_get_cbor_info(device, info))
            guard let names = fido_cbor_info_extensions_ptr(info) else { return false }
            return (0..<fido_cbor_info_extensions_len(info)).contains { index in
                names[index].map { String(cString: $0) } == "hmac-secret"
            }
        }
    }

    public func hasPIN() throws -> Bool { try withDevice { fido_dev_has_pin($0) } }

    public func pinRetries() throws -> Int {
        try withDevice { device in
            var retries: Int32 = 0
            try Self.check(fido_dev_get_retry_count(device, &retries))
            return Int(retries)
        }
    }

    /// The UV bit of the authenticator data's flags.
    private static let userVerifiedFlag: UInt8 = 0x04

    public func makeCredential(relyingParty: String, user: [UInt8], pin: String?) throws -> (
        id: [UInt8], userVerified: Bool
    ) {
        try withDevice { device in
            guard let cred = fido_cred_new() else { throw FIDOStatus(FIDO_ERR_INTERNAL) }
            var owned: OpaquePointer? = cred
            defer { fido_cred_free(&owned) }
            let challenge = SecretBytes.randomBytes(32)
            try Self.check(fido_cred_set_type(cred, COSE_ES256))
            try Self.check(fido_cred_set_clientdata_hash(cred, challenge, challenge.count))
            try Self.check(fido_cred_set_rp(cred, relyingParty, "Eleven recovery"))
            try Self.check(fido_cred_set_user(cred, user, user.count, "eleven", "Eleven", nil))
            try Self.check(fido_cred_set_extensions(cred, FIDO_EXT_HMAC_SECRET))
            // User verification asked for; with a PIN, libfido2 proves it with a PIN token and
            // leaves the `uv` option off the wire, as CTAP2 wants.
            if pin != nil { try Self.check(fido_cred_set_uv(cred, FIDO_OPT_TRUE)) }
            try Self.check(fido_dev_make_cred(device, cred, pin))
            let pointer = fido_cred_id_ptr(cred)
            let id =
                pointer.map { Array(UnsafeBufferPointer(start: $0, count: fido_cred_id_len(cred))) } ?? []
            return (id, fido_cred_flags(cred) & Self.userVerifiedFlag != 0)
        }
    }

    public func hmacSecret(relyingParty: String, credentialID: [UInt8], salt: [UInt8], pin: String?) throws
        -> (output: [UInt8], userVerified: Bool)
    {
        try withDevice { device in
            guard let assertion = fido_assert_new() else { throw FIDOStatus(FIDO_ERR_INTERNAL) }
            var owned: OpaquePointer? = assertion
            defer { fido_assert_free(&owned) }
            let challenge = SecretBytes.randomBytes(32)
            try Self.check(fido_assert_set_clientdata_hash(assertion, challenge, challenge.count))
            try Self.check(fido_assert_set_rp(assertion, relyingParty))
            try Self.check(fido_assert_allow_cred(assertion, credentialID, credentialID.count))
            try Self.check(fido_assert_set_extensions(assertion, FIDO_EXT_HMAC_SECRET))
            try Self.check(fido_assert_set_hmac_salt(assertion, salt, salt.count))
            if pin != nil { try Self.check(fido_assert_set_uv(assertion, FIDO_OPT_TRUE)) }
            try Self.check(fido_dev_get_assert(device, assertion, pin))
            guard fido_assert_count(assertion) == 1, let pointer = fido_assert_hmac_secret_ptr(assertion, 0)
            else { throw FIDOStatus(FIDO_ERR_INVALID_ARGUMENT) }
            let output = Array(
                UnsafeBufferPointer(start: pointer, count: fido_assert_hmac_secret_len(assertion, 0)))
            return (output, fido_assert_flags(assertion, 0) & Self.userVerifiedFlag != 0)
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
                .invalidSecurityKeyCard,
                "That file is not an Eleven hardware token card (or it is damaged).")
        }
        self = card
    }

    public var saltBytes: [UInt8] { Base64URL.decode(salt) ?? [] }
    public var credentialID: [UInt8] { Base64URL.decode(credential) ?? [] }
}
