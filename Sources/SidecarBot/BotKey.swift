import CSodium
import ClientCore
import Foundation
import PAKE
import SpaceModel

/// The key that seals the bot's private keys and invite secrets in its state file. It never
/// lives in the state: systemd passes it as a credential (`LoadCredential=` puts it in
/// `$CREDENTIALS_DIRECTORY/eleven-bot.key`), or `ELEVEN_BOT_KEY_FILE` / `--key-file` names it.
/// The file holds 32 random bytes, raw or as 64 hex characters.
public struct BotSealingKey: Sendable {
    /// The credential's name under `$CREDENTIALS_DIRECTORY`.
    public static let credentialName = "eleven-bot.key"

    private let key: SecretBytes

    init(key: SecretBytes) {
        self.key = key
    }

    /// Where the key is read from: `explicit` (`--key-file`), else `ELEVEN_BOT_KEY_FILE`, else
    /// `$CREDENTIALS_DIRECTORY/eleven-bot.key`. Nil when none is configured.
    public static func location(explicit: String?, environment: [String: String]) -> String? {
        if let explicit, !explicit.isEmpty { return explicit }
        if let file = environment["ELEVEN_BOT_KEY_FILE"], !file.isEmpty { return file }
        if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
            return (directory as NSString).appendingPathComponent(credentialName)
        }
        return nil
    }

    /// Reads the key from `path`.
    public static func load(path: String?) throws(BotError) -> BotSealingKey {
        guard let path else {
            throw BotError(
                .key, code: .keyMissing,
                "No key to unseal the bot's state: set ELEVEN_BOT_KEY_FILE, pass --key-file, or run under "
                    + "systemd with LoadCredential=\(credentialName):PATH.")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw BotError(.key, code: .keyMissing, "The bot's key file \(path) cannot be read.")
        }
        guard let key = parse(Array(data)) else {
            throw BotError(
                .key, code: .keyInvalid,
                "The bot's key file \(path) must hold 32 random bytes (raw or as 64 hex characters).")
        }
        return BotSealingKey(key: key)
    }

    /// Writes a fresh random key to `path` (mode 0600, as 64 hex characters) unless a file is
    /// there already; returns the key in the file and whether it was created.
    public static func loadOrCreate(path: String) throws(BotError) -> (key: BotSealingKey, created: Bool) {
        if FileManager.default.fileExists(atPath: path) { return (try load(path: path), false) }
        var random = SystemRandom()
        let key = SecretBytes(randomCount: 32, using: &random)
        var hex = Array(key.unredactedBytes().map { String(format: "%02x", $0) }.joined().utf8) + [10]
        defer { hex.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw BotError(.key, code: .keyUnwritable, "Cannot create the key file \(path).")
        }
        defer { Glibc.close(fd) }
        guard Glibc.write(fd, hex, hex.count) == hex.count, fsync(fd) == 0 else {
            throw BotError(.key, code: .keyUnwritable, "Cannot write the key file \(path).")
        }
        return (BotSealingKey(key: key), true)
    }

    static func parse(_ raw: [UInt8]) -> SecretBytes? {
        if raw.count == 32 { return SecretBytes(raw) }
        let text = String(decoding: raw, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count == 64 else { return nil }
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return SecretBytes(bytes)
    }

    /// `0x01 ‖ SecretBox(key, plaintext, ad = "eleven-bot/<purpose>/v1")`.
    func seal(_ plaintext: [UInt8], purpose: String) -> [UInt8] {
        [1] + SecretBox.seal(plaintext, key: key, ad: Array("eleven-bot/\(purpose)/v1".utf8))
    }

    /// Opens what ``seal(_:purpose:)`` made for the same purpose; nil when the key is wrong or
    /// the bytes were changed.
    func open(_ sealed: [UInt8], purpose: String) -> [UInt8]? {
        guard sealed.first == 1 else { return nil }
        return SecretBox.open(sealed.dropFirst(), key: key, ad: Array("eleven-bot/\(purpose)/v1".utf8))
    }
}
