import Net

/// The welcome page a browser gets for an invite link (`/invite`, and the legacy `/join/join`):
/// one static page with its own script and stylesheet, compiled into the server. The invite is
/// in the link's fragment, which browsers never send: the page's script reads it and asks this
/// server only the public, non-consuming `GET /api/key-invite/{id}` (DESIGN.md flow D, promises
/// 2 and 5). Also the app-association files under `/.well-known/`, when configured.
public enum WelcomePage {
    /// Where the page is served.
    public static let pagePaths = ["/invite", "/join/join"]
    static let scriptPath = "/invite/welcome.js"
    static let stylePath = "/invite/welcome.css"

    /// Only the page's own script, stylesheet, same-origin pictures and the same-origin API.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The well-known files a deployment may serve, by path, and their content types.
    public static let wellKnownPaths = [
        "/.well-known/apple-app-site-association", "/.well-known/assetlinks.json",
    ]

    /// The static response for `path`, or nil when it is not one of the page's files.
    static func response(for path: String) -> HTTPResponse? {
        switch path {
        case _ where pagePaths.contains(path): asset(html, type: "text/html; charset=utf-8")
        case scriptPath: asset(script, type: "text/javascript; charset=utf-8")
        case stylePath: asset(css, type: "text/css; charset=utf-8")
        default: nil
        }
    }

    static func asset(_ text: String, type: String) -> HTTPResponse {
        var response = HTTPResponse(status: .ok, body: Array(text.utf8))
        response.headers.set("Content-Type", type)
        response.headers.set("Content-Security-Policy", contentSecurityPolicy)
        response.headers.set("Referrer-Policy", "no-referrer")
        response.headers.set("X-Content-Type-Options", "nosniff")
        response.headers.set("X-Frame-Options", "DENY")
        response.headers.set("Cache-Control", "no-cache")
        return response
    }

    /// A configured well-known file (JSON), or the usual 404.
    static func wellKnown(_ body: [UInt8]?) -> HTTPResponse {
        guard let body else {
            return .error(
                .notFound, code: "not_configured", message: "This server does not publish that file.")
        }
        var response = HTTPResponse(status: .ok, body: body)
        response.headers.set("Content-Type", "application/json")
        response.headers.set("X-Content-Type-Options", "nosniff")
        return response
    }
}
