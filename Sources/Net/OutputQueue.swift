/// A connection's unsent output: a queue of byte chunks. A large write (a big frame or
/// response) stays the array it was built in, small writes share the last chunk, so the queue
/// holds what is pending and no more: one contiguous buffer would double past it as it grows,
/// and copy everything queued at each growth (with a peer that does not read, several
/// megabytes per connection).
struct OutputQueue {
    /// Small writes are copied into the last chunk while it stays below this size.
    static let coalesceBytes = 16384

    private var chunks: [[UInt8]] = []
    /// The first chunk still (partly) unsent.
    private var head = 0
    /// Bytes of `chunks[head]` already sent.
    private var offset = 0
    /// Unsent bytes.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Queues a copy of `bytes`.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        count += bytes.count
        let last = chunks.count - 1
        if last >= head, chunks[last].count + bytes.count <= Self.coalesceBytes {
            chunks[last].append(contentsOf: bytes)
        } else {
            chunks.append(Array(bytes))
        }
    }

    /// Queues `bytes[start...]`, keeping the array itself when it is large.
    mutating func append(_ bytes: [UInt8], from start: Int) {
        let rest = bytes.count - start
        guard rest > 0 else { return }
        if rest < Self.coalesceBytes {
            bytes.withUnsafeBytes { append(UnsafeRawBufferPointer(rebasing: $0[start...])) }
            return
        }
        if isEmpty {
            chunks = [bytes]
            head = 0
            offset = start
        } else if start == 0 {
            chunks.append(bytes)
        } else {
            chunks.append(Array(bytes[start...]))
        }
        count += rest
    }

    /// Calls `body` with the first unsent bytes (empty when nothing is queued).
    func withFirst<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        guard head < chunks.count else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return chunks[head].withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
    }

    /// Marks `n` bytes from the start as sent (at most the first chunk's unsent bytes).
    mutating func consume(_ n: Int) {
        guard n > 0 else { return }
        count -= n
        offset += n
        guard offset >= chunks[head].count else { return }
        head += 1
        offset = 0
        if head == chunks.count {
            removeAll()
        } else if head >= 16 && head * 2 >= chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }

    /// Drops everything queued and its storage.
    mutating func removeAll() {
        chunks = []
        head = 0
        offset = 0
        count = 0
    }
}
