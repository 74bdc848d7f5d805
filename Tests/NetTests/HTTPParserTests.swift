import Foundation
import Net
import Testing

@Suite("HTTP request parser")
struct HTTPParserTests {
    func parse(_ text: String, limits: HTTPParserLimits = HTTPParserLimits()) throws(HTTPParseError) -> (
        request: HTTPRequest, consumed: Int
    )? {
        try HTTPRequestParser.parse(Array(text.utf8), limits: limits)
    }

    @Test func simpleGet() throws {
        let text = "GET /a/b?x=1&y=%20z HTTP/1.1\r\nHost: example\r\nX-A:  v  \r\n\r\n"
        let (request, consumed) = try #require(try parse(text))
        #expect(consumed == text.utf8.count)
        #expect(request.method == .get)
        #expect(request.path == "/a/b")
        #expect(request.queryParameters == ["x": "1", "y": " z"])
        #expect(request.headers["x-a"] == "v")
        #expect(request.keepAlive)
    }

    @Test func pipelinedRequestsAndBodies() throws {
        let one = "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
        let two = "GET / HTTP/1.0\r\n\r\n"
        let bytes = Array((one + two).utf8)
        let (first, used) = try #require(try HTTPRequestParser.parse(bytes))
        #expect(first.body == Array("hello".utf8))
        let (second, used2) = try #require(try HTTPRequestParser.parse(Array(bytes[used...])))
        #expect(second.minorVersion == 0)
        #expect(!second.keepAlive)
        #expect(used + used2 == bytes.count)
    }

    @Test func everyPrefixNeedsMore() throws {
        let text =
            "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nT: x\r\n\r\n"
        let bytes = Array(text.utf8)
        for n in 0..<bytes.count {
            #expect(try HTTPRequestParser.parse(Array(bytes[0..<n])) == nil, "prefix \(n)")
        }
        let (request, used) = try #require(try HTTPRequestParser.parse(bytes))
        #expect(request.body == Array("hello".utf8))
        #expect(used == bytes.count)
    }

    static let malformed: [(String, String, Int)] = [
        ("missing host", "GET / HTTP/1.1\r\n\r\n", 400),
        ("two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("bare LF", "GET / HTTP/1.1\nHost: a\n\n", 400),
        ("folded header", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400),
        ("space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
        ("no colon", "GET / HTTP/1.1\r\nHost a\r\n\r\n", 400),
        ("control char in value", "GET / HTTP/1.1\r\nHost: a\u{01}b\r\n\r\n", 400),
        ("bad method", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("extra spaces", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("relative target", "GET a HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("http2", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        ("garbage version", "GET / HTTQ/1.1\r\nHost: a\r\n\r\n", 400),
        (
            "cl and te",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400
        ),
        ("te gzip", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (
            "conflicting cl",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400
        ),
        ("negative cl", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400),
        ("hex cl", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", 400),
        ("huge cl", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
        ("body too large", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n", 413),
        ("bad chunk size", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        (
            "chunk without crlf",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", 400
        ),
    ]

    @Test(arguments: malformed)
    func rejectsMalformed(_ item: (String, String, Int)) {
        let (name, text, status) = item
        #expect(throws: HTTPParseError.self, "\(name)") { _ = try parse(text) }
        do {
            _ = try parse(text)
        } catch {
            #expect(error.status.code == status, "\(name): \(error)")
        }
    }

    @Test func limits() {
        var limits = HTTPParserLimits()
        limits.maxHeaderCount = 3
        limits.maxRequestLineBytes = 64
        limits.maxHeaderBytes = 100
        let many = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"
        do {
            _ = try parse(many, limits: limits)
            Issue.record("expected 431")
        } catch { #expect(error.status.code == 431) }
        let longLine = "GET /" + String(repeating: "a", count: 100)
        do {
            _ = try parse(longLine, limits: limits)
            Issue.record("expected 414")
        } catch { #expect(error.status.code == 414) }
        let bigHeader = "GET / HTTP/1.1\r\nHost: " + String(repeating: "a", count: 200)
        do {
            _ = try parse(bigHeader, limits: limits)
            Issue.record("expected 431")
        } catch { #expect(error.status.code == 431) }
        var small = HTTPParserLimits()
        small.maxBodyBytes = 4
        let chunked =
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n"
        do {
            _ = try parse(chunked, limits: small)
            Issue.record("expected 413")
        } catch { #expect(error.status.code == 413) }
    }

    @Test func responseParser() throws {
        let text = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
        let parsed = try Array(text.utf8).withUnsafeBytes { try HTTPResponseParser.parse($0) }
        #expect(parsed?.response.bodyText == "hi")
        let untilClose = "HTTP/1.1 200 OK\r\n\r\nrest"
        let open = try Array(untilClose.utf8).withUnsafeBytes { try HTTPResponseParser.parse($0) }
        #expect(open == nil)
        let closed = try Array(untilClose.utf8).withUnsafeBytes {
            try HTTPResponseParser.parse($0, atEOF: true)
        }
        #expect(closed?.response.bodyText == "rest")
    }
}

@Suite("Addresses")
struct AddressTests {
    @Test func networks() throws {
        let net = try #require(IPNetwork("10.0.0.0/8"))
        #expect(net.contains(try #require(IPAddress("10.1.2.3"))))
        #expect(!net.contains(try #require(IPAddress("11.0.0.1"))))
        let v6 = try #require(IPNetwork("fd00::/8"))
        #expect(v6.contains(try #require(IPAddress("fd12::1"))))
        #expect(!v6.contains(try #require(IPAddress("10.1.2.3"))))
        #expect(IPAddress("::ffff:1.2.3.4")?.description == "1.2.3.4")
        #expect(IPNetwork("1.2.3.4/33") == nil)
        #expect(IPAddress("nonsense") == nil)
    }

    /// IPv4 addresses are written by hand (every request's client address): the same text as
    /// `inet_ntop`, for every byte value in every position.
    @Test func ipv4TextIsInetNtops() throws {
        var generator = SystemRandomNumberGenerator()
        var samples: [[UInt8]] = [[0, 0, 0, 0], [255, 255, 255, 255], [127, 0, 0, 1], [10, 9, 99, 100]]
        for value in 0...255 { samples.append([UInt8(value), UInt8(255 - value), UInt8(value / 2), 7]) }
        for _ in 0..<500 { samples.append((0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) }) }
        for bytes in samples {
            var address = in_addr()
            withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
            var buffer = [CChar](repeating: 0, count: 64)
            inet_ntop(AF_INET, &address, &buffer, 64)
            let expected = String(cString: buffer)
            let parsed = try #require(IPAddress(expected))
            #expect(parsed.description == expected)
            #expect(parsed.bytes == bytes)
        }
        #expect(IPAddress("fd12::1")?.description == "fd12::1")
    }

    @Test func urls() throws {
        let u = try NetURL("wss://[::1]:8443/v1?x=1#secret")
        #expect(u.host == "::1")
        #expect(u.port == 8443)
        #expect(u.target == "/v1?x=1")
        #expect(u.isSecure)
        #expect(try NetURL("http://example.com").target == "/")
        #expect(try NetURL("https://example.com?q").port == 443)
        #expect(throws: NetError.self) { try NetURL("http://user@host/") }
        #expect(throws: NetError.self) { try NetURL("http://host:99999/") }
        #expect(throws: NetError.self) { try NetURL("gopher://host/") }
        // The scheme ends at the first `://`; a later one belongs to the target.
        let nested = try NetURL("http://h:8/a://b")
        #expect(
            nested.scheme == "http" && nested.host == "h" && nested.port == 8 && nested.target == "/a://b")
        #expect(try NetURL("HTTP://h").scheme == "http")
        for text in ["", ":", "://h", "http:/h", "http:h", "h:8", "http:", "http:/"] {
            #expect(throws: NetError.self) { try NetURL(text) }
        }
    }
}
