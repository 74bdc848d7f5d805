import COpenSSL

/// Random bytes for WebSocket masking keys, drawn from OpenSSL's CSPRNG a block at a time. Each
/// `RAND_bytes` call costs more than the four bytes a frame needs (OpenSSL checks the process
/// id, a system call, and walks its provider on every call), so one call fills the pool for
/// many frames. Owned by one thread (an event loop, a ``BlockingWebSocket``).
struct RandomPool {
    private var pool: [UInt8]
    private var offset: Int

    init(byteCount: Int) {
        pool = [UInt8](repeating: 0, count: byteCount)
        offset = byteCount
    }

    /// The next four random bytes.
    mutating func nextUInt32() -> UInt32 {
        if offset + 4 > pool.count {
            Self.fill(&pool)
            offset = 0
        }
        var value: UInt32 = 0
        for i in 0..<4 { value = value << 8 | UInt32(pool[offset + i]) }
        offset += 4
        return value
    }

    /// Fills `bytes` from OpenSSL's CSPRNG in one call (the system's generator if OpenSSL fails).
    static func fill(_ bytes: inout [UInt8]) {
        let count = bytes.count
        let filled = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        if filled != 1 {
            var rng = SystemRandomNumberGenerator()
            for i in 0..<count { bytes[i] = UInt8.random(in: 0...255, using: &rng) }
        }
    }
}
