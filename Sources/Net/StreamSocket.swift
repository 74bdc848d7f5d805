import Foundation
import Synchronization

private let nextStreamID = Atomic<UInt64>(1)

/// A raw TCP connection accepted by a ``Server`` whose first byte is not the start of an HTTP
/// request (see ``Server/rawStreams(onOpen:)``): bytes in, bytes out, no framing. Loop-confined
/// like the connection: every method must run on ``loop`` (handlers do), which is what lets a
/// relay forward from one stream to another without a lock or a copy.
public final class StreamSocket: @unchecked Sendable {
    /// A process-unique id.
    public let id: UInt64
    /// The loop this stream lives on; handlers run on its thread.
    public let loop: EventLoop
    /// The TCP peer.
    public let remoteAddress: SocketAddress?
    unowned(unsafe) let connection: ServerConnection
    private var dataHandler: ((StreamSocket, UnsafeRawBufferPointer) -> Void)?
    private var closeHandler: ((StreamSocket) -> Void)?
    private var drainHandler: ((StreamSocket) -> Void)?
    /// Bytes that arrived before a data handler was set.
    private var early: [UInt8] = []
    private(set) public var isClosed = false

    init(connection: ServerConnection) {
        id = nextStreamID.add(1, ordering: .relaxed).oldValue
        self.connection = connection
        loop = connection.loop
        remoteAddress = connection.peer
    }

    /// Called with every chunk read (the buffer is valid only during the call).
    public func onData(_ handler: @escaping (StreamSocket, UnsafeRawBufferPointer) -> Void) {
        dataHandler = handler
        if !early.isEmpty {
            let bytes = early
            early = []
            bytes.withUnsafeBytes { handler(self, $0) }
        }
    }

    /// Called once when the connection is gone (either side closed it, or it failed).
    public func onClose(_ handler: @escaping (StreamSocket) -> Void) { closeHandler = handler }

    /// Called whenever everything queued for sending has gone to the kernel.
    public func onDrained(_ handler: @escaping (StreamSocket) -> Void) { drainHandler = handler }

    /// Queues bytes (written at once when nothing waits). A peer that does not read is dropped
    /// once ``ServerLimits/maxOutputBytesPerConnection`` waits for it.
    public func send(_ bytes: UnsafeRawBufferPointer) { connection.write(bytes) }
    public func send(_ bytes: [UInt8]) { connection.write(bytes) }

    /// Bytes queued and not yet taken by the kernel.
    public var pendingOutputBytes: Int { connection.pendingOutputCount }

    /// Stops reading (input waits in the kernel, which slows the sender down).
    public func pauseReading() { connection.pauseReading() }
    public func resumeReading() { connection.resumeReading() }

    /// Sends what is queued, then closes.
    public func close() { connection.closeAfterFlush() }

    // MARK: From the connection

    func deliver(_ bytes: UnsafeRawBufferPointer) {
        guard let dataHandler else {
            early.append(contentsOf: bytes)
            return
        }
        dataHandler(self, bytes)
    }

    func drained() { drainHandler?(self) }

    func closed() {
        guard !isClosed else { return }
        isClosed = true
        let handler = closeHandler
        dataHandler = nil
        closeHandler = nil
        drainHandler = nil
        handler?(self)
    }
}
