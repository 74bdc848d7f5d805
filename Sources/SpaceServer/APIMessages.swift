import Foundation
import SpaceModel

/// One HTTP request as the space API sees it; the HTTP layer fills it in.
public struct APIRequest: Sendable {
    /// `GET`, `POST`, `PUT`, `DELETE`.
    public var method: String
    /// The request target: path and optional `?query`.
    public var target: String
    /// Header fields; names are matched case-insensitively.
    public var headers: [String: String]
    public var body: [UInt8]
    /// The peer's address, for logs and rate limits.
    public var remoteAddress: String

    public init(
        method: String, target: String, headers: [String: String] = [:], body: [UInt8] = [],
        remoteAddress: String = ""
    ) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// The value of a header field, matching the name case-insensitively.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.key.lowercased() == lowered }?.value
    }

    /// The path without the query.
    var path: Substring {
        target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }

    /// Query parameters (the last value wins for repeated names). Values are percent-decoded.
    var query: [String: String] {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return [:] }
        var result: [String: String] = [:]
        for pair in parts[1].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            // Foundation's decoding is slow; most keys and values have nothing to decode.
            func decoded(_ text: Substring) -> String {
                text.contains("%") ? String(text).removingPercentEncoding ?? String(text) : String(text)
            }
            let key = decoded(kv[0])
            let value = kv.count == 2 ? decoded(kv[1]) : ""
            result[key] = value
        }
        return result
    }
}

/// One HTTP response: a status, a content type and the body (JSON unless stated otherwise).
public struct APIResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var headers: [String: String]
    public var body: [UInt8]

    public init(
        status: Int, contentType: String = "application/json", headers: [String: String] = [:], body: [UInt8]
    ) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }

    /// Every answer is written as its events are (keys sorted, slashes as they are).
    static var encoder: JSONEncoder { SpaceWire.EventList.encoder }

    /// A JSON response.
    static func json(_ value: some Encodable, status: Int = 200) -> APIResponse {
        do {
            return APIResponse(status: status, body: Array(try encoder.encode(value)))
        } catch {
            return APIError(500, "internal", "The server could not encode its answer.").response
        }
    }
}

/// A refused request: an HTTP status, a stable code and a message a person can act on. Sent as
/// `{ "error": code, "message": text }`, plus `"triesLeft": n` where a wrong answer may be tried
/// again, so a client decides by fields, never by the message's words.
public struct APIError: Error, Sendable, Equatable {
    public let status: Int
    public let code: String
    public let message: String
    /// How many more tries the same challenge allows (`code_invalid`); nil where none is counted.
    public let triesLeft: Int?

    public init(_ status: Int, _ code: String, _ message: String, triesLeft: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.triesLeft = triesLeft
    }

    private struct Body: Encodable {
        let error: String
        let message: String
        let triesLeft: Int?
    }

    var response: APIResponse {
        let body =
            (try? APIResponse.encoder.encode(Body(error: code, message: message, triesLeft: triesLeft)))
            .map { Array($0) } ?? []
        return APIResponse(status: status, body: body)
    }

    static func badRequest(_ code: String, _ message: String) -> APIError { APIError(400, code, message) }
    static func forbidden(_ code: String, _ message: String) -> APIError { APIError(403, code, message) }
    static func notFound(_ code: String, _ message: String) -> APIError { APIError(404, code, message) }
    static func conflict(_ code: String, _ message: String) -> APIError { APIError(409, code, message) }
    static func unauthorised(_ code: String, _ message: String) -> APIError { APIError(401, code, message) }
}
