import ClientCore
import Foundation
import SpaceModel
import SpaceServer
import TestSupport
import Testing

@Suite struct MutationTests {
    /// Every field of these bodies is signed or bound, so any changed byte must be refused: with a
    /// 4xx, never a 5xx or a crash, and without changing the database.
    @Test func mutatedSignedBodiesAreRefused() throws {
        let fixture = try BadInputFixture()
        let space = fixture.space
        let base = space.base
        let thread = fixture.thread
        let newcomer = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "New")
        let event = try space.roster.nextEvent(.memberAdded(newcomer), signedBy: space.owner.identity)
        let message = fixture.sam.identity.encrypt(
            Array("mutate me".utf8), with: fixture.key, in: space.space, thread: thread, as: fixture.sam.id)
        let wrap = fixture.sam.identity.wrap(
            fixture.key, for: fixture.kim.record, in: space.space, thread: thread)
        let note = try fixture.sam.identity.note(
            [1, 2, 3], to: fixture.lee.record, in: space.space, from: fixture.sam.id)
        let targets: [(String, String, [UInt8])] = [
            ("\(base)/events", space.owner.token, try fixture.json(["event": event])),
            ("\(base)/threads/\(thread)/messages", fixture.sam.token, try fixture.json(["message": message])),
            ("\(base)/threads/\(thread)/wraps", fixture.sam.token, try fixture.json(["wraps": [wrap]])),
            ("\(base)/inbox", fixture.sam.token, try fixture.json(["note": note])),
        ]
        let before = try fixture.harness.dump()
        var generator = SplitMix64(seed: 0x5EED)
        var codes: [String: Int] = [:]
        for round in 0..<400 {
            let (target, token, valid) = targets[round % targets.count]
            var body = valid
            let changes = Int.random(in: 1...3, using: &generator)
            for _ in 0..<changes {
                let index = Int.random(in: 0..<body.count, using: &generator)
                if Bool.random(using: &generator) {
                    body[index] ^= UInt8.random(in: 1...255, using: &generator)
                } else {
                    body[index] = Array("\"{}[],:0aA-_=\\ ".utf8).randomElement(using: &generator)!
                }
            }
            if round % 10 == 0 {
                body = Array(body.prefix(Int.random(in: 0..<body.count, using: &generator)))
            }
            if body == valid { continue }
            let response = fixture.harness.api.handle(
                APIRequest(
                    method: "POST", target: target, headers: ["Authorization": "Bearer \(token)"], body: body)
            )
            let answer = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            codes[answer?["error"] as? String ?? "?", default: 0] += 1
            #expect(
                (400..<500).contains(response.status),
                "round \(round): \(String(decoding: body, as: UTF8.self))")
        }
        #expect(try fixture.harness.dump() == before)
        // The mutations reached several layers (JSON syntax, field decoding, signatures). Counted by
        // error code: the statuses alone can coincide (most refusals are 400 or 422).
        #expect(codes.count >= 3, "\(codes)")
    }
}
