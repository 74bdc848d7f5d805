import Foundation
import Testing

@testable import Net

@Suite("HTTP router and header text")
struct HTTPRouterTests {
    private func router() -> HTTPRouter {
        let router = HTTPRouter()
        let answer: @Sendable (HTTPRequest) -> HTTPResponse = { _ in .json(["ok": true]) }
        router.get("/v1/spaces/:space/members", answer)
        router.post("/v1/spaces/:space/members", answer)
        router.get("/v1/spaces/:space/threads/:thread", answer)
        router.get("/v1/spaces/:space/threads/list", answer)
        router.get("/v1/spaces", answer)
        return router
    }

    private func captures(_ match: HTTPRouter.Match) -> [String: String]? {
        if case .found(_, let parameters) = match { return parameters }
        return nil
    }

    @Test func capturesOnlyForTheRouteThatMatches() {
        let router = router()
        #expect(captures(router.match(method: .get, path: "/v1/spaces/s1/members")) == ["space": "s1"])
        #expect(captures(router.match(method: .head, path: "/v1/spaces/s1/members")) == ["space": "s1"])
        // The first route of that length whose literals fit wins, captures and all.
        #expect(
            captures(router.match(method: .get, path: "/v1/spaces/s%2F1/threads/list"))
                == ["space": "s/1", "thread": "list"])
        #expect(
            captures(router.match(method: .get, path: "/v1/spaces/s1/threads/t%zz")) == [
                "space": "s1", "thread": "t%zz",
            ])
        #expect(captures(router.match(method: .get, path: "/v1/spaces")) == [:])
    }

    @Test func misses() {
        let router = router()
        for path in ["/v1/spaces/s1/memberz", "/v1/spaces//members", "/v1/space/s1/members", "/v1", "/", ""] {
            guard case .notFound = router.match(method: .get, path: path) else {
                Issue.record("\(path) matched")
                continue
            }
        }
        guard
            case .methodNotAllowed(let allowed) = router.match(method: .delete, path: "/v1/spaces/s1/members")
        else {
            Issue.record("DELETE matched or was not found")
            return
        }
        #expect(allowed == [.get, .post])
    }

    @Test func queryParameters() throws {
        let text = "GET /m?wait=30&a+b=c+d&e=%41%2B&f&=g&bad=%zz HTTP/1.1\r\nHost: h\r\n\r\n"
        let (request, _) = try #require(try HTTPRequestParser.parse(Array(text.utf8)))
        #expect(
            request.queryParameters == ["wait": "30", "a b": "c d", "e": "A+", "f": "", "": "g", "bad": ""])
    }

    @Test(
        "trimming header text: as Foundation's whitespace set does",
        arguments: [
            "", " ", "\t", "v", "  v  ", "\tclose\t ", " keep-alive", "a b", " \u{A0}x\u{A0} ", "\u{3000}é ",
            " \r\n",
        ])
    func trimming(_ text: String) {
        #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespaces))
        let sub = ("[" + text + "]").dropFirst().dropLast()
        #expect(sub.trimmingWhitespace() == text.trimmingCharacters(in: .whitespaces))
    }

    @Test func connectionTokens() throws {
        let text = "GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade ,\t Close \r\n\r\n"
        let (request, _) = try #require(try HTTPRequestParser.parse(Array(text.utf8)))
        #expect(request.headers.containsToken("Connection", "close"))
        #expect(request.headers.containsToken("connection", "upgrade"))
        #expect(!request.keepAlive)
    }
}
