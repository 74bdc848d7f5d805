import ClientCore
import Foundation
import PAKE
import SpaceModel
import TestSupport
import Testing

/// Mint → parse → inspect → claim for every shape against a real `eleven-server` process on a
/// loopback port; concurrent double claims; used links; and the fragment never reaching the server.
@Suite(.serialized) struct InviteLinkEndToEndTests {
    /// A real `eleven-server` with its database and log in a temporary directory.
    final class RunningServer {
        let directory: URL
        private(set) var process: ChildProcess
        var url: String { "http://127.0.0.1:\(process.port)" }
        var databasePath: String { directory.appendingPathComponent("space.sqlite").path }

        init() throws {
            directory = try TestSupport.temporaryDirectory()
            let port = try TestSupport.freePort()
            process = try ChildProcess(
                TestSupport.productPath("eleven-server"),
                [
                    "--listen", "127.0.0.1:\(port)", "--db",
                    directory.appendingPathComponent("space.sqlite").path,
                ],
                port: port)
        }

        /// Paul's space with a first message in its default thread.
        func paulsSpace() throws -> SpaceSession {
            let identity = DeviceIdentity.generate()
            let saved = try SpaceSession.createSpace(
                name: "Family", server: url, identity: identity, ownerName: "Paul")
            let session = try SpaceSession(saved: saved, identity: identity)
            let opened = try session.open(thread: nil)
            try session.send("Welcome to Family", to: opened.thread.id, keys: opened.keys)
            return session
        }

        /// Stops the server, lets `change` edit its database, and starts it again on the same port.
        func restart(_ change: () throws -> Void) throws {
            process.stop()
            try change()
            process = try ChildProcess(
                TestSupport.productPath("eleven-server"),
                ["--listen", "127.0.0.1:\(process.port)", "--db", databasePath], port: process.port)
        }

        /// The server's log and raw database files, after stopping it.
        func stopAndCollect() throws -> [[UInt8]] {
            process.stop()
            var haystacks = [Array(process.log.utf8)]
            for suffix in ["", "-wal", "-shm"] {
                if let data = FileManager.default.contents(atPath: databasePath + suffix) {
                    haystacks.append(Array(data))
                }
            }
            return haystacks
        }

        deinit {
            process.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func code(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as SpaceClientError {
            return error.code
        } catch {
            return "\(error)"
        }
    }

    @Test func memberInviteRoundTrip() throws {
        let server = try RunningServer()
        let paul = try server.paulsSpace()
        let minted = try InviteLink.mint(.member, from: paul, options: InviteOptions(personName: "Sam Smith"))
        let text = minted.text()
        #expect(text.hasPrefix(server.url + "/invite#Sam%20Smith/"))

        let link = try InviteLink(parsing: text)
        #expect(link == minted)
        let card = try link.inspect()
        #expect(card.spaceName == "Family")
        #expect(card.inviterName == "Paul")
        #expect(card.suggestedName == "Sam Smith")
        #expect(card.shape == .member)
        #expect(card.usesLeft == 1)
        #expect(card.expiresAt > Int64(Date().timeIntervalSince1970) + 6 * 24 * 3600)
        // Inspecting never consumes.
        #expect(try link.inspect() == card)

        let sam = try link.claim()
        #expect(sam.shape == .member)
        #expect(sam.saved.space == paul.saved.space)
        let samSession = try SpaceSession(saved: sam.saved, identity: sam.identity)
        let opened = try samSession.open(thread: nil)
        let read = try samSession.read(opened.thread.id, roster: opened.roster, keys: opened.keys)
        #expect(read.messages.map(\.text) == ["Welcome to Family"])
        try samSession.send("Thanks Paul", to: opened.thread.id, keys: opened.keys)

        // Paul sees Sam under the suggested name; the invite's signer has retired itself.
        let roster = try paul.roster()
        #expect(roster.members[sam.saved.member]?.name == "Sam Smith")
        #expect(roster.members.count == 2)
        #expect(roster.formerMembers.values.map(\.name) == ["(invite)"])
        let paulOpened = try paul.open(thread: nil)
        let paulRead = try paul.read(paulOpened.thread.id, roster: paulOpened.roster, keys: paulOpened.keys)
        #expect(paulRead.messages.map(\.authorName) == ["Paul", "Sam Smith"])

        // The card tells a device that already saved the space.
        var saved = SavedSpaces()
        #expect(card.alreadySaved(in: saved) == nil)
        saved.save(sam.saved)
        #expect(card.alreadySaved(in: saved) == sam.saved)

        // Used: a second claim and a second look are refused with their own code.
        #expect(Self.code { _ = try link.claim() } == "invite_used")
        #expect(Self.code { _ = try link.inspect() } == "invite_used")
    }

    @Test func multiUseInviteAdmitsEachPersonOnce() throws {
        let server = try RunningServer()
        let paul = try server.paulsSpace()
        let link = try InviteLink.mint(.member, from: paul, options: InviteOptions(uses: 2))
        #expect(link.name == "Family")
        let first = try link.claim(name: "Ana")
        #expect(try link.inspect().usesLeft == 1)
        let second = try link.claim(name: "Bo")
        #expect(Self.code { _ = try link.claim(name: "Cy") } == "invite_used")
        let roster = try paul.roster()
        #expect(roster.members[first.saved.member]?.name == "Ana")
        #expect(roster.members[second.saved.member]?.name == "Bo")
        #expect(roster.members.count == 3)
    }

    /// The payload only bootstraps: threads created after minting (and between two claims of a
    /// multi-use link) are wrapped to the invite's signer like to any member, and every claimer
    /// passes them on to itself.
    @Test func threadsCreatedAfterMintingReachEveryClaimer() throws {
        let server = try RunningServer()
        let paul = try server.paulsSpace()
        let link = try InviteLink.mint(.member, from: paul, options: InviteOptions(uses: 2))
        func readable(_ claimed: ClaimedInvite) throws -> Set<String> {
            let session = try SpaceSession(saved: claimed.saved, identity: claimed.identity)
            let roster = try session.roster()
            return Set(
                try session.threads(roster: roster, keys: session.threadKeys(roster: roster)).compactMap(
                    \.name))
        }
        _ = try paul.createThread(named: "after minting")
        let first = try link.claim(name: "Ana")
        #expect(try readable(first) == ["general", "after minting"])
        _ = try paul.createThread(named: "between claims")
        let second = try link.claim(name: "Bo")
        #expect(try readable(second) == ["general", "after minting", "between claims"])
        // Ana, a member by then, got the later thread the ordinary way.
        #expect(try readable(first) == ["general", "after minting", "between claims"])
        // The signer retired with the last use; a thread made now is wrapped to people only.
        _ = try paul.createThread(named: "after the last use")
        #expect(try readable(second).contains("after the last use"))
    }

    /// A thread created between a claimer's look at the invite and its claim: the server refuses
    /// the claim (its keys changed) rather than let a key go missing; the next attempt has it.
    @Test func claimsMissingANewThreadKeyAreRefused() throws {
        let server = try RunningServer()
        let paul = try server.paulsSpace()
        let link = try InviteLink.mint(.member, from: paul)
        let keys = link.secret.derive()
        let client = try SpaceClient(server: server.url)
        #expect(try client.keyInvite(keys.id).signerWraps?.isEmpty == true)
        let thread = try paul.createThread(named: "meanwhile")
        let stale = KeyInviteWire.ClaimRequest(
            claimSecret: keys.claimSecret.withUnsafeBytes { Base64URL.encode($0) }, events: [],
            signerThreads: [])
        #expect(Self.code { _ = try client.claimKeyInvite(keys.id, stale) } == "invite_keys_changed")
        // Having seen the thread, the same (empty) claim gets past that check to the next one.
        let seen = KeyInviteWire.ClaimRequest(
            claimSecret: keys.claimSecret.withUnsafeBytes { Base64URL.encode($0) }, events: [],
            signerThreads: [thread])
        #expect(Self.code { _ = try client.claimKeyInvite(keys.id, seen) } == "invalid_event")
        #expect(try client.keyInvite(keys.id).usesLeft == 1)
        let sam = try link.claim(name: "Sam")
        let session = try SpaceSession(saved: sam.saved, identity: sam.identity)
        #expect(try session.threadKeys(roster: session.roster())[thread] != nil)
    }

    /// A link that expired unused leaves its signer in the roster (inert: it cannot sign in and
    /// its invite refuses claims); the server lists it and the owner's device retires it. Other
    /// members' devices retire nothing.
    @Test func staleInviteSignersAreRetiredByAnAdmin() throws {
        let server = try RunningServer()
        let paul = try server.paulsSpace()
        let live = try InviteLink.mint(.member, from: paul)
        let sam = try InviteLink.mint(.member, from: paul).claim(name: "Sam")
        let samSession = try SpaceSession(saved: sam.saved, identity: sam.identity)
        #expect(try paul.client.staleInviteSigners(paul.saved.space).isEmpty)
        #expect(try paul.retireStaleInviteSigners().isEmpty)
        let expiring = try InviteLink.mint(.member, from: paul, options: InviteOptions(expiresIn: 60))
        #expect(
            try paul.roster().members.values.filter { $0.name == SpaceSession.inviteSignerName }.count == 2)
        // Age the stored invite: stop the server, edit its database, start it again.
        let id = expiring.secret.derive().id
        try server.restart {
            let hex = id.bytes.map { String(format: "%02x", $0) }.joined()
            let changed = try TestSupport.runSQL(
                database: server.databasePath, "UPDATE key_invites SET expires_at = 1 WHERE id = X'\(hex)'")
            #expect(changed == 1)
        }
        let stale = try paul.client.staleInviteSigners(paul.saved.space)
        #expect(stale.count == 1)
        // The server's word is not enough: the expiry Paul signed into the roster decides.
        #expect(try paul.retireStaleInviteSigners().isEmpty)
        let afterExpiry = Int64(Date().timeIntervalSince1970) + 120
        #expect(try samSession.retireStaleInviteSigners(now: afterExpiry).isEmpty)
        #expect(try paul.retireStaleInviteSigners(now: afterExpiry) == stale)
        #expect(try paul.roster().formerMembers[stale[0]]?.name == SpaceSession.inviteSignerName)
        #expect(try paul.client.staleInviteSigners(paul.saved.space).isEmpty)
        // The live link is untouched.
        #expect(try live.claim(name: "Lee").shape == .member)
        #expect(Self.code { _ = try expiring.claim() } == "invite_expired")
    }

    @Test func dmInviteLandsInTheDirectThread() throws {
        let server = try RunningServer()
        let paul = try server.paulsSpace()
        let link = try InviteLink(
            parsing: InviteLink.mint(.dm, from: paul, options: InviteOptions(personName: "Sam")).text())
        #expect(try link.inspect().shape == .dm)
        let sam = try link.claim()
        let dm = try #require(sam.thread)
        let samSession = try SpaceSession(saved: sam.saved, identity: sam.identity)
        let roster = try samSession.roster()
        let keys = try samSession.threadKeys(roster: roster)
        // Only the DM's key and the names thread's (which holds no message, only what opens
        // members' names): the space's general thread is not part of a DM invite.
        let names = try #require(
            SpaceSession.namesThread(
                keys, threads: try samSession.client.threads(sam.saved.space), roster: roster))
        #expect(Set(keys.keys) == [dm, names.thread])
        #expect(roster.members[sam.saved.member]?.name == "Sam")
        #expect(roster.members.values.contains { $0.name == "Paul" })
        let thread = try samSession.resolveThread(dm.base64URL, roster: roster, keys: keys)
        #expect(thread.name == "Paul & Sam")
        try samSession.send("hi Paul", to: dm, keys: keys)
        let paulRoster = try paul.roster()
        let paulKeys = try paul.threadKeys(roster: paulRoster)
        #expect(try paul.read(dm, roster: paulRoster, keys: paulKeys).messages.map(\.text) == ["hi Paul"])
    }

    @Test func deviceInviteAdoptsTheIdentity() throws {
        let server = try RunningServer()
        let paul = try server.paulsSpace()
        let membersBefore = try paul.roster().members.count
        let link = try InviteLink(parsing: InviteLink.mint(.device, from: paul).text())
        #expect(try link.inspect().shape == .device)
        let phone = try link.claim(deviceLabel: "phone")
        #expect(phone.identity.publicKeys == paul.identity.publicKeys)
        #expect(phone.saved.member == paul.saved.member)
        #expect(try paul.roster().members.count == membersBefore)
        // The new device appears in the member's device list and acts as Paul.
        let devices = try paul.client.deviceTokens(paul.saved.space)
        #expect(devices.map(\.label).contains("phone"))
        let session = try SpaceSession(saved: phone.saved, identity: phone.identity)
        let opened = try session.open(thread: nil)
        try session.send("from my phone", to: opened.thread.id, keys: opened.keys)
        let read = try paul.read(
            opened.thread.id, roster: opened.roster, keys: try paul.threadKeys(roster: opened.roster))
        #expect(read.messages.last?.authorName == "Paul")
        #expect(Self.code { _ = try link.claim() } == "invite_used")
    }

    @Test func setupInviteMakesTheFirstPersonOwner() throws {
        let server = try RunningServer()
        let link = try InviteLink(
            parsing: InviteLink.mintSetup(server: server.url, spaceName: "Book Club").text())
        #expect(link.name == "Book Club")
        let card = try link.inspect()
        #expect(card.shape == .setup)
        #expect(card.spaceName == "Book Club")
        let identity = DeviceIdentity.generate()
        let ana = try link.claim(identity: identity, name: "Ana")
        #expect(ana.saved.adminToken != nil)
        let session = try SpaceSession(saved: ana.saved, identity: identity)
        let roster = try session.roster()
        #expect(roster.owner == ana.saved.member)
        #expect(roster.members[roster.owner]?.name == "Ana")
        let opened = try session.open(thread: nil)
        #expect(opened.thread.name == SpaceSession.defaultThreadName)
        #expect(Self.code { _ = try link.claim(name: "Eve") } == "invite_used")
        // The owner can now invite in turn.
        let next = try InviteLink.mint(.member, from: session)
        #expect(try next.claim(name: "Bo").saved.space == ana.saved.space)
    }

    @Test func concurrentDoubleClaimsHaveExactlyOneWinner() throws {
        let server = try RunningServer()
        let paul = try server.paulsSpace()
        for round in 0..<3 {
            let link = try InviteLink.mint(
                .member, from: paul, options: InviteOptions(personName: "P\(round)"))
            let results = Results()
            let group = DispatchGroup()
            let start = DispatchSemaphore(value: 0)
            for _ in 0..<2 {
                group.enter()
                Thread.detachNewThread {
                    start.wait()
                    results.add(Self.code { _ = try link.claim() } ?? "won")
                    group.leave()
                }
            }
            start.signal()
            start.signal()
            #expect(group.wait(timeout: .now() + 30) == .success)
            #expect(results.sorted == ["invite_used", "won"], "round \(round)")
        }
        // One member per round, plus Paul.
        #expect(try paul.roster().members.count == 4)
    }

    @Test func wrongAndChangedLinksAreRefused() throws {
        let server = try RunningServer()
        let paul = try server.paulsSpace()
        let link = try InviteLink.mint(.member, from: paul)
        // A link with another secret names no invite.
        let other = InviteLink(server: link.server, name: "x", secret: .random())
        #expect(Self.code { _ = try other.inspect() } == "unknown_invite")
        #expect(Self.code { _ = try other.claim() } == "unknown_invite")
        // A claim with the wrong secret for a real id is refused and changes nothing.
        let keys = link.secret.derive()
        let client = try SpaceClient(server: server.url)
        let wrong = KeyInviteWire.ClaimRequest(
            claimSecret: Base64URL.encode([UInt8](repeating: 7, count: 32)))
        #expect(Self.code { _ = try client.claimKeyInvite(keys.id, wrong) } == "claim_invalid")
        #expect(try link.inspect().usesLeft == 1)
        // A member without the invite right cannot mint.
        let sam = try link.claim(name: "Sam")
        let samSession = try SpaceSession(saved: sam.saved, identity: sam.identity)
        #expect(Self.code { _ = try InviteLink.mint(.member, from: samSession) } == "not_authorised")
        // Sam can still add his own device.
        _ = try InviteLink.mint(.device, from: samSession).claim()
    }

    @Test func invitesDieWithTheirInvitersMembership() throws {
        let server = try RunningServer()
        let paul = try server.paulsSpace()
        let leeIdentity = DeviceIdentity.generate()
        let lee = try paul.addMember(keys: leeIdentity.publicKeys, name: "Lee", rights: .invite)
        let leeSaved = try SpaceSession.join(
            server: server.url, space: paul.saved.space, member: lee.id, identity: leeIdentity)
        let leeSession = try SpaceSession(saved: leeSaved, identity: leeIdentity)
        let link = try InviteLink.mint(.member, from: leeSession, options: InviteOptions(personName: "Sam"))
        #expect(try link.inspect().inviterName == "Lee")
        try paul.removeMember(lee.id)
        #expect(Self.code { _ = try link.inspect() } == "inviter_removed")
        #expect(Self.code { _ = try link.claim() } == "inviter_removed")
    }

    @Test func sealedBrandingNeedsTheLinkKey() throws {
        let server = try RunningServer()
        let paul = try server.paulsSpace()
        let link = try InviteLink.mint(.member, from: paul, options: InviteOptions(sealedBranding: true))
        let parsed = try InviteLink(parsing: link.text())
        #expect(parsed.brandingKey != nil)
        let card = try parsed.inspect()
        #expect(card.isSealed)
        #expect(card.spaceName == "Family")
        // Without the branding key the server shows no name in clear.
        let stripped = InviteLink(server: parsed.server, name: parsed.name, secret: parsed.secret)
        let blind = try stripped.inspect()
        #expect(blind.isSealed == false)
        #expect(blind.spaceName.isEmpty && blind.avatar == nil)
        // Claiming with the key saves the space under its real name.
        let saved = try parsed.claim(name: "Sam", deviceLabel: "test").saved
        #expect(saved.name == "Family")
    }

    /// Promise 2: the fragment never reaches a server. After minting and claiming every shape, the
    /// server's log and database hold no form of any link's secret `T`, its wrap key or its
    /// branding key, and no claim secret.
    @Test func fragmentNeverReachesTheServer() throws {
        let server = try RunningServer()
        let paul = try server.paulsSpace()
        var links = [
            try InviteLink.mint(
                .member, from: paul, options: InviteOptions(personName: "Sam", sealedBranding: true)),
            try InviteLink.mint(.dm, from: paul, options: InviteOptions(personName: "Lee")),
            try InviteLink.mint(.device, from: paul),
            try InviteLink.mintSetup(server: server.url, spaceName: "Club"),
        ]
        // One link stays unclaimed: minting alone must not leak either.
        links.append(try InviteLink.mint(.member, from: paul, options: InviteOptions(uses: 3)))
        for link in links.prefix(4) {
            _ = try InviteLink(parsing: link.text()).inspect()
            _ = try InviteLink(parsing: link.text()).claim(deviceLabel: "test")
        }
        let haystacks = try server.stopAndCollect()
        #expect(haystacks[0].count > 1000, "the server logged requests")
        #expect(haystacks.count >= 2)

        var secrets: [(String, [UInt8])] = []
        for (index, link) in links.enumerated() {
            let t = link.secret.secretBytes.unredactedBytes()
            let keys = link.secret.derive()
            let text = link.text()
            secrets.append(("T \(index)", t))
            secrets.append(("T \(index) base58", Array(Base58.encode(t).utf8)))
            secrets.append(("link \(index) fragment", Array(text.split(separator: "#")[1].utf8)))
            secrets.append(("wrap key \(index)", keys.wrapKey.unredactedBytes()))
            secrets.append(("claim secret \(index)", keys.claimSecret.unredactedBytes()))
            if let brandingKey = link.brandingKey {
                secrets.append(("branding key \(index)", brandingKey.secret.unredactedBytes()))
                secrets.append(
                    (
                        "branding key \(index) base58",
                        Array(Base58.encode(brandingKey.secret.unredactedBytes()).utf8)
                    ))
            }
        }
        for (label, secret) in secrets {
            let forms: [[UInt8]] = [
                secret,
                Array(secret.map { String(format: "%02x", $0) }.joined().utf8),
                Array(secret.map { String(format: "%02X", $0) }.joined().utf8),
                Array(Data(secret).base64EncodedString().utf8),
                Array(Base64URL.encode(secret).utf8),
            ]
            for form in forms {
                let probe = Array(form.prefix(max(12, min(form.count, 24))))
                for haystack in haystacks {
                    #expect(!Self.contains(haystack, probe), "\(label) reached the server")
                }
            }
        }
        // The check can fail: the public invite id is in the log (request paths) and the database.
        let id = Array(Base64URL.encode(links[0].secret.derive().id.bytes).utf8)
        #expect(Self.contains(haystacks[0], id))
        #expect(haystacks.dropFirst().contains { Self.contains($0, links[4].secret.derive().id.bytes) })
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return false }
        return Data(haystack).range(of: Data(needle)) != nil
    }

    final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [String] = []
        func add(_ value: String) { lock.withLock { values.append(value) } }
        var sorted: [String] { lock.withLock { values.sorted() } }
    }
}
