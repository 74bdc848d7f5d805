import Foundation
import Net
import TestSupport
import Testing

/// Member and invitee names are end to end encrypted (DESIGN.md promise 10): after a realistic
/// session with the real programs (a space, its bot, invites by link, by direct-conversation
/// link and by short code attended by the bot and by a person, joins, messages), the space
/// server's database files (main, -wal, -shm) and its log hold none of the names used, in any
/// encoding a name could take there, while every member still sees every name.
@Suite(.serialized) struct NamePrivacyEndToEndTests {
    /// Names nobody's files would hold by chance.
    static let owner = "Zebulonius"
    static let bot = "Quixotebot"
    static let linkInvitee = "Yolanthea"
    static let directInvitee = "Wilhelmina"
    static let botJoiner = "Xerxesiana"
    static let attendedJoiner = "Valdemarus"
    /// The name the attended joiner takes later (`eleven members rename`).
    static let renamed = "Ulyssandra"
    static let names = [owner, bot, linkInvitee, directInvitee, botJoiner, attendedJoiner]

    @Test func theSpaceServerHoldsNoMemberOrInviteeName() async throws {
        try await TestSupport.offPool {
            let w = try BotWorld(owner: Self.owner, botName: Self.bot, quietServer: false)
            defer { w.stop() }
            // A member link naming the invitee; she keeps the suggested name.
            let link = try LinkEndToEndTests.mint(w.paul, ["--name", Self.linkInvitee])
            let yolanthe = try ElevenHome("yolanthe")
            let linked = try LinkEndToEndTests.join(yolanthe, link, ["--yes"])
            #expect(linked.status == 0, "\(linked.stderr)")
            // A direct conversation by link.
            let direct = try LinkEndToEndTests.mint(w.paul, ["--dm", "--name", Self.directInvitee])
            let wilhelmina = try ElevenHome("wilhelmina")
            let directed = try LinkEndToEndTests.join(wilhelmina, direct, ["--yes"])
            #expect(directed.status == 0, "\(directed.stderr)")
            // A short code the bot attends.
            let code = try w.invite()
            let xerxesia = try ElevenHome("xerxesia")
            let joined = try w.run(xerxesia, ["join", code, "--name", Self.botJoiner])
            #expect(joined.status == 0, "\(joined.stderr)")
            // A short code the owner attends himself.
            let attending = try ChildProcess(
                eleven, ["invite", "--short", "--yes"], environment: w.env(w.paul))
            let ownCode = try attending.value(afterPrefix: "Invite code:")
            let valdemar = try ElevenHome("valdemar")
            let attended = try w.run(valdemar, ["join", ownCode, "--name", Self.attendedJoiner])
            #expect(attended.status == 0, "\(attended.stderr)")
            #expect(attending.finish(timeout: 30).status == 0)
            for (home, text) in [
                (w.paul, "hello all"), (yolanthe, "hi"), (xerxesia, "hey"), (valdemar, "yo"),
            ] {
                let sent = try w.run(home, ["send", text])
                #expect(sent.status == 0, "\(sent.stderr)")
            }
            let privately = try w.run(
                wilhelmina, ["send", "--thread", "\(Self.owner) & \(Self.directInvitee)", "psst"])
            #expect(privately.status == 0, "\(privately.stderr)")

            // Members still see every name: the last joiner reads them all, and the messages'
            // authors.
            let members = try w.run(valdemar, ["members"])
            #expect(members.status == 0, "\(members.stderr)")
            for name in Self.names {
                #expect(members.stdout.contains(name), "\(name) missing from: \(members.stdout)")
            }
            let read = try w.run(valdemar, ["read"])
            #expect(read.stdout.contains("\(Self.owner): hello all"), "\(read.stdout)")
            #expect(read.stdout.contains("\(Self.linkInvitee): hi"), "\(read.stdout)")
            #expect(read.stdout.contains("\(Self.botJoiner): hey"), "\(read.stdout)")
            let conversation = try w.run(
                w.paul, ["read", "--thread", "\(Self.owner) & \(Self.directInvitee)"])
            #expect(conversation.stdout.contains("\(Self.directInvitee): psst"), "\(conversation.stdout)")

            // A member renames themselves: the others read the new name, the server gets a box.
            let renaming = try w.run(valdemar, ["members", "rename", Self.renamed])
            #expect(renaming.status == 0, "\(renaming.stderr)")
            let listed = try w.run(w.paul, ["members"]).stdout
            #expect(listed.contains(Self.renamed) && !listed.contains(Self.attendedJoiner), "\(listed)")

            // The server's files while it runs (the -wal holds the latest writes), then after it
            // stopped (checkpointed), and everything it logged.
            let scanned = Self.names + [Self.renamed]
            var leaks = Self.leaks(in: Self.files(w.server.directory), names: scanned)
            w.killBot()
            w.server.stop()
            leaks += Self.leaks(in: Self.files(w.server.directory), names: scanned)
            leaks += Self.leaks(in: [("server log", Data(w.server.child.log.utf8))], names: scanned)
            #expect(leaks.isEmpty, "names the space server holds: \(Set(leaks).sorted())")
        }
    }

    /// A sealed space: its server is never told the space's name, so its public card answers no
    /// name or picture; a person invited by link reads the name from the link (its branding key),
    /// one admitted by short code from whoever admits them, and nothing the server stores, serves
    /// or logs holds the name.
    @Test func aSealedSpaceNameReachesMembersOnly() async throws {
        try await TestSupport.offPool {
            let relay = try ElevenRelayUnderTest()
            defer { relay.stop() }
            let server = try ElevenServerUnderTest(quiet: false)
            defer { server.stop() }
            let env = ["ELEVEN_RELAY": relay.url]
            let owner = try ElevenHome("zebulon")
            let created = try owner.run(
                [
                    "space", "create", Self.sealedSpace, "--sealed", "--server", server.url, "--as",
                    Self.owner, "--json",
                ],
                environment: env)
            #expect(created.status == 0, "\(created.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(created.stdout.utf8)) as? [String: Any]
            let space = try #require(object?["space"] as? String)
            // The public card says nothing useful; there is no picture.
            let group = try HTTPClient.send(.get, url: "\(server.url)/api/group?space=\(space)")
            #expect(group.status.code == 200)
            let card = try JSONSerialization.jsonObject(with: Data(group.body)) as? [String: Any]
            #expect(card?["name"] as? String == "", "\(card ?? [:])")
            #expect(card?["avatar"] == nil || card?["avatar"] is NSNull)
            #expect(
                try HTTPClient.send(.get, url: "\(server.url)/api/server-avatar?space=\(space)").status.code
                    == 404)
            // A link carries the name sealed: its holder reads it, the server does not.
            let link = try LinkEndToEndTests.mint(owner, ["--name", Self.linkInvitee])
            let yolanthe = try ElevenHome("yolanthe")
            let shown = try yolanthe.json(["invite", "show", link, "--json"])
            #expect(shown["spaceName"] as? String == Self.sealedSpace, "\(shown)")
            #expect(shown["sealed"] as? Bool == true)
            let joined = try LinkEndToEndTests.join(yolanthe, link, ["--yes"])
            #expect(joined.status == 0, "\(joined.stderr)")
            #expect(try yolanthe.run(["spaces"]).stdout.contains(Self.sealedSpace))
            // A short code: the attending owner hands the name over the join's own channel.
            let attending = try ChildProcess(
                eleven, ["invite", "--short", "--yes"],
                environment: ["ELEVEN_HOME": owner.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": relay.url])
            let code = try attending.value(afterPrefix: "Invite code:")
            let valdemar = try ElevenHome("valdemar")
            let attended = try valdemar.run(["join", code, "--name", Self.attendedJoiner], environment: env)
            #expect(attended.status == 0, "\(attended.stderr)")
            #expect(attending.finish(timeout: 30).status == 0)
            #expect(try valdemar.run(["spaces"]).stdout.contains(Self.sealedSpace))

            var leaks = Self.leaks(in: Self.files(server.directory), names: [Self.sealedSpace])
            server.stop()
            leaks += Self.leaks(in: Self.files(server.directory), names: [Self.sealedSpace])
            leaks += Self.leaks(in: [("server log", Data(server.child.log.utf8))], names: [Self.sealedSpace])
            #expect(leaks.isEmpty, "what the space server holds: \(Set(leaks).sorted())")
        }
    }

    static let sealedSpace = "Xylophonia"

    /// Every regular file under `directory`, read now.
    static func files(_ directory: URL) -> [(String, Data)] {
        let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        var found: [(String, Data)] = []
        while let url = enumerator?.nextObject() as? URL {
            if let data = try? Data(contentsOf: url) { found.append((url.lastPathComponent, data)) }
        }
        #expect(found.contains { $0.0.hasSuffix(".sqlite") || $0.0.hasSuffix(".db") }, "\(found.map(\.0))")
        return found
    }

    /// "name in file (encoding)" for each name found in `files`.
    static func leaks(in files: [(String, Data)], names: [String] = names) -> [String] {
        var leaks: [String] = []
        for (file, data) in files {
            let lowered = Data(data.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 })
            for name in names {
                for (encoding, form) in encodings(of: name) {
                    let haystack = encoding == "utf-8" || encoding == "utf-16" ? lowered : data
                    if haystack.range(of: form) != nil { leaks.append("\(name) in \(file) (\(encoding))") }
                }
            }
        }
        return leaks
    }

    /// The forms a name takes in a file or log: UTF-8 and UTF-16 (matched case-insensitively),
    /// hex, and base64 (standard and URL-safe) at each of the three byte alignments, keeping
    /// only the characters that do not depend on the neighbouring bytes.
    static func encodings(of name: String) -> [(String, Data)] {
        let bytes = Array(name.utf8)
        var forms: [(String, Data)] = [
            ("utf-8", Data(name.lowercased().utf8)),
            ("utf-16", Data(name.lowercased().utf16.flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] })),
            ("hex", Data(bytes.map { String(format: "%02x", $0) }.joined().utf8)),
            ("HEX", Data(bytes.map { String(format: "%02X", $0) }.joined().utf8)),
        ]
        for offset in 0..<3 {
            let encoded = Data(repeating: 0, count: offset) + Data(bytes)
            let text = encoded.base64EncodedString()
            let core = String(text.dropFirst(offset == 0 ? 0 : (offset * 8 + 5) / 6).dropLast(4))
            let url = core.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            forms.append(("base64", Data(core.utf8)))
            forms.append(("base64url", Data(url.utf8)))
        }
        return forms
    }
}
