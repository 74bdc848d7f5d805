import Foundation
import TestSupport
import Testing

/// Issue #21 item 5: every way a space arrives on a signed-in device pushes it to the home server
/// at once, so the person's other devices get it with their next sync, without a step on the
/// device it arrived on. Real relay, space server and home server; `eleven` as two devices of
/// Sam's (A signed in, B linked to A) and as Paul.
@Suite(.serialized) struct VaultArrivalEndToEndTests {
    @Test func everySpaceThatArrivesIsPushedAtOnce() async throws {
        try await TestSupport.offPool {
            let w = try VaultEndToEndTests.world()
            defer { w.home.stop() }
            let paul = try ElevenHome("paul")
            for name in ["ByCode", "ByLink", "ByDeviceLink"] {
                let created = try w.run(
                    paul, ["space", "create", name, "--server", w.spaces.url, "--as", "Paul"])
                #expect(created.status == 0, "\(created.stderr)")
            }
            #expect(
                try w.json(w.a, ["signin", "--server", w.home.url, "--label", "laptop"])["new"] as? Bool
                    == true)
            let (add, code) = try w.deviceAdd()
            #expect(try w.run(w.b, ["device", "link", code, "--label", "phone"]).status == 0)
            #expect(add.finish(timeout: 20).status == 0)

            // Created on A.
            #expect(
                try w.run(w.a, ["space", "create", "Created", "--server", w.spaces.url, "--as", "Sam"]).status
                    == 0)
            // Joined on A with a short code Paul attends.
            let invite = try ChildProcess(
                eleven, ["invite", "--short", "--yes", "--space", "ByCode"],
                environment: ["ELEVEN_HOME": paul.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": w.relay.url])
            let short = try invite.value(afterPrefix: "Invite code:")
            let joined = try w.run(w.a, ["join", short, "--name", "Sam"])
            #expect(joined.status == 0, "\(joined.stderr)")
            #expect(invite.finish(timeout: 20).status == 0)
            // Joined on A with a full-length member link.
            let link = try LinkEndToEndTests.mint(paul, ["--space", "ByLink", "--name", "Sam"])
            let claimed = try w.run(w.a, ["join", link, "--yes"])
            #expect(claimed.status == 0, "\(claimed.stderr)")
            // Paul's own device link for ByDeviceLink, opened on A (Sam acting as Paul there).
            let device = try LinkEndToEndTests.mint(paul, ["--space", "ByDeviceLink", "--device"])
            let adopted = try w.run(w.a, ["join", device, "--yes"])
            #expect(adopted.status == 0, "\(adopted.stderr)")

            // B, which took no step but its own sync, has every one of them and reads them.
            #expect(try w.json(w.b, ["sync"])["spaces"] as? Int == 4)
            #expect(Set(try w.names(w.b)) == ["Created", "ByCode", "ByLink", "ByDeviceLink"])
            for name in ["Created", "ByCode", "ByLink", "ByDeviceLink"] {
                #expect(try w.run(w.b, ["read", "--space", name]).status == 0, "\(name)")
            }
            // A has nothing left to push: each arrival was pushed when it happened.
            #expect(try w.json(w.a, ["sync"])["pushed"] as? Bool == false)
        }
    }
}
