import Foundation

/// An HTTP request method.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let get = HTTPMethod(rawValue: "GET")
    public static let head = HTTPMethod(rawValue: "HEAD")
    public static let post = HTTPMethod(rawValue: "POST")
    public static let put = HTTPMethod(rawValue: "PUT")
    public static let patch = HTTPMethod(rawValue: "PATCH")
    public static let delete = HTTPMethod(rawValue: "DELETE")
    public static let options = HTTPMethod(rawValue: "OPTIONS")
    public var description: String { rawValue }
    /// Sending it twice means the same as once (RFC 9110 §9.2.2): safe to retry.
    public var isIdempotent: Bool {
        switch rawValue {
        case "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE": return true
        default: return false
        }
    }
}

/// An HTTP status code with its reason phrase.
public struct HTTPStatus: Hashable, Sendable, CustomStringConvertible {
    public let code: Int
    public let reason: String
    public init(_ code: Int, _ reason: String) {
        self.code = code
        self.reason = reason
    }
    public static let ok = HTTPStatus(200, "OK")
    public static let created = HTTPStatus(201, "Created")
    public static let accepted = HTTPStatus(202, "Accepted")
    public static let noContent = HTTPStatus(204, "No Content")
    public static let switchingProtocols = HTTPStatus(101, "Switching Protocols")
    public static let badRequest = HTTPStatus(400, "Bad Request")
    public static let unauthorized = HTTPStatus(401, "Unauthorized")
    public static let forbidden = HTTPStatus(403, "Forbidden")
    public static let notFound = HTTPStatus(404, "Not Found")
    public static let methodNotAllowed = HTTPStatus(405, "Method Not Allowed")
    public static let requestTimeout = HTTPStatus(408, "Request Timeout")
    public static let conflict = HTTPStatus(409, "Conflict")
    public static let lengthRequired = HTTPStatus(411, "Length Required")
    public static let payloadTooLarge = HTTPStatus(413, "Content Too Large")
    public static let uriTooLong = HTTPStatus(414, "URI Too Long")
    public static let unsupportedMediaType = HTTPStatus(415, "Unsupported Media Type")
    public static let upgradeRequired = HTTPStatus(426, "Upgrade Required")
    public static let tooManyRequests = HTTPStatus(429, "Too Many Requests")
    public static let headersTooLarge = HTTPStatus(431, "Request Header Fields Too Large")
    public static let internalServerError = HTTPStatus(500, "Internal Server Error")
    public static let notImplemented = HTTPStatus(501, "Not Implemented")
    public static let serviceUnavailable = HTTPStatus(503, "Service Unavailable")
    public static let versionNotSupported = HTTPStatus(505, "HTTP Version Not Supported")
    public var description: String { "\(code) \(reason)" }
}

/// Header fields in order; names compare case-insensitively.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}
    public init(dictionaryLiteral elements: (String, String)...) {
        for (n, v) in elements { add(n, v) }
    }

    /// Appends a field.
    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

    /// Replaces every field called `name` with one.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    /// Removes every field called `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
    }

    /// The first value of `name`.
    public subscript(_ name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// Whether a comma-separated header `name` lists `token` (case-insensitive).
    public func containsToken(_ name: String, _ token: String) -> Bool {
        values(name).contains { value in
            value.split(separator: ",").contains {
                $0.trimmingWhitespace().caseInsensitiveEquals(token)
            }
        }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}

extension StringProtocol {
    /// `trimmingCharacters(in: .whitespaces)`, without Foundation for ASCII text (nearly every
    /// header value), where the only such characters are the space and the tab.
    func trimmingWhitespace() -> String {
        let text = String(self)
        let bytes = text.utf8
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return text.trimmingCharacters(in: .whitespaces) }
        let isBlank = { (b: UInt8) in b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isBlank($0) }),
            let last = bytes.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    func caseInsensitiveEquals<S: StringProtocol>(_ other: S) -> Bool {
        let a = utf8
        let b = other.utf8
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) where x != y {
            let lx = (x >= 65 && x <= 90) ? x + 32 : x
            let ly = (y >= 65 && y <= 90) ? y + 32 : y
            if lx != ly { return false }
        }
        return true
    }
}

/// A parsed HTTP request as handed to routes.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The request target as sent (`/path?query`).
    public var target: String
    /// The path part of the target, not percent-decoded.
    public var path: String
    /// The query string after `?`, if any.
    public var query: String?
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var minorVersion: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The TCP peer.
    public var remoteAddress: SocketAddress?
    /// The client as far as we can trust it: the TCP peer, or the address a trusted proxy put in
    /// `X-Forwarded-For`/`X-Real-IP`.
    public var clientAddress: IPAddress?
    /// Values of `:name` segments of the matched route.
    public var pathParameters: [String: String] = [:]

    public init(
        method: HTTPMethod, target: String, minorVersion: Int = 1, headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = []
    ) {
        self.method = method
        self.target = target
        if let q = target.firstIndex(of: "?") {
            path = String(target[..<q])
            query = String(target[target.index(after: q)...])
        } else {
            path = target
            query = nil
        }
        self.minorVersion = minorVersion
        self.headers = headers
        self.body = body
    }

    /// Query parameters (`a=1&b=2`), percent-decoded; later duplicates win.
    public var queryParameters: [String: String] {
        guard let query else { return [:] }
        var out: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            out[Self.formDecoded(kv[0])] = kv.count > 1 ? Self.formDecoded(kv[1]) : ""
        }
        return out
    }

    /// `+` as a space, then percent-decoded ("" when that fails). Foundation's two passes are
    /// slow and most parts (`wait=30`) have neither character: those are taken as they are.
    private static func formDecoded(_ part: Substring) -> String {
        guard part.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "%") }) else {
            return String(part)
        }
        return String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
    }

    /// Whether the client asked to keep the connection open.
    public var keepAlive: Bool {
        if headers.containsToken("Connection", "close") { return false }
        if minorVersion == 0 { return headers.containsToken("Connection", "keep-alive") }
        return true
    }

    /// Decodes the body as JSON.
    public func decodeJSON<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(body))
    }
}

/// An HTTP response.
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The `x` of the `HTTP/1.x` a received response came in (responses sent here are HTTP/1.1).
    public var minorVersion = 1

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response from an `Encodable` value.
    public static func json<T: Encodable>(_ value: T, status: HTTPStatus = .ok) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(value)).map { Array($0) } ?? Array("null".utf8)
        return HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: body)
    }

    /// A JSON error body `{"error": code, "message": message}`.
    public static func error(_ status: HTTPStatus, code: String, message: String) -> HTTPResponse {
        json(["error": code, "message": message], status: status)
    }

    /// A plain-text response.
    public static func text(_ text: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }

    /// Decodes the body as JSON.
    public func decodeJSON<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(body))
    }

    /// The body as UTF-8 text.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// Whether the server lets the connection carry another request (HTTP/1.1 without
    /// `Connection: close`).
    public var allowsReuse: Bool {
        minorVersion == 1 && !headers.containsToken("Connection", "close")
    }

    /// Serialises status line, headers (adding `Content-Length`) and body.
    func serialized(keepAlive: Bool, includeBody: Bool = true) -> [UInt8] {
        var head = "HTTP/1.1 \(status.code) \(status.reason)\r\n"
        for (name, value) in headers where !name.caseInsensitiveEquals("Content-Length") {
            head += "\(name): \(value)\r\n"
        }
        if status.code >= 200 && status.code != 204 && status.code != 304 {
            head += "Content-Length: \(body.count)\r\n"
        }
        if !keepAlive && headers["Connection"] == nil { head += "Connection: close\r\n" }
        head += "\r\n"
        var out = Array(head.utf8)
        if includeBody { out += body }
        return out
    }
}
