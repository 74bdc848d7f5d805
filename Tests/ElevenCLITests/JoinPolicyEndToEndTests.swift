import Foundation
import TestSupport
import Testing

/// Failed-attempt caps and ended invites with the real binaries (run from `JoinEndToEndTests`
/// against each relay).
extension JoinScenariosCLI {
    /// The same nameplate with other words: a wrong code for `code`.
    static func wrongCode(for code: String) -> String {
        let parts = code.split(separator: "-")
        let words = parts.first == "abacus" ? "abbey-abacus" : "abacus-abbey"
        return "\(words)-\(parts.last ?? "")"
    }

    /// `--max-failures 2`, two uses: a wrong code is tolerated, Sam still gets in, the second
    /// wrong code burns it, and a late joiner is told so at once.
    static func failedAttemptsAreCapped(_ w: World) throws {
        let invite = try w.background(
            w.paul, ["invite", "--short", "--yes", "--uses", "2", "--max-failures", "2"])
        let code = try invite.value(afterPrefix: "Invite code:")
        let eve = try ElevenHome("eve")
        let first = try w.run(eve, ["join", wrongCode(for: code), "--name", "Eve", "--json"])
        #expect(first.status == 3, "\(first.stdout)")
        #expect(try errorCode(first) == "code_mismatch")
        let sam = try ElevenHome("sam")
        let joined = try w.run(sam, ["join", code, "--name", "Sam"])
        #expect(joined.status == 0, "\(joined.stdout) \(joined.stderr)")
        let second = try w.run(eve, ["join", wrongCode(for: code), "--name", "Eve", "--json"])
        #expect(second.status == 3, "\(second.stdout)")
        #expect(try errorCode(second) == "code_mismatch")
        let paulSaw = invite.finish(timeout: 20)
        #expect(paulSaw.status == 3, "\(paulSaw.stdout) \(paulSaw.stderr)")
        #expect(paulSaw.stdout.contains("after 1 more it stops working"))
        #expect(paulSaw.stdout.contains("Sam joined Family."))
        #expect(paulSaw.stderr.contains("it no longer works"))
        let ann = try ElevenHome("ann")
        let started = Date()
        let late = try w.run(ann, ["join", code, "--name", "Ann", "--json"])
        #expect(late.status == 3, "\(late.stdout)")
        #expect(try errorCode(late) == "invite_burned")
        // At once, not after the wait for an attendant.
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(!FileManager.default.fileExists(atPath: ann.path + "/spaces.json"))
    }

    /// Used-up and expired invites tell late joiners why, with distinct codes.
    static func endedInvitesSayWhy(_ w: World) throws {
        let once = try w.background(w.paul, ["invite", "--short", "--yes"])
        let code = try once.value(afterPrefix: "Invite code:")
        let sam = try ElevenHome("sam")
        #expect(try w.run(sam, ["join", code, "--name", "Sam"]).status == 0)
        #expect(once.finish(timeout: 20).status == 0)
        let ann = try ElevenHome("ann")
        let usedUp = try w.run(ann, ["join", code, "--name", "Ann", "--json"])
        #expect(usedUp.status == 3, "\(usedUp.stdout)")
        #expect(try errorCode(usedUp) == "invite_used_up")

        // Four seconds, as below: under a full CI run a one-second invite expired before its
        // nameplate was even allocated, and the first line was the expiry, not the code.
        let expiring = try w.run(w.paul, ["invite", "--short", "--expires", "4s", "--json"])
        #expect(expiring.status == 7, "\(expiring.stdout)")
        let first = expiring.stdout.split(separator: "\n").first.map(String.init) ?? ""
        let object = try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any]
        let expiredCode = try #require(object?["code"] as? String)
        let expired = try w.run(ann, ["join", expiredCode, "--name", "Ann", "--json"])
        #expect(expired.status == 3, "\(expired.stdout)")
        #expect(try errorCode(expired) == "invite_expired")
        // A detached invite that expired: `eleven approve` drops it and leaves the notice.
        // Four seconds: on a loaded machine a one-second invite expired before it was saved
        // (`eleven approve` then found no pending invite at all).
        let made = Date()
        let detached = try w.run(w.paul, ["invite", "--short", "--detach", "--expires", "4s"])
        #expect(detached.status == 0, "\(detached.stdout) \(detached.stderr)")
        let detachedCode =
            detached.stdout.split(separator: "\n").first { $0.hasPrefix("Invite code: ") }
            .map { String($0.dropFirst("Invite code: ".count)) } ?? ""
        let left = 4.5 - Date().timeIntervalSince(made)
        if left > 0 { usleep(UInt32(left * 1_000_000)) }
        let dropped = try w.run(w.paul, ["approve", "--yes", "--timeout", "1s"])
        #expect(dropped.stdout.contains("An invite for Family expired."), "\(dropped.stdout)")
        let tooLate = try w.run(ann, ["join", detachedCode, "--name", "Ann", "--json"])
        #expect(tooLate.status == 3, "\(tooLate.stdout)")
        #expect(try errorCode(tooLate) == "invite_expired")
        #expect(!FileManager.default.fileExists(atPath: ann.path + "/spaces.json"))
    }

    /// `eleven approve` honours the cap stored with a detached invite: a wrong code is counted
    /// and the invite stays pending; Sam gets in; then it is used up.
    static func approveHonoursTheCap(_ w: World) throws {
        let detached = try w.run(w.paul, ["invite", "--short", "--detach", "--max-failures", "2"])
        #expect(detached.status == 0, "\(detached.stderr)")
        let code =
            detached.stdout.split(separator: "\n").first { $0.hasPrefix("Invite code: ") }
            .map { String($0.dropFirst("Invite code: ".count)) } ?? ""
        let eve = try ElevenHome("eve")
        let guessing = try w.background(eve, ["join", wrongCode(for: code), "--name", "Eve"])
        _ = try guessing.value(afterPrefix: "Connecting")
        usleep(300_000)
        let first = try w.run(w.paul, ["approve", "--yes", "--timeout", "3s"])
        #expect(first.status == 0, "\(first.stdout) \(first.stderr)")
        #expect(first.stdout.contains("after 1 more it stops working"))
        #expect(first.stdout.contains("Nobody has used \(code) yet."))
        #expect(guessing.finish(timeout: 20).status == 3)
        let sam = try ElevenHome("sam")
        let joining = try w.background(sam, ["join", code, "--name", "Sam", "--timeout", "60s"])
        _ = try joining.value(afterPrefix: "Connecting")
        let second = try w.run(w.paul, ["approve", "--yes", "--timeout", "20s"])
        #expect(second.status == 0, "\(second.stdout) \(second.stderr)")
        #expect(second.stdout.contains("Sam joined Family."))
        #expect(joining.finish(timeout: 20).status == 0)
        #expect(!FileManager.default.fileExists(atPath: w.paul.path + "/invites.sealed"))
        let late = try w.run(eve, ["join", code, "--name", "Eve", "--json"])
        #expect(late.status == 3, "\(late.stdout)")
        #expect(try errorCode(late) == "invite_used_up")
    }
}
