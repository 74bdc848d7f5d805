import ClientCore
import Foundation
import SpaceModel
import SpaceServer
import TestSupport
import Testing

/// The email identity anchor against a real SMTP server process (aiosmtpd): every code comes from
/// the message the home server actually sent.
@Suite struct HomeEmailTests {
    struct World {
        let mail: MailServerUnderTest
        let harness: APIHarness

        /// `POST /api/home/email-code` for `address`.
        func ask(_ address: String, source: String = "127.0.0.1") throws -> Reply {
            try harness.send("POST", "/api/home/email-code", json: ["address": address], source: source)
        }

        func verify(_ challenge: String, _ code: String, source: String = "127.0.0.1") throws -> Reply {
            try harness.send(
                "POST", "/api/home/email-verify", json: ["challenge": challenge, "code": code], source: source
            )
        }

        /// Asks for a code, reads the `number`-th mail to `address`, proves it: the answer.
        func prove(_ address: String, number: Int) throws -> Reply {
            let asked = try ask(address)
            #expect(asked.status == 202, "\(asked.json)")
            let code = try mail.code(
                to: address.trimmingCharacters(in: .whitespaces).lowercased(), number: number)
            let proved = try verify(asked.string("challenge"), code)
            #expect(proved.status == 200, "\(proved.json)")
            return proved
        }
    }

    static func world() throws -> World {
        let mail = try MailServerUnderTest()
        var configuration = SpaceServerConfiguration()
        configuration.homeEnabled = true
        configuration.homeMail = HomeMailConfiguration(
            server: mail.address, sender: "eleven@home.test", security: .none)
        return World(mail: mail, harness: try APIHarness(configuration: configuration))
    }

    /// A code that is not `code` (one digit changed).
    static func wrong(_ code: String) -> String {
        String(code.prefix(5)) + (code.last == "1" ? "2" : "1")
    }

    @Test func aFirstSignInMakesTheAccountAndTheSameAddressFindsIt() throws {
        let w = try Self.world()
        let first = try w.prove("Paul@Example.test", number: 1)
        #expect(first["hasAccount"] as? Bool == false)
        let (_, _, token) = try HomeAPITests.account(w.harness, emailTicket: first.string("ticket"))
        // A ticket works once.
        _ = try HomeAPITests.account(w.harness, emailTicket: first.string("ticket"), status: 401)

        // The same address, typed differently, on another device: the account is found, and a
        // second account with it is refused.
        let again = try w.prove(" paul@example.TEST", number: 2)
        #expect(again["hasAccount"] as? Bool == true)
        _ = try HomeAPITests.account(w.harness, emailTicket: again.string("ticket"), status: 409)
        #expect(try w.harness.api.dumpTables()["home_accounts"]?.count == 1)
        #expect(try w.harness.api.dumpTables()["home_emails"]?.count == 1)

        // Signed in, a person adds another address and removes it again.
        let sam = try w.prove("sam@example.test", number: 1)
        #expect(sam["hasAccount"] as? Bool == false)
        let added = try w.harness.send(
            "POST", "/api/home/emails", token: token, json: ["ticket": sam.string("ticket")])
        #expect(added.status == 200, "\(added.json)")
        #expect(try w.prove("sam@example.test", number: 2)["hasAccount"] as? Bool == true)
        let removed = try w.harness.send(
            "DELETE", "/api/home/emails", token: token, json: ["address": "SAM@example.test"])
        #expect(removed["changed"] as? Bool == true)
        #expect(try w.prove("sam@example.test", number: 3)["hasAccount"] as? Bool == false)
        // Removing needs a session; an address of another account is not touched.
        #expect(
            try w.harness.send("DELETE", "/api/home/emails", json: ["address": "paul@example.test"]).status
                == 401)

        // The mail is the code and nothing of the account.
        let message = w.mail.messages(to: "paul@example.test")[0]
        #expect(message.contains("Subject: Your Eleven sign-in code: "))
        #expect(!message.contains(token))
    }

    /// The attack: someone who knows an address asks the home server whether it has an account.
    /// Until the code is proved, the answers for an address with an account and one without are
    /// the same, field for field, including when the limits are hit.
    @Test func aProbeCannotTellWhetherAnAddressHasAnAccount() throws {
        let w = try Self.world()
        let member = try w.prove("paul@example.test", number: 1)
        _ = try HomeAPITests.account(w.harness, emailTicket: member.string("ticket"))
        // An hour later, so the sign-in above counts against no limit.
        w.harness.clock.advance(by: 3601)
        let stranger = "nobody@example.test"
        var transcripts: [[String]] = []
        for (address, number) in [("paul@example.test", 2), (stranger, 1)] {
            var lines: [String] = []
            for attempt in 0..<5 {
                let asked = try w.ask(address, source: "10.0.0.\(number)")
                lines.append("ask \(asked.status) \(asked.error ?? "") \(asked.json.keys.sorted())")
                guard asked.status == 202 else { continue }
                let code = try w.mail.code(to: address, number: number + attempt)
                let wrong = try w.verify(
                    asked.string("challenge"), Self.wrong(code), source: "10.0.0.\(number)")
                lines.append("verify \(wrong.status) \(wrong.error ?? "") \(wrong.string("message"))")
            }
            let limited = try w.ask(address, source: "10.0.0.\(number)")
            lines.append("ask \(limited.status) \(limited.error ?? "") \(limited.string("message"))")
            transcripts.append(lines)
        }
        print("probe, address with an account:\n  " + transcripts[0].joined(separator: "\n  "))
        print("probe, address without one:\n  " + transcripts[1].joined(separator: "\n  "))
        #expect(transcripts[0] == transcripts[1])
        #expect(transcripts[0].last?.hasPrefix("ask 429 too_many_attempts") == true)
        // The mail went out both times: the mail server's view does not differ either.
        #expect(w.mail.messages(to: stranger).count == 5)
    }

    @Test func codesAreSingleUseShortLivedAndLimited() throws {
        let w = try Self.world()
        let address = "ann@example.test"
        // A wrong code, then the right one; the right one again is spent.
        var asked = try w.ask(address)
        var code = try w.mail.code(to: address, number: 1)
        let wrong = try w.verify(asked.string("challenge"), Self.wrong(code))
        #expect(wrong.status == 400 && wrong.error == "code_invalid", "\(wrong.json)")
        #expect(wrong.string("message").contains("4 more tries"))
        // The count is a field of its own, so clients never read it out of the message.
        #expect(wrong.json["triesLeft"] as? Int == 4, "\(wrong.json)")
        #expect(try w.verify(asked.string("challenge"), code).status == 200)
        #expect(try w.verify(asked.string("challenge"), code).error == "code_invalid")

        // Expired after ten minutes.
        asked = try w.ask(address)
        code = try w.mail.code(to: address, number: 2)
        w.harness.clock.advance(by: 601)
        #expect(try w.verify(asked.string("challenge"), code).error == "code_expired")

        // Five wrong tries burn a code: the right one no longer works.
        asked = try w.ask(address)
        code = try w.mail.code(to: address, number: 3)
        for attempt in 1...5 {
            let reply = try w.verify(asked.string("challenge"), Self.wrong(code))
            #expect(reply.error == (attempt < 5 ? "code_invalid" : "too_many_attempts"), "\(reply.json)")
        }
        #expect(try w.verify(asked.string("challenge"), code).error == "code_invalid")

        // Five codes an hour per address, from any source.
        #expect(try w.ask(address, source: "10.1.0.1").status == 202)
        #expect(try w.ask(address, source: "10.1.0.2").status == 202)
        let sixth = try w.ask(address, source: "10.1.0.3")
        #expect(sixth.status == 429 && sixth.error == "too_many_attempts", "\(sixth.json)")
        w.harness.clock.advance(by: 3600)
        #expect(try w.ask(address).status == 202)
    }

    /// Code guessing: ten wrong codes an hour per address across its codes, and thirty wrong
    /// codes an hour per source across addresses; past either, even the right code is refused.
    @Test func guessingIsBoundedPerAddressAndPerSource() throws {
        let w = try Self.world()
        let address = "lee@example.test"
        var guesses = 0
        var last: (challenge: String, code: String)?
        for number in 1...3 {
            let asked = try w.ask(address, source: "10.2.0.\(number)")
            let code = try w.mail.code(to: address, number: number)
            last = (asked.string("challenge"), code)
            for _ in 0..<min(4, 10 - guesses) {
                let reply = try w.verify(
                    asked.string("challenge"), Self.wrong(code), source: "10.2.0.\(number)")
                #expect(reply.error == "code_invalid")
                guesses += 1
            }
        }
        #expect(guesses == 10)
        let right = try w.verify(last!.challenge, last!.code, source: "10.2.0.9")
        #expect(right.status == 429 && right.error == "too_many_attempts", "\(right.json)")

        // One source guessing at unknown challenges is stopped after thirty.
        for _ in 0..<30 {
            #expect(
                try w.verify("AAAAAAAAAAAAAAAAAAAAAA", "123456", source: "10.3.0.1").error == "code_invalid")
        }
        let other = "kim@example.test"
        let asked = try w.ask(other, source: "10.3.0.2")
        let code = try w.mail.code(to: other, number: 1)
        #expect(
            try w.verify(asked.string("challenge"), code, source: "10.3.0.1").error == "too_many_attempts")
        #expect(try w.verify(asked.string("challenge"), code, source: "10.3.0.2").status == 200)
    }

    @Test func nothingOfTheAddressOrCodeIsStoredAndThePepperIsKept() throws {
        let w = try Self.world()
        let proved = try w.prove("Zed.Private@Example.test", number: 1)
        let code = try w.mail.code(to: "zed.private@example.test", number: 1)
        _ = try HomeAPITests.account(w.harness, emailTicket: proved.string("ticket"))
        let text = String(decoding: try w.harness.rawFiles(), as: UTF8.self).lowercased()
        #expect(!text.contains("zed.private"))
        #expect(!text.contains("example.test"))
        // No stored value is the code (raw bytes could hold six digits by chance; values cannot).
        for row in try w.harness.api.dumpTables().values.joined() {
            #expect(!row.contains { $0.text?.contains(code) == true || $0.integer == Int64(code) })
        }

        // The pepper: 32 bytes, mode 0600, beside the database and not in it; reopening the
        // database with it finds the same account.
        let pepper = w.harness.databasePath + ".pepper"
        let attributes = try FileManager.default.attributesOfItem(atPath: pepper)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect((attributes[.size] as? NSNumber)?.intValue == 32)
        var configuration = SpaceServerConfiguration()
        configuration.homeEnabled = true
        configuration.homeMail = HomeMailConfiguration(server: w.mail.address, sender: "eleven@home.test")
        let reopened = try SpaceAPI(
            databasePath: w.harness.databasePath, configuration: configuration, clock: w.harness.clock)
        let asked = reopened.handle(
            APIRequest(
                method: "POST", target: "/api/home/email-code",
                body: Array(#"{"address":"zed.private@example.test"}"#.utf8), remoteAddress: "127.0.0.1"))
        #expect(asked.status == 202)
        let challenge =
            (try JSONSerialization.jsonObject(with: Data(asked.body)) as? [String: Any])?["challenge"]
            as? String
        let second = try w.mail.code(to: "zed.private@example.test", number: 2)
        let proof = reopened.handle(
            APIRequest(
                method: "POST", target: "/api/home/email-verify",
                body: Array(#"{"challenge":"\#(challenge ?? "")","code":"\#(second)"}"#.utf8),
                remoteAddress: "127.0.0.1"))
        let answer = try JSONSerialization.jsonObject(with: Data(proof.body)) as? [String: Any]
        #expect(answer?["hasAccount"] as? Bool == true, "\(String(decoding: proof.body, as: UTF8.self))")
    }

    /// The attack: a device that never proved an address asks an account's devices to let it in
    /// (a made-up ticket, a ticket already spent, or none).
    @Test func anApprovalRequestNeedsAProvedAddress() throws {
        let w = try Self.world()
        let proved = try w.prove("paul@example.test", number: 1)
        _ = try HomeAPITests.account(w.harness, emailTicket: proved.string("ticket"))
        let device = DeviceIdentity.generate()
        let commitment = DeviceApproval().commitment
        func ask(_ ticket: String) throws -> Reply {
            let proof = device.homeProof(
                .approval, anchor: HomeWire.approvalAnchor(device.publicKeys),
                payload: HomeWire.ApprovalRequest.payload(
                    publicKeys: device.publicKeys, commitment: commitment),
                now: w.harness.clock.seconds())
            return try w.harness.send(
                "POST", "/api/home/approvals",
                json: [
                    "ticket": ticket, "publicKeys": device.publicKeys,
                    "commitment": Base64URL.encode(commitment),
                    "proof": proof,
                ])
        }
        for ticket in [Base64URL.encode(Array(repeating: 7, count: 32)), proved.string("ticket"), ""] {
            let reply = try ask(ticket)
            print("approval request with ticket \(ticket.prefix(8))…: \(reply.status) \(reply.error ?? "")")
            #expect(reply.status == 401 && reply.error == "email_not_proved", "\(reply.json)")
        }
        // With a proved address it is accepted, and the account's devices see it.
        let again = try w.prove("paul@example.test", number: 2)
        #expect(try ask(again.string("ticket")).status == 201)
    }

    /// STARTTLS to a mail server whose certificate is trusted through `caFile`; without that
    /// trust no mail goes out and the log says why (and nothing of the address or the code).
    @Test func codesGoOverSTARTTLSOnlyToATrustedServer() throws {
        let mail = try MailServerUnderTest(starttls: true)
        let lines = Lines()
        for trusted in [true, false] {
            var configuration = SpaceServerConfiguration()
            configuration.homeEnabled = true
            var smtp = HomeMailConfiguration(
                server: mail.address, sender: "eleven@home.test", security: .starttls)
            smtp.caFile = trusted ? mail.certificate : nil
            smtp.log = ServerLog { line in lines.append(line) }
            configuration.homeMail = smtp
            let w = World(mail: mail, harness: try APIHarness(configuration: configuration))
            if trusted {
                #expect(try w.prove("tls@example.test", number: 1)["hasAccount"] as? Bool == false)
            } else {
                #expect(try w.ask("tls@example.test").status == 202)
                #expect(
                    TestSupport.eventually(timeout: 60) {
                        lines.all.contains { $0.contains("email_code_failed") }
                    })
                #expect(mail.messages(to: "tls@example.test").count == 1)
            }
        }
        let log = lines.all.joined(separator: "\n")
        #expect(log.contains("email_code_sent") && log.contains("mail_server_tls_failed"), "\(log)")
        #expect(!log.contains("tls@") && !log.contains("example.test"))
    }

    @Test func withoutAMailServerEmailSignInIsOffAndSaysSo() throws {
        let harness = try HomeAPITests.home()
        let reply = try harness.send("POST", "/api/home/email-code", json: ["address": "a@example.test"])
        #expect(reply.status == 503 && reply.error == "email_unavailable")
        let w = try Self.world()
        for bad in [
            "no-at-sign", "a@b", "a@@example.test", "a@example.test\r\nBcc: x@example.test",
            "a b@example.test",
        ] {
            let refused = try w.ask(bad)
            #expect(refused.status == 400 && refused.error == "invalid_address", "\(bad): \(refused.json)")
        }
    }
}

/// Log lines collected from another thread.
final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}
