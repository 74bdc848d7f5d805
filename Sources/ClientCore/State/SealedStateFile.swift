import CSodium
import Foundation
import PAKE
import SpaceModel

/// A JSON value kept in the state directory encrypted at rest: `<name>.sealed` is
/// `0x01 ‖ SecretBox(key, JSON, ad)` (nonce ‖ XChaCha20-Poly1305 ciphertext ‖ tag) under a random 32-byte key in
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
        guard var plain = try loadBytes()?.plain else { return nil }
        defer { wipe(&plain) }
        guard let value = try? JSONDecoder().decode(Value.self, from: Data(plain)) else {
            throw corrupt()
        }
        return value
    }

    /// The opened bytes (for a value with an encoding of its own) and the file's sealed bytes as
    /// read, or nil when there is no file. The caller wipes `plain` if it is secret.
    func loadBytes() throws(LocalStateError) -> (plain: [UInt8], sealed: [UInt8])? {
        try directory.prepare()
        guard let sealed = try directory.read(sealedFile) else { return nil }
        return (try opened(sealed), sealed)
    }

    /// `sealed` (this file's bytes) opened.
    func opened(_ sealed: [UInt8]) throws(LocalStateError) -> [UInt8] {
        guard let keyBytes = try directory.read(keyFile), keyBytes.count == 32 else {
            throw LocalStateError(
                .corrupt, "\(directory.file(keyFile)) is missing or damaged; \(what) cannot be read.")
        }
        let key = SecretBytes(keyBytes)
        guard sealed.first == 1, let plain = SecretBox.open(sealed.dropFirst(), key: key, ad: additionalData)
        else { throw corrupt() }
        return plain
    }

    /// Replaces the value (nil removes the sealed file).
    func save(_ value: Value?) throws(LocalStateError) {
        // Locked: the key file is made on first use, and two first saves must agree on one key.
        try directory.locked { () throws(LocalStateError) in try write(value) }
    }

    private func write(_ value: Value?) throws(LocalStateError) {
        guard let value else {
            unlink(directory.file(sealedFile))
            return
        }
        guard var plain = try? JSONEncoder().encode(value).map({ $0 }) else {
            throw LocalStateError(.unwritable, "could not encode the \(what)")
        }
        defer { wipe(&plain) }
        try write(bytes: plain)
    }

    /// Replaces the file with `plain` sealed. Callers hold the directory's lock.
    func write(bytes plain: [UInt8]) throws(LocalStateError) {
        let key: SecretBytes
        if let existing = try directory.read(keyFile), existing.count == 32 {
            key = SecretBytes(existing)
        } else {
            key = SecretBytes(SecretBytes.randomBytes(32))
            try directory.write(keyFile, key)
        }
        try directory.write(
            sealedFile, [1] + SecretBox.seal(plain, key: key, ad: additionalData), durable: durable)
    }

    private func corrupt() -> LocalStateError {
        LocalStateError(
            .corrupt,
            "\(directory.file(sealedFile)) is damaged and cannot be read. Move it away to drop the \(what).")
    }
}
