/// Limits the HTTP parser enforces on one request or response.
public struct HTTPParserLimits: Sendable {
    /// Longest request line (method, target, version), bytes.
    public var maxRequestLineBytes = 8192
    /// Largest header block (all field lines), bytes.
    public var maxHeaderBytes = 16384
    /// Most header fields.
    public var maxHeaderCount = 100
    /// Largest body, bytes.
    public var maxBodyBytes = 1 << 20
    public init() {}
}

/// Why a request was refused; each maps to the 4xx/5xx status the server answers with.
public struct HTTPParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let status: HTTPStatus
    public let message: String
    init(_ status: HTTPStatus, _ message: String) {
        self.status = status
        self.message = message
    }
    public var description: String { "\(status): \(message)" }
}

/// A strict, incremental-by-reparse HTTP/1.1 request parser: give it everything buffered so far;
/// it returns nil until a whole request (head and body) is there. No I/O, no state.
public enum HTTPRequestParser {
    /// Parses one request from the start of `bytes`. Returns the request and the bytes it used,
    /// nil if more bytes are needed, or throws for a malformed or over-limit request.
    public static func parse(
        _ bytes: UnsafeRawBufferPointer, limits: HTTPParserLimits = HTTPParserLimits()
    ) throws(HTTPParseError) -> (request: HTTPRequest, consumed: Int)? {
        guard let (head, headEnd) = try parseHead(bytes, limits: limits) else { return nil }
        var request = head
        guard
            let (body, consumed) = try parseBody(
                bytes, from: headEnd, headers: request.headers, limits: limits, isRequest: true, atEOF: false)
        else { return nil }
        request.body = body
        return (request, consumed)
    }

    /// Parses only the request line and header fields (the body, if any, follows at
    /// `headLength`). Used to answer `Expect: 100-continue`.
    public static func parseHead(
        _ bytes: UnsafeRawBufferPointer, limits: HTTPParserLimits = HTTPParserLimits()
    ) throws(HTTPParseError) -> (request: HTTPRequest, headLength: Int)? {
        var cursor = ByteCursor(bytes)
        // Request line.
        guard let lineEnd = cursor.findCRLF(limit: limits.maxRequestLineBytes) else {
            if bytes.count > limits.maxRequestLineBytes {
                throw HTTPParseError(
                    .uriTooLong, "Request line is longer than \(limits.maxRequestLineBytes) bytes")
            }
            try cursor.rejectBareLF(upTo: bytes.count)
            return nil
        }
        let line = cursor.take(lineEnd - cursor.position)
        cursor.skip(2)
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw HTTPParseError(.badRequest, "Malformed request line") }
        guard !parts[0].isEmpty, parts[0].allSatisfy(isTokenChar) else {
            throw HTTPParseError(.badRequest, "Malformed method")
        }
        let method = HTTPMethod(rawValue: String(decoding: parts[0], as: UTF8.self))
        let targetBytes = parts[1]
        guard !targetBytes.isEmpty, targetBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPParseError(.badRequest, "Malformed request target")
        }
        let target = String(decoding: targetBytes, as: UTF8.self)
        guard target.hasPrefix("/") || (target == "*" && method == .options) else {
            throw HTTPParseError(.badRequest, "Request target must be an absolute path")
        }
        let minor = try parseVersion(parts[2], isRequest: true)

        let (headers, headEnd) = try parseHeaders(&cursor, limits: limits, start: lineEnd + 2)
        guard let headers else { return nil }

        let hosts = headers.values("Host")
        if minor == 1 && hosts.count != 1 {
            throw HTTPParseError(.badRequest, hosts.isEmpty ? "Missing Host header" : "Duplicate Host header")
        }
        return (HTTPRequest(method: method, target: target, minorVersion: minor, headers: headers), headEnd)
    }

    /// Convenience for arrays.
    public static func parse(
        _ bytes: [UInt8], limits: HTTPParserLimits = HTTPParserLimits()
    ) throws(HTTPParseError) -> (request: HTTPRequest, consumed: Int)? {
        do {
            return try bytes.withUnsafeBytes { raw in try parse(raw, limits: limits) }
        } catch let error as HTTPParseError {
            throw error
        } catch {
            throw HTTPParseError(.badRequest, "\(error)")
        }
    }
}

/// Parses HTTP/1.x responses (for the clients).
public enum HTTPResponseParser {
    /// ``parse(_:limits:atEOF:headOnly:)`` for an array (the blocking clients' buffer).
    static func parse(
        _ bytes: [UInt8], limits: HTTPParserLimits = HTTPParserLimits(), atEOF: Bool = false,
        headOnly: Bool = false
    ) throws(HTTPParseError) -> (response: HTTPResponse, consumed: Int)? {
        let result: Result<(response: HTTPResponse, consumed: Int)?, HTTPParseError> = bytes.withUnsafeBytes {
            do throws(HTTPParseError) {
                return .success(try parse($0, limits: limits, atEOF: atEOF, headOnly: headOnly))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses one response from the start of `bytes`. `atEOF` says the peer has closed, which
    /// ends a body delimited by the connection close. `headOnly` for responses to HEAD and 101.
    public static func parse(
        _ bytes: UnsafeRawBufferPointer, limits: HTTPParserLimits = HTTPParserLimits(), atEOF: Bool = false,
        headOnly: Bool = false
    ) throws(HTTPParseError) -> (response: HTTPResponse, consumed: Int)? {
        var cursor = ByteCursor(bytes)
        guard let lineEnd = cursor.findCRLF(limit: limits.maxRequestLineBytes) else {
            if bytes.count > limits.maxRequestLineBytes {
                throw HTTPParseError(.badRequest, "Status line too long")
            }
            if atEOF { throw HTTPParseError(.badRequest, "Connection closed before a response") }
            return nil
        }
        let line = cursor.take(lineEnd - cursor.position)
        cursor.skip(2)
        let parts = line.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2 else { throw HTTPParseError(.badRequest, "Malformed status line") }
        let minorVersion = try parseVersion(parts[0], isRequest: false)
        guard parts[1].count == 3, parts[1].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let code = Int(String(decoding: parts[1], as: UTF8.self))
        else { throw HTTPParseError(.badRequest, "Malformed status code") }
        let reason = parts.count == 3 ? String(decoding: parts[2], as: UTF8.self) : ""
        let (headers, headEnd) = try parseHeaders(&cursor, limits: limits, start: lineEnd + 2)
        guard let headers else {
            if atEOF { throw HTTPParseError(.badRequest, "Connection closed inside the response head") }
            return nil
        }
        var response = HTTPResponse(status: HTTPStatus(code, reason), headers: headers)
        response.minorVersion = minorVersion
        if headOnly || code == 204 || code == 304 || code < 200 {
            return (response, headEnd)
        }
        guard
            let (body, consumed) = try parseBody(
                bytes, from: headEnd, headers: headers, limits: limits, isRequest: false, atEOF: atEOF)
        else { return nil }
        response.body = body
        return (response, consumed)
    }
}

// MARK: Shared pieces

private func isTokenChar(_ c: UInt8) -> Bool {
    switch c {
    case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
        UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
        UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        return true
    default: return false
    }
}

private func parseVersion(_ v: ArraySlice<UInt8>, isRequest: Bool) throws(HTTPParseError) -> Int {
    let text = String(decoding: v, as: UTF8.self)
    switch text {
    case "HTTP/1.1": return 1
    case "HTTP/1.0": return 0
    default:
        if text.hasPrefix("HTTP/") && text.count == 8 && isRequest {
            throw HTTPParseError(.versionNotSupported, "Only HTTP/1.0 and HTTP/1.1 are supported")
        }
        throw HTTPParseError(.badRequest, "Malformed HTTP version")
    }
}

/// Parses field lines up to the empty line. Returns nil headers when more bytes are needed.
private func parseHeaders(
    _ cursor: inout ByteCursor, limits: HTTPParserLimits, start: Int
) throws(HTTPParseError) -> (HTTPHeaders?, Int) {
    var headers = HTTPHeaders()
    var count = 0
    while true {
        let remaining = limits.maxHeaderBytes - (cursor.position - start)
        guard let end = cursor.findCRLF(limit: max(0, remaining) + 2) else {
            if cursor.count - start > limits.maxHeaderBytes {
                throw HTTPParseError(
                    .headersTooLarge, "Header block is larger than \(limits.maxHeaderBytes) bytes")
            }
            try cursor.rejectBareLF(upTo: cursor.count)
            return (nil, 0)
        }
        if end == cursor.position {
            cursor.skip(2)
            return (headers, cursor.position)
        }
        if end - start > limits.maxHeaderBytes {
            throw HTTPParseError(
                .headersTooLarge, "Header block is larger than \(limits.maxHeaderBytes) bytes")
        }
        let line = cursor.take(end - cursor.position)
        cursor.skip(2)
        count += 1
        if count > limits.maxHeaderCount {
            throw HTTPParseError(.headersTooLarge, "More than \(limits.maxHeaderCount) header fields")
        }
        guard let first = line.first, first != 0x20, first != 0x09 else {
            throw HTTPParseError(.badRequest, "Folded header lines are not allowed")
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            throw HTTPParseError(.badRequest, "Header line without a colon")
        }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenChar) else {
            throw HTTPParseError(.badRequest, "Malformed header name")
        }
        var value = line[(colon + 1)...]
        while let f = value.first, f == 0x20 || f == 0x09 { value = value.dropFirst() }
        while let l = value.last, l == 0x20 || l == 0x09 { value = value.dropLast() }
        guard value.allSatisfy({ $0 >= 0x20 || $0 == 0x09 }), !value.contains(0x7F) else {
            throw HTTPParseError(.badRequest, "Control character in header value")
        }
        headers.add(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }
}

private func parseBody(
    _ bytes: UnsafeRawBufferPointer, from start: Int, headers: HTTPHeaders, limits: HTTPParserLimits,
    isRequest: Bool, atEOF: Bool
) throws(HTTPParseError) -> ([UInt8], Int)? {
    let transferEncodings = headers.values("Transfer-Encoding")
    let lengths = headers.values("Content-Length")
    if !transferEncodings.isEmpty {
        if !lengths.isEmpty {
            throw HTTPParseError(.badRequest, "Both Transfer-Encoding and Content-Length are present")
        }
        let codings = transferEncodings.flatMap { $0.split(separator: ",") }.map {
            $0.trimmingWhitespace().lowercased()
        }
        guard codings == ["chunked"] else {
            throw HTTPParseError(.notImplemented, "Only the chunked transfer coding is supported")
        }
        return try parseChunked(bytes, from: start, limits: limits)
    }
    if !lengths.isEmpty {
        var length: Int?
        for field in lengths {
            for item in field.split(separator: ",", omittingEmptySubsequences: false) {
                let digits = item.trimmingWhitespace()
                guard !digits.isEmpty, digits.count <= 15,
                    digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                    let n = Int(digits)
                else { throw HTTPParseError(.badRequest, "Malformed Content-Length") }
                if let length, length != n {
                    throw HTTPParseError(.badRequest, "Conflicting Content-Length values")
                }
                length = n
            }
        }
        let n = length ?? 0
        if n > limits.maxBodyBytes {
            throw HTTPParseError(.payloadTooLarge, "Body is larger than \(limits.maxBodyBytes) bytes")
        }
        guard bytes.count - start >= n else {
            if atEOF { throw HTTPParseError(.badRequest, "Connection closed inside the body") }
            return nil
        }
        return (Array(bytes[start..<(start + n)]), start + n)
    }
    if isRequest { return ([], start) }
    // A response without a length runs to the end of the connection.
    if bytes.count - start > limits.maxBodyBytes {
        throw HTTPParseError(.payloadTooLarge, "Body is larger than \(limits.maxBodyBytes) bytes")
    }
    guard atEOF else { return nil }
    return (Array(bytes[start...]), bytes.count)
}

private func parseChunked(
    _ bytes: UnsafeRawBufferPointer, from start: Int, limits: HTTPParserLimits
) throws(HTTPParseError) -> ([UInt8], Int)? {
    var cursor = ByteCursor(bytes)
    cursor.skip(start)
    var body: [UInt8] = []
    while true {
        guard let end = cursor.findCRLF(limit: 1024) else {
            if cursor.count - cursor.position > 1024 {
                throw HTTPParseError(.badRequest, "Chunk size line too long")
            }
            return nil
        }
        let line = cursor.take(end - cursor.position)
        cursor.skip(2)
        let sizePart = line.prefix { $0 != UInt8(ascii: ";") }
        guard !sizePart.isEmpty, sizePart.count <= 8 else {
            throw HTTPParseError(.badRequest, "Malformed chunk size")
        }
        var size = 0
        for c in sizePart {
            let digit: Int
            switch c {
            case 0x30...0x39: digit = Int(c - 0x30)
            case 0x41...0x46: digit = Int(c - 0x41 + 10)
            case 0x61...0x66: digit = Int(c - 0x61 + 10)
            default: throw HTTPParseError(.badRequest, "Malformed chunk size")
            }
            size = size * 16 + digit
        }
        if size == 0 {
            // Trailer fields, then the empty line.
            var trailerBytes = 0
            while true {
                guard let tEnd = cursor.findCRLF(limit: limits.maxHeaderBytes + 2) else {
                    if cursor.count - cursor.position > limits.maxHeaderBytes {
                        throw HTTPParseError(.headersTooLarge, "Trailer too large")
                    }
                    return nil
                }
                let length = tEnd - cursor.position
                cursor.skip(length + 2)
                if length == 0 { return (body, cursor.position) }
                trailerBytes += length
                if trailerBytes > limits.maxHeaderBytes {
                    throw HTTPParseError(.headersTooLarge, "Trailer too large")
                }
            }
        }
        if body.count + size > limits.maxBodyBytes {
            throw HTTPParseError(.payloadTooLarge, "Body is larger than \(limits.maxBodyBytes) bytes")
        }
        guard cursor.count - cursor.position >= size + 2 else { return nil }
        body.append(contentsOf: cursor.take(size))
        guard cursor.byte(at: cursor.position) == 0x0D, cursor.byte(at: cursor.position + 1) == 0x0A else {
            throw HTTPParseError(.badRequest, "Chunk data not followed by CRLF")
        }
        cursor.skip(2)
    }
}

/// A read position over a byte buffer.
struct ByteCursor {
    let bytes: UnsafeRawBufferPointer
    var position = 0
    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
    var count: Int { bytes.count }

    func byte(at i: Int) -> UInt8? { i < bytes.count ? bytes[i] : nil }

    /// Index of the next CRLF within `limit` bytes of the position.
    func findCRLF(limit: Int) -> Int? {
        let end = min(bytes.count, position + limit + 1)
        var i = position
        while i + 1 < end {
            if bytes[i] == 0x0D {
                if bytes[i + 1] == 0x0A { return i }
            }
            i += 1
        }
        return nil
    }

    /// A bare LF (without CR) or a CR not followed by LF is malformed in a strict parser.
    func rejectBareLF(upTo end: Int) throws(HTTPParseError) {
        var i = position
        while i < end {
            if bytes[i] == 0x0A && (i == 0 || bytes[i - 1] != 0x0D) {
                throw HTTPParseError(.badRequest, "Line ends with a bare LF")
            }
            i += 1
        }
    }

    mutating func take(_ n: Int) -> ArraySlice<UInt8> {
        let slice = ArraySlice(bytes[position..<(position + n)])
        position += n
        return slice
    }

    mutating func skip(_ n: Int) { position += n }
}
