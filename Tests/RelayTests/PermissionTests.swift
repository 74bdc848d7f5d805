import Foundation
import Mailbox
import Testing

@testable import Relay

@Suite("Hashcash admission")
struct PermissionTests {
    static let bits = 8
    static let resource = "relay.example"
    static let policy = PermissionPolicy.hashcash(bits: bits, resource: resource)

    /// Mints a stamp by brute force (about 2^8 tries).
    static func mint(
        date: String = "231114", resource: String = resource, bits: Int = bits, salt: String = "s"
    )
        -> String
    {
        var counter = 0
        while true {
            let stamp = "1:\(bits):\(date):\(resource)::\(salt):\(counter)"
            if Hashcash.leadingZeroBits(Hashcash.sha1(Array(stamp.utf8))) >= bits { return stamp }
            counter += 1
        }
    }

    @Test("SHA-1 and the date parser are right")
    func primitives() {
        #expect(
            Hashcash.sha1(Array("abc".utf8)).map { String(format: "%02x", $0) }.joined()
                == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Hashcash.parseDate("231114")?.secondsSince1970 == 1_699_920_000)
        #expect(
            Hashcash.parseDate("2311142213")?.secondsSince1970 == Double(1_699_920_000 + 22 * 3600 + 13 * 60))
        #expect(Hashcash.parseDate("231314") == nil)
        #expect(Hashcash.parseDate("23111") == nil)
        #expect(Hashcash.leadingZeroBits([0, 0x10]) == 11)
    }

    @Test(
        "the welcome asks for hashcash and bind waits for it",
        arguments: ["submit-permission", "submit-permissions"])
    func admission(_ spelling: String) {
        var h = CoreHarness(config: RelayConfig(permission: Self.policy))
        guard case .welcome(let welcome) = h.connect(1).first else {
            Issue.record("no welcome")
            return
        }
        #expect(
            welcome.permissionRequired
                == JSONObject([
                    "hashcash": .object(
                        JSONObject(["bits": .number(JSONNumber(8)), "resource": "relay.example"]))
                ]))
        #expect(
            h.send(1, ["type": "bind", "appid": "a", "side": "s"]).last?.errorCode == .permissionRequired)
        let stamp = Self.mint()
        #expect(
            h.send(1, ["type": .string(spelling), "method": "hashcash", "stamp": .string(stamp)]) == [
                .ack(id: .null)
            ])
        #expect(h.send(1, ["type": "bind", "appid": "a", "side": "s"]) == [.ack(id: .null)])
        #expect(
            h.send(1, ["type": .string(spelling), "method": "hashcash", "stamp": .string(stamp)]).last?
                .errorCode
                == .permissionAlreadyGranted)
    }

    @Test("bad stamps are refused with a reason")
    func refusals() {
        var h = CoreHarness(config: RelayConfig(permission: Self.policy))
        h.connect(1)
        func submit(_ stamp: String?, method: String = "hashcash") -> RelayError.Code? {
            var members: [JSONObject.Member] = [
                .init(key: "type", value: "submit-permission"), .init(key: "method", value: .string(method)),
            ]
            if let stamp { members.append(.init(key: "stamp", value: .string(stamp))) }
            return h.send(1, JSONWriter.string(.object(JSONObject(members)))).last?.errorCode
        }
        #expect(submit(Self.mint(), method: "none") == .permissionMethodUnsupported)
        #expect(submit(nil) == .permissionInvalid)
        #expect(submit("garbage") == .permissionInvalid)
        #expect(submit(Self.mint(resource: "elsewhere")) == .permissionInvalid)
        #expect(submit(Self.mint(date: "200101")) == .permissionInvalid, "too old")
        #expect(submit(Self.mint(bits: 4)) == .permissionInvalid, "claims too few bits")
        // A stamp that claims 8 bits but has no work.
        var lazy = 0
        var weak = ""
        repeat {
            weak = "1:8:231114:\(Self.resource)::w:\(lazy)"
            lazy += 1
        } while Hashcash.leadingZeroBits(Hashcash.sha1(Array(weak.utf8))) >= 8
        #expect(submit(weak) == .permissionInvalid)
        let good = Self.mint(salt: "once")
        #expect(submit(good) == nil)
        h.connect(2)
        #expect(
            h.send(2, ["type": "submit-permission", "method": "hashcash", "stamp": .string(good)]).last?
                .errorCode
                == .permissionReused)
    }
}
