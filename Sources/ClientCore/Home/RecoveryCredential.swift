import Foundation
import PAKE
import SpaceModel

/// Something that answers a salt with a 32-byte pseudo-random output only its holder can make:
/// a credential file's random secret, or a FIDO2 security key's `hmac-secret` extension. The
/// output becomes a key anchor (``RecoveryAnchor``) that holds its own wrap of the vault key.
public protocol RecoverySecret {
    /// What kind of credential this is, as `eleven recovery list` names it.
    var kindName: String { get }
    /// The 32-byte output for `salt` (32 bytes).
    func output(salt: [UInt8]) throws -> SecretBytes
}

/// A problem with a recovery credential: a stable ``code`` and a message a person can act on.
public struct RecoveryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable codes; the raw values are what `--json` prints (`docs/errors.md`).
    public enum Code: String, CaseIterable, Sendable {
        case fileExists = "file_exists"
        case invalidCredential = "invalid_credential"
        case invalidOutput = "invalid_output"
        case invalidRecoveryFile = "invalid_recovery_file"
        case invalidSalt = "invalid_salt"
        case invalidSecurityKeyCard = "invalid_security_key_card"
        case noRecoveryFile = "no_recovery_file"
        case noSecurityKey = "no_security_key"
        case securityKeyDenied = "security_key_denied"
        case securityKeyError = "security_key_error"
        case securityKeyNoPin = "security_key_no_pin"
        case securityKeyNotVerified = "security_key_not_verified"
        case securityKeyPinBlocked = "security_key_pin_blocked"
        case securityKeyPinPaused = "security_key_pin_paused"
        case securityKeyPinRequired = "security_key_pin_required"
        case securityKeyPinWrong = "security_key_pin_wrong"
        case securityKeyTimeout = "security_key_timeout"
        case securityKeyUnreachable = "security_key_unreachable"
        case securityKeyUnsupported = "security_key_unsupported"
        case unsupportedRecoveryFile = "unsupported_recovery_file"
        case wrongSecurityKey = "wrong_security_key"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// The key pair a recovery credential stands for, derived from its output: HKDF-SHA256 of the
/// output gives the X25519 secret and the Ed25519 seed. It wraps, unwraps and signs like a device.
public enum RecoveryAnchor {
    /// Byte count of salts and outputs.
    public static let byteCount = 32
    static let info = Array("eleven/recovery-anchor/v1".utf8)

    /// The anchor identity for `output` (which must be 32 bytes).
    public static func identity(output: SecretBytes) throws(RecoveryError) -> DeviceIdentity {
        guard output.count == byteCount else {
            throw RecoveryError(
                .invalidOutput, "The recovery credential answered with \(output.count) bytes, not 32.")
        }
        let keys = HKDFSHA256.deriveKey(from: output, info: info, byteCount: 64)
        // The stored form of a device identity: magic, version, X25519 secret, Ed25519 seed.
        let stored = SecretBytes(count: DeviceIdentity.storedByteCount) { out in
            let base = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            for (index, byte) in Array("ELID".utf8).enumerated() { base[index] = byte }
            base[4] = 1
            keys.withUnsafeBytes { k in
                (base + 5).update(from: k.baseAddress!.assumingMemoryBound(to: UInt8.self), count: 64)
            }
        }
        do {
            return try DeviceIdentity(storedForm: stored)
        } catch {
            throw RecoveryError(.invalidOutput, "This way back in could not be set up.")
        }
    }

    /// The anchor identity `secret` answers for `salt`.
    public static func identity(_ secret: some RecoverySecret, salt: [UInt8]) throws -> DeviceIdentity {
        guard salt.count == byteCount else {
            throw RecoveryError(.invalidSalt, "A recovery salt has 32 bytes, not \(salt.count).")
        }
        return try identity(output: try secret.output(salt: salt))
    }
}

/// A recovery credential file: a random secret (never typed, never printed) with everything a
/// brand-new device needs to find the account: the home server, the anchor id (not secret to the
/// server) and the salt. Written once with mode 0600; kept in a password manager or on a
/// removable drive.
public struct RecoveryFile: RecoverySecret, Sendable, CustomStringConvertible {
    public static let format = "eleven-recovery-file"
    public static let version = 1

    public let home: String
    public let anchor: AnchorID
    public let salt: [UInt8]
    let secret: SecretBytes

    public var kindName: String { "recovery file" }
    public var description: String { "RecoveryFile(\(anchor), secret redacted)" }

    /// A fresh secret and salt for the account on `home`; the anchor id needs the account key.
    public static func make(home: String, accountKey: AccountKey) throws -> RecoveryFile {
        let secret = SecretBytes.random(count: RecoveryAnchor.byteCount)
        let salt = SecretBytes.randomBytes(RecoveryAnchor.byteCount)
        let identity = try RecoveryAnchor.identity(output: Self.output(secret: secret, salt: salt))
        let id = identity.anchor(.recovery).id(accountKey: accountKey)
        return RecoveryFile(home: home, anchor: id, salt: salt, secret: secret)
    }

    init(home: String, anchor: AnchorID, salt: [UInt8], secret: SecretBytes) {
        self.home = home
        self.anchor = anchor
        self.salt = salt
        self.secret = secret
    }

    /// `HMAC-SHA256(secret, salt)`.
    public func output(salt: [UInt8]) throws -> SecretBytes { Self.output(secret: secret, salt: salt) }

    private static func output(secret: SecretBytes, salt: [UInt8]) -> SecretBytes {
        SecretBytes(HMACSHA256.authenticationCode(for: salt, key: secret))
    }

    private struct Stored: Codable {
        var format: String
        var version: Int
        var home: String
        var anchor: AnchorID
        var salt: String
        var secret: String
    }

    /// The file's bytes (JSON). Holds the secret: write it with mode 0600, never print it.
    public func fileBytes() -> SecretBytes {
        let stored = Stored(
            format: Self.format, version: Self.version, home: home, anchor: anchor,
            salt: Base64URL.encode(salt), secret: Base64URL.encode(secret.unredactedBytes()))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        var data = Array((try? encoder.encode(stored)) ?? Data())
        defer { wipe(&data) }
        return SecretBytes(data + [0x0A])
    }

    /// Parses a credential file's bytes.
    public init(fileBytes bytes: [UInt8]) throws(RecoveryError) {
        let notOne = RecoveryError(
            .invalidRecoveryFile, "That file is not an Eleven recovery file (or it is damaged).")
        guard let stored = try? JSONDecoder().decode(Stored.self, from: Data(bytes)),
            stored.format == Self.format
        else { throw notOne }
        guard stored.version == Self.version else {
            throw RecoveryError(
                .unsupportedRecoveryFile,
                "That recovery file uses format version \(stored.version); this eleven knows version 1.")
        }
        guard let salt = Base64URL.decode(stored.salt), salt.count == RecoveryAnchor.byteCount,
            let secret = Base64URL.decode(stored.secret), secret.count == RecoveryAnchor.byteCount,
            stored.home.hasPrefix("http://") || stored.home.hasPrefix("https://")
        else { throw notOne }
        self.init(home: stored.home, anchor: stored.anchor, salt: salt, secret: SecretBytes(secret))
    }

    /// Reads the credential file at `path`.
    public init(path: String) throws {
        let parent = (path as NSString).deletingLastPathComponent
        let directory = StateDirectory(path: parent.isEmpty ? "." : parent)
        guard let bytes = try directory.read((path as NSString).lastPathComponent) else {
            throw RecoveryError(.noRecoveryFile, "There is no file \(path).")
        }
        try self.init(fileBytes: bytes)
    }

    /// Writes the file at `path` atomically with mode 0600; refuses to replace an existing file.
    public func write(to path: String) throws { try Self.writeNew(fileBytes(), to: path) }

    /// Writes `bytes` as a new file at `path` atomically with mode 0600; refuses to replace one.
    public static func writeNew(_ bytes: SecretBytes, to path: String) throws {
        guard access(path, F_OK) != 0 else {
            throw RecoveryError(
                .fileExists, "\(path) already exists; choose a new name so no other file is replaced.")
        }
        let parent = (path as NSString).deletingLastPathComponent
        let directory = StateDirectory(path: parent.isEmpty ? "." : parent)
        try directory.write((path as NSString).lastPathComponent, bytes)
    }
}
