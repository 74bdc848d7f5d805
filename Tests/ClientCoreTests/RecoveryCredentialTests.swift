import CFIDO2
import Foundation
import PAKE
import SpaceModel
import Testing

@testable import ClientCore

/// Recovery credentials without a home server: the file's format and checks, the anchor keys
/// derived from an output, and the FIDO2 `hmac-secret` handling around libfido2.
@Suite struct RecoveryCredentialTests {
    /// A credential whose output is HMAC(fixed secret, salt): stands in for any implementation.
    struct FixedSecret: RecoverySecret {
        var secret: [UInt8]
        var kindName: String { "test" }
        func output(salt: [UInt8]) throws -> SecretBytes {
            SecretBytes(HMACSHA256.authenticationCode(for: salt, key: secret))
        }
    }

    func code(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as RecoveryError {
            return error.code.rawValue
        } catch {
            return "\(error)"
        }
    }

    @Test func anchorKeysFollowTheOutputAndSalt() throws {
        let salt = [UInt8](repeating: 1, count: 32)
        let a = try RecoveryAnchor.identity(FixedSecret(secret: [1, 2, 3]), salt: salt)
        let again = try RecoveryAnchor.identity(FixedSecret(secret: [1, 2, 3]), salt: salt)
        let otherSalt = try RecoveryAnchor.identity(
            FixedSecret(secret: [1, 2, 3]), salt: [UInt8](repeating: 2, count: 32))
        let otherSecret = try RecoveryAnchor.identity(FixedSecret(secret: [9]), salt: salt)
        #expect(a.publicKeys == again.publicKeys)
        #expect(a.publicKeys != otherSalt.publicKeys)
        #expect(a.publicKeys != otherSecret.publicKeys)
        // It wraps and unwraps the vault key like a device.
        let key = VaultKey.random(generation: 3)
        #expect(try again.unwrapVaultKey(key.wrap(for: a.anchor(.recovery))) == key)
        #expect(
            code { _ = try RecoveryAnchor.identity(FixedSecret(secret: [1]), salt: [1, 2]) } == "invalid_salt"
        )
        #expect(code { _ = try RecoveryAnchor.identity(output: SecretBytes([1, 2, 3])) } == "invalid_output")
    }

    @Test func recoveryFileRoundTripsAndRefusesBadInput() throws {
        let accountKey = AccountKey.random()
        let file = try RecoveryFile.make(home: "http://127.0.0.1:1", accountKey: accountKey)
        #expect(!"\(file)".contains(Base64URL.encode(file.secret.unredactedBytes())))
        let parsed = try RecoveryFile(fileBytes: file.fileBytes().unredactedBytes())
        #expect(parsed.anchor == file.anchor && parsed.salt == file.salt && parsed.home == file.home)
        let identity = try RecoveryAnchor.identity(parsed, salt: parsed.salt)
        #expect(identity.anchor(.recovery).id(accountKey: accountKey) == file.anchor)

        let directory = try TemporaryFiles()
        let path = directory.path + "/r.json"
        try file.write(to: path)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(code { try file.write(to: path) } == "file_exists")
        #expect(code { _ = try RecoveryFile(path: directory.path + "/missing") } == "no_recovery_file")
        let text = String(decoding: file.fileBytes().unredactedBytes(), as: UTF8.self)
        for bad in [
            "", "{}", "[1]", text.replacingOccurrences(of: "\"version\" : 1", with: "\"version\" : 2"),
            text.replacingOccurrences(of: "http://", with: "ftp://"),
            text.replacingOccurrences(of: "\"secret\" : \"", with: "\"secret\" : \"AA"),
        ] {
            #expect(code { _ = try RecoveryFile(fileBytes: Array(bad.utf8)) } != nil, "\(bad.prefix(40))")
        }
    }

    // MARK: FIDO2 hmac-secret (no hardware)

    @Test func libfido2StatusesBecomeClearErrors() {
        #expect(SecurityKey.error(fidoStatus: FIDO_OK) == nil)
        let expected: [(Int32, String)] = [
            (FIDO_ERR_NO_CREDENTIALS, "wrong_security_key"),
            (FIDO_ERR_UNSUPPORTED_EXTENSION, "security_key_unsupported"),
            (FIDO_ERR_PIN_REQUIRED, "security_key_pin_required"),
            (FIDO_ERR_PIN_INVALID, "security_key_pin_wrong"),
            (FIDO_ERR_PIN_NOT_SET, "security_key_no_pin"), (FIDO_ERR_PIN_BLOCKED, "security_key_pin_blocked"),
            (FIDO_ERR_PIN_AUTH_BLOCKED, "security_key_pin_paused"),
            (FIDO_ERR_ACTION_TIMEOUT, "security_key_timeout"),
            (FIDO_ERR_USER_ACTION_TIMEOUT, "security_key_timeout"),
            (FIDO_ERR_OPERATION_DENIED, "security_key_denied"),
            (FIDO_ERR_TX, "security_key_unreachable"), (FIDO_ERR_RX, "security_key_unreachable"),
            (FIDO_ERR_INTERNAL, "security_key_error"),
        ]
        for (status, wanted) in expected {
            let error = SecurityKey.error(fidoStatus: status)
            #expect(error?.code.rawValue == wanted, "\(status)")
            #expect(!(error?.message.isEmpty ?? true))
        }
        // An unknown status names libfido2's own words.
        #expect(
            SecurityKey.error(fidoStatus: FIDO_ERR_INTERNAL)?.message.contains("FIDO_ERR_INTERNAL") == true)
    }

    @Test func saltOutputAndCredentialIDLengthsAreChecked() throws {
        for count in [0, 16, 31, 33, 64] {
            #expect(code { try SecurityKey.checkSalt([UInt8](repeating: 0, count: count)) } == "invalid_salt")
            #expect(
                code { _ = try SecurityKey.checkOutput([UInt8](repeating: 0, count: count)) }
                    == "invalid_output")
        }
        try SecurityKey.checkSalt([UInt8](repeating: 0, count: 32))
        let output = try SecurityKey.checkOutput([UInt8](repeating: 5, count: 32))
        #expect(output.count == 32)
        #expect(code { _ = try SecurityKey.checkCredentialID([]) } == "invalid_credential")
        #expect(
            code { _ = try SecurityKey.checkCredentialID([UInt8](repeating: 1, count: 1025)) }
                == "invalid_credential")
        #expect(try SecurityKey.checkCredentialID([1, 2, 3]) == [1, 2, 3])
        // A salt of the wrong length is refused before any device is touched.
        let key = SecurityKey(
            device: FIDO2Device(path: "/nonexistent/hidraw"), credentialID: [1], pin: "1234")
        #expect(code { _ = try key.output(salt: [1]) } == "invalid_salt")
    }

    @Test func securityKeyCardStoresTheCredentialID() throws {
        let id = [UInt8](repeating: 7, count: 64)
        let salt = [UInt8](repeating: 3, count: 32)
        let anchor = try AnchorID(bytes: [UInt8](repeating: 9, count: 16))
        let card = SecurityKeyCard(home: "https://home.example", anchor: anchor, salt: salt, credentialID: id)
        let parsed = try SecurityKeyCard(bytes: Array(JSONEncoder().encode(card)))
        #expect(parsed == card && parsed.credentialID == id && parsed.saltBytes == salt)
        var broken = card
        broken.salt = Base64URL.encode([1, 2])
        #expect(
            code { _ = try SecurityKeyCard(bytes: Array(JSONEncoder().encode(broken))) }
                == "invalid_security_key_card")
        broken = card
        broken.credential = ""
        #expect(
            code { _ = try SecurityKeyCard(bytes: Array(JSONEncoder().encode(broken))) }
                == "invalid_security_key_card")
        #expect(code { _ = try SecurityKeyCard(bytes: Array("{}".utf8)) } == "invalid_security_key_card")
    }

    /// With no security key plugged in (this machine): a clear "no security key found", and a
    /// device path that is not a key gives a clear error, not a crash.
    @Test(.enabled(if: FIDO2Device.devicePaths().isEmpty, "a security key is plugged in"))
    func noDeviceFoundWhenNonePluggedIn() {
        #expect(code { _ = try FIDO2Device.first() } == "no_security_key")
        let key = SecurityKey(
            device: FIDO2Device(path: "/nonexistent/hidraw"), credentialID: [1], pin: "1234")
        let failure = code { _ = try key.output(salt: [UInt8](repeating: 0, count: 32)) }
        #expect(failure?.hasPrefix("security_key") == true, "\(failure ?? "")")
    }

    /// The hardware part (make a credential, then the same output twice for one salt and another
    /// for a second salt) runs only with a security key plugged in; SKIPPED on machines without one.
    @Test(
        .enabled(if: !FIDO2Device.devicePaths().isEmpty, "no security key plugged in: hardware part skipped"))
    func hardwareKeyGivesAStableOutputPerSalt() throws {
        // The key must have a PIN; the test reads it from ELEVEN_TEST_TOKEN_PIN.
        let pin = ProcessInfo.processInfo.environment["ELEVEN_TEST_TOKEN_PIN"] ?? ""
        let key = try SecurityKey.makeCredential(device: try FIDO2Device.first(), pin: pin)
        let salt = [UInt8](repeating: 1, count: 32)
        let first = try key.output(salt: salt)
        #expect(first.count == 32)
        #expect(try key.output(salt: salt) == first)
        #expect(try key.output(salt: [UInt8](repeating: 2, count: 32)) != first)
    }
}

/// A temporary directory removed when dropped.
final class TemporaryFiles {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "eleven-recovery-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}
