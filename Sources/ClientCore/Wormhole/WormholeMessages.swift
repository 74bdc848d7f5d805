import CSodium
import Foundation
import JoinProtocol
import Mailbox
import PAKE
import SpaceModel
import Support

/// Magic Wormhole's phase encryption (`wormhole-protocol.md` §12.5): NaCl SecretBox
/// (XSalsa20-Poly1305) under the phase key, a random 24-byte nonce per message, and the body
/// `nonce ‖ tag ‖ ciphertext` (the nonce followed by libsodium's combined box).
public enum WormholeSecretBox {
    public static let nonceByteCount = Int(crypto_secretbox_NONCEBYTES)
    public static let tagByteCount = Int(crypto_secretbox_MACBYTES)

    /// Encrypts `plaintext` under `key` (32 bytes) with a fresh nonce from `random`.
    public static func seal(
        _ plaintext: [UInt8], key: SecretBytes, using random: inout some RandomByteSource
    ) -> [UInt8] {
        PAKE.Sodium.ensureInitialized()
        precondition(key.count == Int(crypto_secretbox_KEYBYTES), "a SecretBox key is 32 bytes")
        let nonce = random.bytes(count: nonceByteCount)
        var out = nonce + [UInt8](repeating: 0, count: tagByteCount + plaintext.count)
        key.withUnsafeBytes { k in
            out.withUnsafeMutableBufferPointer { buffer in
                _ = crypto_secretbox_easy(
                    buffer.baseAddress! + nonceByteCount, plaintext, UInt64(plaintext.count), nonce,
                    k.bindMemory(to: UInt8.self).baseAddress!)
            }
        }
        return out
    }

    /// Decrypts a body; `nil` when it is too short or does not authenticate under `key`.
    public static func open(_ body: [UInt8], key: SecretBytes) -> [UInt8]? {
        PAKE.Sodium.ensureInitialized()
        guard key.count == Int(crypto_secretbox_KEYBYTES), body.count >= nonceByteCount + tagByteCount
        else { return nil }
        let nonce = Array(body[..<nonceByteCount])
        let boxed = Array(body[nonceByteCount...])
        let plainCount = boxed.count - tagByteCount
        // One spare byte so an empty plaintext still has a valid output pointer.
        var plain = [UInt8](repeating: 0, count: plainCount + 1)
        let rc = key.withUnsafeBytes { k in
            crypto_secretbox_open_easy(
                &plain, boxed, UInt64(boxed.count), nonce, k.bindMemory(to: UInt8.self).baseAddress!)
        }
        plain.removeLast()
        return rc == 0 ? plain : nil
    }
}

/// The JSON bodies of Magic Wormhole's key exchange and of the text-transfer application
/// (`wormhole-protocol.md` §12.3, §12.7, §12.10).
public enum WormholeMessage {
    /// The unencrypted `pake` body: `{"pake_v1": "<hex of the 33-byte SPAKE2 message>"}`.
    public static func pakeBody(_ message: [UInt8]) -> [UInt8] {
        encode(["pake_v1": .string(Hex.encode(message))])
    }

    /// The peer's SPAKE2 message from its `pake` body.
    public static func parsePake(_ body: [UInt8]) throws(WormholeError) -> [UInt8] {
        guard let object = decodeObject(body) else {
            throw .badKeyExchange("its key-exchange message is not a JSON object")
        }
        guard let hex = object["pake_v1"]?.stringValue else {
            throw .badKeyExchange("its key-exchange message has no pake_v1")
        }
        guard let bytes = Hex.decode(hex) else {
            throw .badKeyExchange("its key-exchange message is not hex")
        }
        return bytes
    }

    /// Our `version` plaintext: no application capabilities.
    public static let versionPlaintext: [UInt8] = encode(["app_versions": .object(JSONObject())])

    /// What the transfer application says in a numeric phase.
    public enum Application: Equatable, Sendable {
        /// `{"offer": {"message": text}}`
        case offerText(String)
        /// An offer of something other than text (`file`, `directory`, or unknown); the kind.
        case offerOther(String)
        /// `{"answer": {"message_ack": "ok"}}`
        case textAcknowledged
        /// Any other answer (described).
        case otherAnswer(String)
        /// `{"error": "..."}`
        case error(String)
        /// A message we have no use for (`transit` hints, unknown keys): ignored.
        case ignored
    }

    public static func offer(text: String) -> [UInt8] {
        encode(["offer": .object(JSONObject(["message": .string(text)]))])
    }
    /// The longest application message whose sealed, hex-encoded `add` fits the relay's
    /// message limit (``WormholeLimits``): what `eleven send` checks a text's offer against,
    /// before any traffic, so the relay never has to refuse it.
    public static let maximumPlaintextBytes =
        WormholeLimits.maximumBodyBytes - WormholeSecretBox.nonceByteCount - WormholeSecretBox.tagByteCount
    /// The longest text (UTF-8 bytes, before JSON escaping) a Wormhole text transfer carries.
    public static let maximumTextBytes = maximumPlaintextBytes - offer(text: "").count
    public static let textAcknowledgement: [UInt8] = encode([
        "answer": .object(JSONObject(["message_ack": "ok"]))
    ])
    public static func error(_ text: String) -> [UInt8] { encode(["error": .string(text)]) }

    /// Reads a decrypted application message. Like the Python client, an `error` key wins.
    public static func parseApplication(_ plaintext: [UInt8]) throws(WormholeError) -> Application {
        guard let object = decodeObject(plaintext) else {
            throw .badPeerMessage("a message that is not a JSON object")
        }
        if let error = object["error"] {
            return .error(error.stringValue ?? "an unspecified error")
        }
        if let offer = object["offer"] {
            guard let offer = offer.objectValue else {
                throw .badPeerMessage("an offer that is not a JSON object")
            }
            if let text = offer["message"] {
                guard let text = text.stringValue else { throw .badPeerMessage("a text offer without text") }
                return .offerText(text)
            }
            if offer["file"] != nil { return .offerOther("a file") }
            if offer["directory"] != nil { return .offerOther("a directory") }
            return .offerOther("something unknown")
        }
        if let answer = object["answer"] {
            guard let answer = answer.objectValue else {
                throw .badPeerMessage("an answer that is not a JSON object")
            }
            if let ack = answer["message_ack"]?.stringValue, ack == "ok" { return .textAcknowledged }
            if let ack = answer["message_ack"]?.stringValue { return .otherAnswer("message_ack \(ack)") }
            return .otherAnswer("an answer without message_ack")
        }
        return .ignored
    }

    /// Whether a decrypted `version` body is a JSON object (its contents are capabilities we
    /// do not use; unknown keys are ignored, as the protocol asks).
    public static func isValidVersion(_ plaintext: [UInt8]) -> Bool {
        decodeObject(plaintext) != nil
    }

    /// Keys are written in the order given (each body above lists them sorted, as the Python
    /// client's `json.dumps(sort_keys=True)` would); the mailbox's one JSON codec.
    static func encode(_ members: KeyValuePairs<String, JSONValue>) -> [UInt8] {
        var out: [UInt8] = []
        JSONWriter.write(.object(JSONObject(members)), into: &out)
        return out
    }

    static func decodeObject(_ bytes: [UInt8]) -> JSONObject? {
        guard !bytes.isEmpty, String(validating: bytes, as: UTF8.self) != nil else { return nil }
        return (try? JSONParser.parse(bytes))?.objectValue
    }
}
