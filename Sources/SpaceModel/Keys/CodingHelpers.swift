// Helpers for byte strings in JSON: every byte string is base64url without padding.

extension KeyedDecodingContainer {
    /// Decodes a base64url string into bytes, optionally insisting on an exact length.
    func decodeBytes(forKey key: Key, count: Int? = nil) throws -> [UInt8] {
        let text = try decode(String.self, forKey: key)
        guard let bytes = Base64URL.decode(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self, debugDescription: "not valid base64url (no padding)")
        }
        if let count, bytes.count != count {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self, debugDescription: "expected \(count) bytes, got \(bytes.count)")
        }
        return bytes
    }

    /// Runs a throwing key-model constructor and reports its failure as a decoding error at `key`.
    func decodeChecked<T>(
        forKey key: Key, _ make: ([UInt8]) throws(KeyModelError) -> T
    ) throws -> T {
        let bytes = try decodeBytes(forKey: key)
        do {
            return try make(bytes)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: error.message)
        }
    }
}

extension KeyedEncodingContainer {
    mutating func encodeBytes(_ bytes: some Collection<UInt8>, forKey key: Key) throws {
        try encode(Base64URL.encode(bytes), forKey: key)
    }
}
