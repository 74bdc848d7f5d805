import Foundation
import Net
import TestSupport

/// A server on 127.0.0.1 with an echo WebSocket at `/echo` and a few JSON routes.
func makeEchoServer(
    configure: (inout ServerConfiguration) -> Void = { _ in }, router: HTTPRouter = HTTPRouter()
) throws -> Server {
    var config = ServerConfiguration(host: "127.0.0.1", port: 0)
    config.loopCount = 2
    configure(&config)
    router.get("/hello") { _ in .json(["hello": "world"]) }
    router.post("/echo-json") { request in
        HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: request.body)
    }
    router.get("/items/:id") { request in .json(["id": request.pathParameters["id"] ?? ""]) }
    router.get("/client") { request in .json(["ip": request.clientAddress?.description ?? ""]) }
    let server = Server(configuration: config, router: router)
    server.webSocket(path: "/echo") { socket, _ in
        socket.onMessage { socket, message in socket.send(message) }
    }
    server.webSocket(path: "/close-me") { socket, _ in
        socket.close(code: WebSocketCloseCode(rawValue: 4000), reason: "bye")
    }
    try server.start()
    return server
}

/// A blocking raw TCP client for malformed-input tests.
final class RawClient {
    private(set) var fd: Int32

    init(port: UInt16, host: String = "127.0.0.1") throws {
        let isV6 = host.contains(":")
        fd = socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let rc: Int32
        if isV6 {
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_port = port.bigEndian
            inet_pton(AF_INET6, host, &addr.sin6_addr)
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = port.bigEndian
            inet_pton(AF_INET, host, &addr.sin_addr)
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        if rc != 0 { throw TestSupportError.system("connect", errno) }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Closes with an immediate RST (linger 0). The descriptor is given up here, once: closing it
    /// again in deinit could close a socket another test has opened under the same number.
    func reset() {
        guard fd >= 0 else { return }
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close(fd)
        fd = -1
    }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Reads until `predicate` holds on everything read, EOF, or the timeout.
    func read(until predicate: ([UInt8]) -> Bool = { _ in false }, timeout: Double = 5) -> (
        bytes: [UInt8], eof: Bool
    ) {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 {
                out += buffer[0..<n]
                if predicate(out) { return (out, false) }
            } else if n == 0 {
                return (out, true)
            } else if errno == ECONNRESET {
                return (out, true)
            } else if errno != EAGAIN && errno != EINTR {
                return (out, true)
            }
        }
        return (out, false)
    }

    /// Reads an HTTP head.
    func readHead() -> String {
        let (bytes, _) = read(until: {
            $0.count >= 4 && String(decoding: $0, as: UTF8.self).contains("\r\n\r\n")
        })
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Sends a valid upgrade request and reads the 101.
    func upgrade(path: String = "/echo") -> String {
        send(
            "GET \(path) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        return readHead()
    }

    /// A client frame (masked unless told otherwise).
    static func frame(
        _ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, rsv: UInt8 = 0
    ) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | rsv | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            out.append(maskBit | UInt8(payload.count))
        } else if payload.count < 65536 {
            out += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(maskBit | 127)
            for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8((payload.count >> s) & 0xFF)) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        if masked {
            out += mask
            for (i, b) in payload.enumerated() { out.append(b ^ mask[i % 4]) }
        } else {
            out += payload
        }
        return out
    }

    /// Reads server frames until a close frame arrives (or EOF); returns the close code.
    func readCloseCode(timeout: Double = 5) -> UInt16? {
        var buffer: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let (bytes, eof) = read(until: { _ in true }, timeout: max(0.05, deadline.timeIntervalSinceNow))
            buffer += bytes
            while let (frame, used) = try? WebSocketFrameCodec.parse(
                buffer, expectMasked: false, maxPayload: 1 << 24)
            {
                buffer.removeFirst(used)
                if frame.opcode == .close {
                    return frame.payload.count >= 2
                        ? UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]) : 1005
                }
            }
            if eof { return nil }
        }
        return nil
    }
}

/// ``TestSupport/eventually(timeout:_:)`` with the Net tests' shorter bound.
func eventually(timeout: Double = 5, _ condition: () -> Bool) -> Bool {
    TestSupport.eventually(timeout: timeout, condition)
}
