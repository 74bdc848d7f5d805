import ClientCore
import Foundation
import JoinProtocol
import SpaceModel
import Testing

/// The joiner's keys as a type (``JoinerKeys``): parsed once where the request is read, kept as
/// sent when they do not parse, and stored as the text pending joins and attendants always saved.
@Suite struct JoinerKeysTests {
    @Test func aPendingJoinSavedBeforeReadsAndWritesTheSameText() throws {
        let saved = #"{"deviceLabel":"laptop","displayName":"Sam","publicKeys":"keys-of-sam"}"#
        let request = try JSONDecoder().decode(JoinRequest.self, from: Data(saved.utf8))
        #expect(
            request
                == JoinRequest(
                    displayName: "Sam", deviceLabel: "laptop", publicKeys: JoinerKeys(text: "keys-of-sam")))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(String(decoding: try encoder.encode(request), as: UTF8.self) == saved)
    }

    @Test func anAdmittingAttendantSavesTheKeysAsText() throws {
        let keys = DeviceIdentity.generate().publicKeys
        var attendant = InviteAttendant(policy: .init(uses: 1, maxFailures: 1, expiresAt: 1000))
        _ = attendant.resume(now: 0)
        _ = attendant.handle(
            .allocated(
                Rendezvous.Nameplate("42"),
                connection: RendezvousMachine(
                    appID: JoinIntent.join.appID, side: Rendezvous.Side("0000000000"),
                    start: .claim(Rendezvous.Nameplate("42")))), now: 1)
        _ = attendant.handle(.admitting(joinerKeys: JoinerKeys(text: keys.text)), now: 2)
        let text = String(decoding: try JSONEncoder().encode(attendant), as: UTF8.self)
        #expect(text.contains(#""joinerKeys":"\#(keys.text)""#))
        #expect(try JSONDecoder().decode(InviteAttendant.self, from: Data(text.utf8)) == attendant)
    }

    @Test func realKeysParseAndKeepTheirText() throws {
        let keys = DeviceIdentity.generate().publicKeys
        #expect(JoinerKeys(text: keys.text) == JoinerKeys(keys))
        #expect(try JoinerKeys(text: keys.text).keys() == keys)
        #expect(JoinerKeys(text: "keys-of-sam").text == "keys-of-sam")
        #expect(throws: KeyModelError.self) { try JoinerKeys(text: "keys-of-sam").keys() }
    }
}
