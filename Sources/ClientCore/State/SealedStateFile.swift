import CSodium
import Foundation
import PAKE

/// A JSON value kept in the state directory encrypted at rest: `<name>.sealed` is
/// `0x01 ‖ nonce (24) ‖ XChaCha20-Poly1305(key, nonce, JSON, ad)` under a random 32-byte key in
/// `<name>.key` (mode 0600). Writes are atomic. Pending invites and pending joins live in these.
struct SealedStateFile<Value: Codable> {
    let directory: StateDirectory
    let keyFile: String
    let sealedFile: String
    let additionalData: [UInt8]
    /// What the file holds, for error messages ("pending invites").
    let what: String
    /// Whether writes are fsynced (see `StateDirectory.write`).
    var durable = true

    /// The value, or nil when there is no file.
    func load() throws(LocalStateError) -> Value? {
        try directory.prepare()
        guard let sealed = try directory.read(sealedFile) else { return nil }
        guard let keyBytes = try directory.read(keyFile), keyBytes.count == 32 else {
            throw LocalStateError(
                .corrupt, "\(directory.file(keyFile)) is missing or damaged; \(what) cannot be read.")
        }
        let key = SecretBytes(keyBytes)
        let nonceCount = Int(crypto_aead_xchacha20poly1305_ietf_npubbytes())
        let tagCount = Int(crypto_aead_xchacha20poly1305_ietf_abytes())
        guard sealed.count >= 1 + nonceCount + tagCount, sealed[0] == 1 else { throw corrupt() }
        let nonce = Array(sealed[1...nonceCount])
        let cipher = Array(sealed[(1 + nonceCount)...])
        var plain = [UInt8](repeating: 0, count: cipher.count - tagCount)
        var written: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                &plain, &written, nil, cipher, UInt64(cipher.count), additionalData,
                UInt64(additionalData.count), nonce, k.bindMemory(to: UInt8.self).baseAddress!)
        }
        defer { wipe(&plain) }
        guard rc == 0, let value = try? JSONDecoder().decode(Value.self, from: Data(plain)) else {
            throw corrupt()
        }
        return value
    }

    /// Replaces the value (nil removes the sealed file).
    func save(_ value: Value?) throws(LocalStateError) {
        try directory.prepare()
        guard let value else {
            unlink(directory.file(sealedFile))
            return
        }
        let key: SecretBytes
        if let existing = try directory.read(keyFile), existing.count == 32 {
            key = SecretBytes(existing)
        } else {
            key = SecretBytes(SecretBytes.randomBytes(32))
            try directory.write(keyFile, key)
        }
        guard var plain = try? JSONEncoder().encode(value).map({ $0 }) else {
            throw LocalStateError(.unwritable, "could not encode the \(what)")
        }
        defer { wipe(&plain) }
        PAKE.Sodium.ensureInitialized()
        let nonce = SecretBytes.randomBytes(Int(crypto_aead_xchacha20poly1305_ietf_npubbytes()))
        var cipher = [UInt8](
            repeating: 0, count: plain.count + Int(crypto_aead_xchacha20poly1305_ietf_abytes()))
        var written: UInt64 = 0
        key.withUnsafeBytes { k in
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                &cipher, &written, plain, UInt64(plain.count), additionalData,
                UInt64(additionalData.count), nil, nonce, k.bindMemory(to: UInt8.self).baseAddress!)
        }
        try directory.write(sealedFile, [1] + nonce + cipher, durable: durable)
    }

    private func corrupt() -> LocalStateError {
        LocalStateError(
            .corrupt,
            "\(directory.file(sealedFile)) is damaged and cannot be read. Move it away to drop the \(what).")
    }
}
