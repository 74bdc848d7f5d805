import CNet
import COpenSSL
import Foundation

/// A client socket driven by the one thread that uses it: `connect`, the TLS handshake, reads
/// and writes happen on the caller's thread, which waits for readiness in `poll` up to its own
/// deadline. The blocking clients (``HTTPClient/send(_:url:headers:body:tls:timeout:)``,
/// ``BlockingWebSocket``) use it instead of an event loop: a loop thread that reads the answer
/// and wakes the waiting caller costs a context switch and a futex each way per message, which
/// on a busy machine is a good share of a short exchange. Used by one thread at a time.
final class DirectTransport {
    let fd: Int32
    let remote: SocketAddress
    private var tls: TLSStream?
    private(set) var isClosed = false

    private init(fd: Int32, remote: SocketAddress, tls: TLSStream?) {
        self.fd = fd
        self.remote = remote
        self.tls = tls
    }

    deinit { close() }

    /// Connects to `url`'s host, trying each resolved address in turn, and completes the TLS
    /// handshake for `https`/`wss`, all by `deadline` (monotonic nanoseconds; the timeout is
    /// named in the error).
    static func open(
        _ url: NetURL, tls config: TLSClientConfiguration, deadline: UInt64, timeout: Duration
    ) throws(NetError) -> DirectTransport {
        let context = url.isSecure ? try clientContext(config) : nil
        let addresses = try SocketAddress.resolve(host: url.host, port: url.port)
        for (index, address) in addresses.enumerated() {
            do throws(NetError) {
                return try open(
                    address, context: context, host: url.host, deadline: deadline, timeout: timeout)
            } catch  where error.code == .connectFailed && index < addresses.count - 1 {
                continue
            }
        }
        throw NetError(.connectFailed, "No address of \(url.host) to connect to")
    }

    private static func open(
        _ address: SocketAddress, context: TLSContext?, host: String, deadline: UInt64, timeout: Duration
    ) throws(NetError) -> DirectTransport {
        let fd = try Sockets.startConnect(to: address)
        let transport: DirectTransport
        do throws(NetError) {
            transport = DirectTransport(
                fd: fd, remote: address,
                tls: try context.map { context throws(NetError) in
                    try TLSStream(context: context, fd: fd, hostName: host)
                })
        } catch {
            Glibc.close(fd)
            throw error
        }
        // The non-blocking connect is done once the socket is writable.
        guard try transport.wait(POLLOUT, until: deadline) else {
            throw NetError(.timedOut, "No answer from \(address) within \(timeout)")
        }
        let pending = Sockets.pendingError(fd)
        if pending != 0 { throw NetError.system(.connectFailed, "connect", pending) }
        if let tls = transport.tls {
            while true {
                let ready: Bool
                switch tls.handshake() {
                case .done: return transport
                case .wantRead: ready = try transport.wait(POLLIN, until: deadline)
                case .wantWrite: ready = try transport.wait(POLLOUT, until: deadline)
                case .eof: throw NetError(.handshakeFailed, "Connection closed during the TLS handshake")
                case .failed(let message): throw NetError(.tlsError, "TLS handshake failed: \(message)")
                }
                if !ready { throw NetError(.timedOut, "No answer from \(address) within \(timeout)") }
            }
        }
        return transport
    }

    /// Waits until the socket is ready for `events` (or has failed: the next call tells);
    /// false when `deadline` passed first.
    private func wait(_ events: Int32, until deadline: UInt64) throws(NetError) -> Bool {
        while true {
            let now = monotonicNanos()
            let remaining = deadline > now ? deadline - now : 0
            // Round up, so a wait does not end just before its deadline and spin.
            let milliseconds = Int32(
                min(remaining / 1_000_000 + (remaining % 1_000_000 == 0 ? 0 : 1), 1 << 30))
            var entry = pollfd(fd: fd, events: Int16(events), revents: 0)
            let n = poll(&entry, 1, milliseconds)
            if n > 0 { return true }
            if n == 0 {
                if monotonicNanos() >= deadline { return false }
                continue
            }
            if errno != EINTR { throw NetError.system(.connectionClosed, "poll", errno) }
        }
    }

    /// Reads what is there into `buffer`, waiting for it up to `deadline`: the byte count, 0
    /// at the end of the stream, nil when the deadline passed first.
    func read(into buffer: UnsafeMutableRawBufferPointer, until deadline: UInt64) throws(NetError) -> Int? {
        guard !isClosed else { throw NetError(.connectionClosed, "Connection closed") }
        if let tls {
            // Decrypted bytes may wait inside OpenSSL, where poll cannot see them: read first.
            while true {
                let ready: Bool
                switch tls.read(into: buffer) {
                case .done(let n): return n
                case .eof: return 0
                case .failed(let message): throw NetError(.tlsError, message)
                case .wantRead: ready = try wait(POLLIN, until: deadline)
                case .wantWrite: ready = try wait(POLLOUT, until: deadline)
                }
                if !ready { return nil }
            }
        }
        // Plain sockets: the answer is rarely there yet when a caller starts to wait, so poll
        // first rather than spend a read on EAGAIN.
        while true {
            guard try wait(POLLIN, until: deadline) else { return nil }
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            let e = errno
            if e != EAGAIN && e != EWOULDBLOCK && e != EINTR {
                throw NetError.system(.connectionClosed, "read", e)
            }
        }
    }

    /// ``read(into:until:)`` onto the end of `bytes` (at most 16 KiB at a time).
    func read(appendingTo bytes: inout [UInt8], until deadline: UInt64) throws(NetError) -> Int? {
        let old = bytes.count
        let room = 16384
        // Room at the end, trimmed to what was read: no second buffer to copy from.
        var outcome: Result<Int?, NetError> = .success(nil)
        bytes.append(contentsOf: repeatElement(0, count: room))
        bytes.withUnsafeMutableBytes { buffer in
            do throws(NetError) {
                outcome = .success(
                    try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[old...]), until: deadline))
            } catch {
                outcome = .failure(error)
            }
        }
        let count = (try? outcome.get()) ?? nil
        bytes.removeLast(room - (count ?? 0))
        return try outcome.get()
    }

    /// Writes all of `bytes`, waiting for room in the kernel up to `deadline`; false when the
    /// deadline passed with bytes unsent (the stream is then out of step: close it).
    func write(_ bytes: UnsafeRawBufferPointer, until deadline: UInt64) throws(NetError) -> Bool {
        guard !isClosed else { throw NetError(.connectionClosed, "Connection closed") }
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            var waitFor = POLLOUT
            if let tls {
                switch tls.write(rest) {
                case .done(let n):
                    offset += n
                    continue
                case .wantRead: waitFor = POLLIN
                case .wantWrite: break
                case .eof: throw NetError(.connectionClosed, "TLS session closed")
                case .failed(let message): throw NetError(.tlsError, message)
                }
            } else {
                let n = send(fd, rest.baseAddress, rest.count, Int32(MSG_NOSIGNAL))
                if n >= 0 {
                    offset += n
                    continue
                }
                let e = errno
                if e != EAGAIN && e != EWOULDBLOCK && e != EINTR {
                    throw NetError.system(.connectionClosed, "send", e)
                }
            }
            guard try wait(waitFor, until: deadline) else { return false }
        }
        return true
    }

    /// ``write(_:until:)`` for an array.
    func write(_ bytes: [UInt8], until deadline: UInt64) throws(NetError) -> Bool {
        let result: Result<Bool, NetError> = bytes.withUnsafeBytes { raw in
            do throws(NetError) {
                return .success(try write(raw, until: deadline))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Whether the kernel still holds the connection open with nothing unasked to read (see
    /// ``Sockets/peerStillOpen(_:tls:)``).
    var peerStillOpen: Bool { !isClosed && Sockets.peerStillOpen(fd, tls: tls != nil) }

    /// Closes the socket (with a TLS close_notify first, best effort).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        tls?.shutdown()
        tls = nil
        Glibc.close(fd)
    }
}

extension Sockets {
    /// Whether the kernel still holds an idle client connection open with nothing unasked to
    /// read (a TLS peer may send session records between answers: those are not a sign of
    /// death).
    static func peerStillOpen(_ fd: Int32, tls: Bool) -> Bool {
        var byte: UInt8 = 0
        let n = Glibc.recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if n > 0 { return tls }
        if n == 0 { return false }
        return errno == EAGAIN || errno == EWOULDBLOCK
    }
}
