import CNet
import Foundation

/// An IPv4 or IPv6 socket address.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The IP part alone.
    public let ip: IPAddress
    /// The port in host byte order.
    public let port: UInt16

    /// The address bytes (4 or 16).
    public var ipBytes: [UInt8] { ip.bytes }

    /// Whether this is an IPv6 address.
    public var isIPv6: Bool { ip.isIPv6 }

    /// Parses a numeric IPv4 or IPv6 host (`"127.0.0.1"`, `"::1"`, `"[::1]"`).
    public init?(numericHost host: String, port: UInt16) {
        var h = host
        if h.hasPrefix("[") && h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        guard let ip = IPAddress(h) else { return nil }
        self.ip = ip
        self.port = port
    }

    init(ipBytes: [UInt8], port: UInt16) {
        self.ip = IPAddress(bytes: ipBytes)
        self.port = port
    }

    public var description: String { isIPv6 ? "[\(ip)]:\(port)" : "\(ip):\(port)" }

    /// Resolves a host name or numeric address (blocking `getaddrinfo` for names).
    public static func resolve(host: String, port: UInt16) throws(NetError) -> [SocketAddress] {
        if let numeric = SocketAddress(numericHost: host, port: port) { return [numeric] }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            throw NetError(.resolveFailed, "Cannot resolve host \(host)")
        }
        defer { freeaddrinfo(first) }
        var out: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let ai = cursor {
            if let sa = ai.pointee.ai_addr, let address = SocketAddress(sockaddr: sa) { out.append(address) }
            cursor = ai.pointee.ai_next
        }
        if out.isEmpty { throw NetError(.resolveFailed, "Host \(host) has no address") }
        return out
    }

    init?(sockaddr sa: UnsafePointer<sockaddr>) {
        switch Int32(sa.pointee.sa_family) {
        case AF_INET:
            let sin = UnsafeRawPointer(sa).loadUnaligned(as: sockaddr_in.self)
            let raw = withUnsafeBytes(of: sin.sin_addr) { Array($0) }
            self.init(ipBytes: raw, port: UInt16(bigEndian: sin.sin_port))
        case AF_INET6:
            let sin6 = UnsafeRawPointer(sa).loadUnaligned(as: sockaddr_in6.self)
            var raw = withUnsafeBytes(of: sin6.sin6_addr) { Array($0) }
            // Report IPv4-mapped IPv6 peers (dual-stack sockets) as plain IPv4.
            if raw[0..<10].allSatisfy({ $0 == 0 }) && raw[10] == 0xFF && raw[11] == 0xFF {
                raw = Array(raw[12..<16])
            }
            self.init(ipBytes: raw, port: UInt16(bigEndian: sin6.sin6_port))
        default:
            return nil
        }
    }

    /// Calls `body` with a `sockaddr` for this address.
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        if isIPv6 {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sin6.sin6_addr) { $0.copyBytes(from: ipBytes) }
            return withUnsafePointer(to: &sin6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &sin.sin_addr) { $0.copyBytes(from: ipBytes) }
            return withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }
}

/// An IPv4 or IPv6 address without a port.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    // Stored inline (no heap allocation per connection): IPv4 in the low 32 bits of `low`.
    private let high: UInt64
    private let low: UInt64
    /// Whether this is an IPv6 address.
    public let isIPv6: Bool

    /// 4 or 16 bytes, network order.
    public var bytes: [UInt8] {
        if !isIPv6 { return (0..<4).map { UInt8(truncatingIfNeeded: low >> (24 - 8 * UInt64($0))) } }
        return (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
    }

    init(bytes: [UInt8]) {
        var h: UInt64 = 0
        var l: UInt64 = 0
        if bytes.count == 16 {
            for i in 0..<8 { h = h << 8 | UInt64(bytes[i]) }
            for i in 8..<16 { l = l << 8 | UInt64(bytes[i]) }
            isIPv6 = true
        } else {
            for b in bytes.prefix(4) { l = l << 8 | UInt64(b) }
            isIPv6 = false
        }
        high = h
        low = l
    }

    /// Parses a numeric IPv4 or IPv6 address; nil if it is not one.
    public init?(_ text: String) {
        if text.contains(":") {
            var a = in6_addr()
            guard inet_pton(AF_INET6, text, &a) == 1 else { return nil }
            var raw = withUnsafeBytes(of: a) { Array($0) }
            if raw[0..<10].allSatisfy({ $0 == 0 }) && raw[10] == 0xFF && raw[11] == 0xFF {
                raw = Array(raw[12..<16])
            }
            self.init(bytes: raw)
        } else {
            var a = in_addr()
            guard inet_pton(AF_INET, text, &a) == 1 else { return nil }
            self.init(bytes: withUnsafeBytes(of: a) { Array($0) })
        }
    }

    public var description: String {
        if !isIPv6 {
            // Digits written in place: the space server formats every request's client address
            // (about 1% of its CPU through arrays and `inet_ntop`). At most 15 bytes, which a
            // small string holds without an allocation.
            return String(unsafeUninitializedCapacity: 15) { text in
                var count = 0
                for shift: UInt64 in stride(from: 24, through: 0, by: -8) {
                    if shift != 24 {
                        text[count] = UInt8(ascii: ".")
                        count += 1
                    }
                    let byte = UInt8(truncatingIfNeeded: low >> shift)
                    if byte >= 100 {
                        text[count] = UInt8(ascii: "0") + byte / 100
                        count += 1
                    }
                    if byte >= 10 {
                        text[count] = UInt8(ascii: "0") + byte / 10 % 10
                        count += 1
                    }
                    text[count] = UInt8(ascii: "0") + byte % 10
                    count += 1
                }
                return count
            }
        }
        var buffer = [CChar](repeating: 0, count: 64)
        var a = in6_addr()
        withUnsafeMutableBytes(of: &a) { $0.copyBytes(from: bytes) }
        inet_ntop(AF_INET6, &a, &buffer, 64)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An address range such as `10.0.0.0/8` or `::1/128`, for trusted proxies.
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The network address.
    public let address: IPAddress
    /// The prefix length in bits.
    public let prefixLength: Int

    /// Parses `"a.b.c.d/n"`, `"x::/n"` or a bare address (a single host).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let ip = IPAddress(String(first)) else { return nil }
        let maxBits = ip.isIPv6 ? 128 : 32
        if parts.count == 2 {
            guard let n = Int(parts[1]), n >= 0, n <= maxBits else { return nil }
            prefixLength = n
        } else {
            prefixLength = maxBits
        }
        address = ip
    }

    /// Whether `ip` lies inside this network.
    public func contains(_ ip: IPAddress) -> Bool {
        guard ip.isIPv6 == address.isIPv6 else { return false }
        let a = ip.bytes
        let b = address.bytes
        var bits = prefixLength
        for i in 0..<a.count where bits > 0 {
            let take = min(8, bits)
            let mask: UInt8 = take == 8 ? 0xFF : ~(UInt8(0xFF) >> UInt8(take))
            if a[i] & mask != b[i] & mask { return false }
            bits -= take
        }
        return true
    }

    public var description: String { "\(address)/\(prefixLength)" }
}

/// Thin wrappers over the socket calls used by the loops.
enum Sockets {
    static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL, 0)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    /// A non-blocking listening socket bound to `address`.
    /// A listening socket. `firstOfGroup`: the first of this server's SO_REUSEPORT sockets on
    /// the address; SO_REUSEPORT would let it join a group another process of the same user holds
    /// on that port (the kernel would then split connections between the two servers), so a
    /// plain bind first makes a port in use an error, as it is without SO_REUSEPORT.
    static func listen(
        on address: SocketAddress, backlog: Int32, reusePort: Bool, firstOfGroup: Bool = false
    ) throws(NetError) -> Int32 {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        if reusePort && firstOfGroup && address.port != 0 {
            let probe = try listen(on: address, backlog: backlog, reusePort: false)
            Glibc.close(probe)
        }
        let fd = socket(
            family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NetError.system(.listenFailed, "socket", errno) }
        setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        if reusePort { setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1) }
        if address.isIPv6 { setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) }
        let rc = address.withSockaddr { Glibc.bind(fd, $0, $1) }
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            throw NetError.system(.listenFailed, "bind \(address)", e)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw NetError.system(.listenFailed, "listen \(address)", e)
        }
        return fd
    }

    static func localAddress(_ fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa -> SocketAddress? in
                guard getsockname(fd, sa, &len) == 0 else { return nil }
                return SocketAddress(sockaddr: sa)
            }
        }
    }

    /// Starts a non-blocking connect; returns the fd (connection may still be in progress).
    static func startConnect(to address: SocketAddress) throws(NetError) -> Int32 {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(
            family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NetError.system(.connectFailed, "socket", errno) }
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        if rc != 0 && errno != EINPROGRESS {
            let e = errno
            Glibc.close(fd)
            throw NetError.system(.connectFailed, "connect \(address)", e)
        }
        return fd
    }

    static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &len)
        return value
    }
}
