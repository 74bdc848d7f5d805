import CSodium
import Foundation
import PAKE

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
                .key, code: "key_missing",
                "No key to unseal the bot's state: set ELEVEN_BOT_KEY_FILE, pass --key-file, or run under "
                    + "systemd with LoadCredential=\(credentialName):PATH.")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw BotError(.key, code: "key_missing", "The bot's key file \(path) cannot be read.")
        }
        guard let key = parse(Array(data)) else {
            throw BotError(
                .key, code: "key_invalid",
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
            throw BotError(.key, code: "key_unwritable", "Cannot create the key file \(path).")
        }
        defer { Glibc.close(fd) }
        guard Glibc.write(fd, hex, hex.count) == hex.count, fsync(fd) == 0 else {
            throw BotError(.key, code: "key_unwritable", "Cannot write the key file \(path).")
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

    /// `0x01 ‖ nonce (24) ‖ XChaCha20-Poly1305(key, nonce, plaintext, ad = purpose)`.
    func seal(_ plaintext: [UInt8], purpose: String) -> [UInt8] {
        PAKE.Sodium.ensureInitialized()
        let ad = Array("eleven-bot/\(purpose)/v1".utf8)
        var random = SystemRandom()
        let nonce = random.bytes(count: Int(crypto_aead_xchacha20poly1305_ietf_npubbytes()))
        var cipher = [UInt8](
            repeating: 0, count: plaintext.count + Int(crypto_aead_xchacha20poly1305_ietf_abytes()))
        var written: UInt64 = 0
        key.withUnsafeBytes { k in
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                &cipher, &written, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce,
                k.bindMemory(to: UInt8.self).baseAddress!)
        }
        return [1] + nonce + cipher
    }

    /// Opens what ``seal(_:purpose:)`` made for the same purpose; nil when the key is wrong or
    /// the bytes were changed.
    func open(_ sealed: [UInt8], purpose: String) -> [UInt8]? {
        let nonceCount = Int(crypto_aead_xchacha20poly1305_ietf_npubbytes())
        let tagCount = Int(crypto_aead_xchacha20poly1305_ietf_abytes())
        guard sealed.count >= 1 + nonceCount + tagCount, sealed[0] == 1 else { return nil }
        let ad = Array("eleven-bot/\(purpose)/v1".utf8)
        let nonce = Array(sealed[1...nonceCount])
        let cipher = Array(sealed[(1 + nonceCount)...])
        var plain = [UInt8](repeating: 0, count: cipher.count - tagCount)
        var written: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                &plain, &written, nil, cipher, UInt64(cipher.count), ad, UInt64(ad.count), nonce,
                k.bindMemory(to: UInt8.self).baseAddress!)
        }
        return rc == 0 ? plain : nil
    }
}
