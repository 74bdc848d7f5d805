import ClientCore
import Foundation
import Net
import SpaceModel
import TestSupport
import Testing

/// The welcome page (`/invite`, `/join/join`) in a real browser: a real `eleven-server`, links
/// minted by the real CLI, each page opened in headless Chromium (bounded in time, killed by
/// process group through `timeout`), the rendered text checked, a screenshot of each state kept
/// in the test's output directory, and the server's log checked for any part of a fragment.
@Suite(.serialized) struct WelcomePageTests {
    /// Debian's Chromium (installed by `scripts/deps --test`), or `ELEVEN_TEST_CHROMIUM`.
    static func chromium() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let candidates =
            [environment["ELEVEN_TEST_CHROMIUM"]].compactMap { $0 } + [
                "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome",
            ]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TestSupportError.server(
                "The welcome page tests need Chromium and found none at \(candidates.joined(separator: ", ")). "
                    + "Run scripts/deps --test (it installs Debian's chromium) or set ELEVEN_TEST_CHROMIUM.")
        }
        return found
    }

    /// One page to open: its URL, a name for its screenshot, and whether scripts run.
    struct Page: Sendable {
        let name: String
        let url: String
        var scripts = true
        /// Chromium's `--host-resolver-rules`, to open the page under a name that is not loopback
        /// (an insecure context: no WebCrypto, so the page's own SHA-256 derives the id).
        var hostRules: String? = nil
    }

    /// Opens every page in headless Chromium, two at a time (the machine has two cores), and
    /// returns each page's DOM after its script ran, by name. Screenshots go to `output`.
    static func render(_ pages: [Page], output: URL) throws -> [String: String] {
        let browser = try chromium()
        let lock = NSLock()
        nonisolated(unsafe) var results: [String: Result<String, any Error>] = [:]
        DispatchQueue.concurrentPerform(iterations: 2) { lane in
            for page in pages.enumerated().filter({ $0.offset % 2 == lane }).map(\.element) {
                let result = Result { () throws -> String in
                    let profile = output.appendingPathComponent("profile-\(page.name)").path
                    var arguments = [
                        "-k", "5", "90", browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--no-first-run", "--disable-extensions", "--disable-sync", "--hide-scrollbars",
                        "--user-data-dir=\(profile)", "--virtual-time-budget=5000", "--window-size=390,844",
                        "--screenshot=" + output.appendingPathComponent("\(page.name).png").path,
                    ]
                    if !page.scripts {
                        // JavaScript off in the profile, as a person turns it off in settings.
                        // (`--blink-settings=scriptEnabled=false` also stops --dump-dom itself.)
                        let preferences = URL(fileURLWithPath: profile + "/Default/Preferences")
                        try FileManager.default.createDirectory(
                            at: preferences.deletingLastPathComponent(), withIntermediateDirectories: true)
                        try Data(#"{"profile":{"default_content_setting_values":{"javascript":2}}}"#.utf8)
                            .write(to: preferences)
                    }
                    if let rules = page.hostRules { arguments.append("--host-resolver-rules=\(rules)") }
                    arguments += ["--dump-dom", page.url]
                    let run = try TestSupport.run("/usr/bin/timeout", arguments, timeout: 120)
                    try? FileManager.default.removeItem(atPath: profile)
                    guard run.status == 0, !run.timedOut, run.stdout.contains("</html>") else {
                        throw TestSupportError.server(
                            "Chromium failed on \(page.name) (status \(run.status), timed out: \(run.timedOut)):\n"
                                + run.stderr.suffix(2000))
                    }
                    return run.stdout
                }
                lock.withLock { results[page.name] = result }
            }
        }
        return try lock.withLock { try results.mapValues { try $0.get() } }
    }

    /// The text of the element with this id (tags stripped, entities left), or nil.
    static func text(_ dom: String, id: String) -> String? {
        guard let start = dom.range(of: "id=\"\(id)\"") else { return nil }
        guard let open = dom[start.upperBound...].firstIndex(of: ">") else { return nil }
        let rest = dom[dom.index(after: open)...]
        guard let close = rest.range(of: "</") else { return nil }
        return String(rest[..<close.lowerBound]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether the element with this id is hidden.
    static func hidden(_ dom: String, id: String) -> Bool {
        guard let start = dom.range(of: "id=\"\(id)\"") else { return true }
        let tag = dom[start.lowerBound...].prefix { $0 != ">" }
        return tag.contains("hidden")
    }

    /// `data-NAME` of the card.
    static func cardData(_ dom: String, _ name: String) -> String? {
        guard let card = dom.range(of: "<main id=\"card\"") else { return nil }
        let tag = dom[card.lowerBound...].prefix { $0 != ">" }
        guard let attribute = tag.range(of: "data-\(name)=\"") else { return nil }
        return String(tag[attribute.upperBound...].prefix { $0 != "\"" })
    }

    static func fragment(_ link: String) -> String {
        String(link[link.index(after: link.firstIndex(of: "#")!)...])
    }

    /// The legacy form of a minted link: `T` re-written in base64url, the alphabet legacy links
    /// were minted in (`e1.T~NAME`, or the bare `T`).
    static func legacy(_ link: String, e1 name: String?) throws -> String {
        let parsed = try InviteLink(parsing: link)
        let t = Base64URL.encode(parsed.secret.secretBytes.unredactedBytes())
        return parsed.server + "/join/join#" + (name.map { "e1.\(t)~\($0)" } ?? t)
    }

    static func vectors() throws -> [(base58: String, base64url: String, id: String)] {
        let url = TestSupport.packageRoot.appendingPathComponent("Tests/Vectors/link-secret.json")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        return (object?["vectors"] as? [[String: String]] ?? []).map {
            ($0["base58"] ?? "", $0["base64url"] ?? "", $0["id"] ?? "")
        }
    }

    @Test func everyStateInChromium() async throws {
        try await TestSupport.offPool {
            let server = try LinkEndToEndTests.LoggedServer()
            defer { server.stop() }
            let output = try TestSupport.temporaryDirectory().appendingPathComponent("welcome-page")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            print("WelcomePageTests: screenshots in \(output.path)")

            let paul = try LinkEndToEndTests.paul(server)
            let ready = try LinkEndToEndTests.mint(paul, ["--name", "Lee"])
            let used = try LinkEndToEndTests.mint(paul, ["--name", "Ann"])
            let ann = try ElevenHome("ann")
            #expect(try LinkEndToEndTests.join(ann, used, ["--yes"]).status == 0)
            let expired = try LinkEndToEndTests.mint(paul, ["--name", "Max"])
            let sealed = try LinkEndToEndTests.mint(paul, ["--name", "Sue", "--sealed"])
            let legacySource = try LinkEndToEndTests.mint(paul, ["--name", "Old", "--uses", "2"])
            let legacyE1 = try Self.legacy(legacySource, e1: "Old")
            let legacyRaw = try Self.legacy(legacySource, e1: nil)
            // Cancelled: Kim, who may invite, makes a link and is then removed from the space.
            let kim = try ElevenHome("kim")
            let kimKey = try kim.run(["whoami"]).stdout.split(separator: "\n").first.map(String.init) ?? ""
            let added = try paul.json([
                "members", "add", "--key", kimKey, "--name", "Kim", "--invite", "--json",
            ])
            let kimJoin = try #require(added["join"] as? String).split(separator: " ").dropFirst().map(
                String.init)
            #expect(try kim.run(kimJoin).status == 0)
            let cancelled = try LinkEndToEndTests.mint(kim, ["--name", "Zed"])
            #expect(try paul.run(["members", "remove", "Kim"]).status == 0)
            try server.expire(try InviteLink(parsing: expired).secret.derive().id)

            // The CLI reads the legacy alphabet and the app's custom scheme too.
            let lee = try ElevenHome("lee")
            for link in [legacyE1, legacyRaw, InviteReference.appLink(for: legacyE1)] {
                let card = try lee.json(["invite", "show", link, "--json"])
                #expect(card["spaceName"] as? String == "Family", "\(link)")
            }
            #expect(
                try lee.json(["invite", "show", InviteReference.appLink(for: ready), "--json"])[
                    "suggestedName"] as? String == "Lee")

            let vectors = try Self.vectors()
            let word = server.url + "/invite#Paul/coral-piano-42"
            let pages = [
                Page(name: "ready", url: ready),
                Page(name: "used-up", url: used),
                Page(name: "expired", url: expired),
                Page(name: "sealed", url: sealed),
                Page(name: "sealed-without-key", url: String(sealed[..<sealed.lastIndex(of: "/")!])),
                Page(name: "cancelled", url: cancelled),
                Page(name: "scripts-off", url: ready, scripts: false),
                Page(name: "word-code", url: word),
                Page(name: "legacy-e1", url: legacyE1),
                Page(name: "vector-current", url: server.url + "/invite#Vee/\(vectors[2].base58)"),
                Page(
                    name: "vector-raw-no-webcrypto",
                    url: "http://eleven.test:\(server.port)/join/join#\(vectors[4].base64url)",
                    hostRules: "MAP eleven.test 127.0.0.1"),
            ]
            let dom = try Self.render(pages, output: output)

            // Ready: the card, the app link and the command to paste.
            let card = try #require(dom["ready"])
            #expect(Self.cardData(card, "state") == "ready")
            #expect(Self.text(card, id: "title") == "Family")
            #expect(Self.text(card, id: "inviter") == "Paul invited you.")
            #expect(Self.text(card, id: "suggested") == "Suggested name: Lee")
            #expect(Self.text(card, id: "state")?.hasPrefix("Ready: this invite works once") == true)
            #expect(Self.text(card, id: "command") == "eleven join '\(ready)'")
            #expect(card.contains("href=\"\(InviteReference.appLink(for: ready))\""))
            #expect(!Self.hidden(card, id: "copy"))

            // Used up and expired say so, in words.
            #expect(Self.cardData(dom["used-up"] ?? "", "state") == "used")
            #expect(Self.text(dom["used-up"] ?? "", id: "state")?.contains("used up") == true)
            #expect(Self.cardData(dom["expired"] ?? "", "state") == "expired")
            #expect(Self.text(dom["expired"] ?? "", id: "state")?.contains("expired") == true)
            #expect(
                Self.hidden(dom["used-up"] ?? "", id: "actions")
                    && Self.hidden(dom["expired"] ?? "", id: "actions"))

            #expect(Self.cardData(dom["cancelled"] ?? "", "state") == "cancelled")
            #expect(Self.text(dom["cancelled"] ?? "", id: "state")?.contains("cancelled") == true)

            // Sealed: the link's branding key opens the name in the browser; without the key, no
            // name of the space anywhere, the inviter and the suggested name still.
            let sealedCard = dom["sealed"] ?? ""
            #expect(Self.cardData(sealedCard, "sealed") == "opened")
            #expect(Self.text(sealedCard, id: "title") == "Family")
            #expect(Self.text(sealedCard, id: "suggested") == "Suggested name: Sue")
            let closed = dom["sealed-without-key"] ?? ""
            #expect(Self.cardData(closed, "state") == "ready")
            #expect(Self.cardData(closed, "sealed") == "closed")
            #expect(!closed.contains("Family"))
            #expect(Self.text(closed, id: "title") == "A private space")
            #expect(Self.text(closed, id: "inviter") == "Paul invited you.")
            #expect(Self.text(closed, id: "suggested") == "Suggested name: Sue")

            // Scripts off: the noscript text says what the link is and how to open it.
            let off = dom["scripts-off"] ?? ""
            #expect(Self.cardData(off, "state") == "loading")
            #expect(off.contains("<noscript>") && off.contains("eleven join"))
            #expect(off.contains("open the\nwhole link with the Eleven app"))
            #expect(Self.hidden(off, id: "state") && Self.hidden(off, id: "actions"))

            // A word link: the code, large, and the command; nothing asked of the server.
            let code = dom["word-code"] ?? ""
            #expect(Self.cardData(code, "state") == "code")
            #expect(Self.text(code, id: "code") == "coral-piano-42")
            #expect(Self.text(code, id: "title") == "Paul")
            #expect(Self.text(code, id: "command") == "eleven join '\(word)'")

            // Legacy e1 in base64url: the same invite.
            let legacy = dom["legacy-e1"] ?? ""
            #expect(Self.cardData(legacy, "format") == "legacy_e1")
            #expect(Self.cardData(legacy, "state") == "ready")
            #expect(Self.text(legacy, id: "title") == "Family")

            // The vectors: the page derives the same invite id as LinkSecret; no such invite here.
            #expect(Self.cardData(dom["vector-current"] ?? "", "invite") == vectors[2].id)
            #expect(Self.cardData(dom["vector-current"] ?? "", "state") == "not-found")
            let raw = dom["vector-raw-no-webcrypto"] ?? ""
            #expect(Self.cardData(raw, "invite") == vectors[4].id)
            #expect(Self.cardData(raw, "format") == "legacy_raw")
            #expect(Self.cardData(raw, "derived") == "fallback")
            #expect(Self.cardData(raw, "state") == "not-found")
            #expect(Self.cardData(dom["ready"] ?? "", "derived") == "webcrypto")

            for page in pages {
                #expect(
                    FileManager.default.fileExists(
                        atPath: output.appendingPathComponent("\(page.name).png").path))
            }

            // Opening the page used nothing: the ready link still works for its person (here in the app's
            // custom scheme, which `eleven join` reads too).
            #expect(
                try LinkEndToEndTests.join(lee, InviteReference.appLink(for: ready), ["--yes"]).status == 0)
            #expect(try lee.run(["read"]).stdout == "Paul: Welcome to Family\n")

            // The server saw the pages and the invite ids, never a fragment or a secret.
            server.stop()
            let log = server.logs.joined(separator: "\n")
            #expect(log.contains("\"path\":\"/invite\"") && log.contains("\"path\":\"/join/join\""))
            #expect(log.contains(vectors[2].id))
            for link in [ready, used, expired, sealed, cancelled, legacyE1, legacyRaw, word] {
                let fragment = Self.fragment(link)
                #expect(!log.contains(fragment), "\(fragment)")
                for slot in fragment.split(whereSeparator: { "/~.".contains($0) }) where slot.count >= 8 {
                    #expect(!log.contains(slot), "\(slot)")
                }
            }
            #expect(!log.contains("coral-piano"))
        }
    }

    /// The page's headers (a strict policy, no inline script) and the well-known files: served from
    /// configuration, 404 when not configured.
    @Test func headersAndWellKnownFiles() async throws {
        try await TestSupport.offPool {
            let directory = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let association = directory.appendingPathComponent("aasa.json")
            try Data(#"{"applinks":{"details":[]}}"#.utf8).write(to: association)
            let configured = try ElevenServerUnderTest(arguments: [
                "--db", directory.appendingPathComponent("a.sqlite").path,
                "--apple-app-site-association", association.path,
            ])
            defer { configured.stop() }
            let page = try HTTPClient.send(.get, url: configured.url + "/invite")
            #expect(page.status.code == 200)
            let policy = page.headers.values("Content-Security-Policy").first ?? ""
            #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"))
            #expect(policy.contains("default-src 'none'"))
            let html = String(decoding: page.body, as: UTF8.self)
            #expect(html.contains("<script src=\"/invite/welcome.js\" defer></script>"))
            #expect(!html.contains("http://") && !html.contains("https://"))
            #expect(html.components(separatedBy: "<script").count == 2)
            #expect(try HTTPClient.send(.get, url: configured.url + "/join/join").body == page.body)
            let script = try HTTPClient.send(.get, url: configured.url + "/invite/welcome.js")
            #expect(script.headers.values("Content-Type").first?.hasPrefix("text/javascript") == true)

            let aasa = try HTTPClient.send(
                .get, url: configured.url + "/.well-known/apple-app-site-association")
            #expect(aasa.status.code == 200)
            #expect(String(decoding: aasa.body, as: UTF8.self) == #"{"applinks":{"details":[]}}"#)
            #expect(aasa.headers.values("Content-Type").first == "application/json")
            let links = try HTTPClient.send(.get, url: configured.url + "/.well-known/assetlinks.json")
            #expect(links.status.code == 404)

            let bad = try TestSupport.run(
                elevenServer, ["--assetlinks", directory.appendingPathComponent("none").path])
            #expect(bad.status == 2)
        }
    }
}
