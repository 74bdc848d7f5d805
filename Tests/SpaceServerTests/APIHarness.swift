import ClientCore
import Foundation
import SQLite
import SpaceModel
import SpaceServer
import Support
import Testing

/// A decoded JSON response.
struct Reply {
    let status: Int
    let json: [String: Any]
    let raw: APIResponse

    var error: String? { json["error"] as? String }

    subscript(key: String) -> Any? { json[key] }

    func string(_ key: String) -> String { json[key] as? String ?? "" }

    func object(_ key: String) -> [String: Any] { json[key] as? [String: Any] ?? [:] }

    func array(_ key: String) -> [[String: Any]] { json[key] as? [[String: Any]] ?? [] }
}

/// A SpaceAPI over a real SQLite file in a fresh temporary directory.
final class APIHarness {
    let directory: URL
    let databasePath: String
    /// Moved by the tests of expiry (tokens, challenges, codes).
    let clock = ManualClock()
    let api: SpaceAPI

    init(
        configuration: SpaceServerConfiguration = SpaceServerConfiguration(),
        observer: (@Sendable (SpaceChange) -> Void)? = nil
    ) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "spaceserver-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        databasePath = directory.appendingPathComponent("space.sqlite").path
        api = try SpaceAPI(
            databasePath: databasePath, configuration: configuration, clock: clock, observer: observer)
    }

    /// A server restarted on `other`'s file (after a test rewrote it), with its own clock;
    /// `other` keeps the directory and removes it.
    init(reopening other: APIHarness) throws {
        directory = other.directory
        databasePath = other.databasePath
        ownsDirectory = false
        clock.set(to: other.clock.now())
        api = try SpaceAPI(databasePath: databasePath, clock: clock)
    }

    private var ownsDirectory = true

    deinit {
        if ownsDirectory { try? FileManager.default.removeItem(at: directory) }
    }

    /// Sends a request; `json` may mix plain values and Encodable key-model values.
    @discardableResult
    func send(
        _ method: String, _ target: String, token: String? = nil, json: [String: Any]? = nil,
        body: [UInt8]? = nil, source: String = "127.0.0.1"
    ) throws -> Reply {
        var headers: [String: String] = [:]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        var bytes = body ?? []
        if let json {
            bytes = Array(try JSONSerialization.data(withJSONObject: try plain(json)))
        }
        let response = api.handle(
            APIRequest(
                method: method, target: target, headers: headers, body: bytes, remoteAddress: source))
        var object: [String: Any] = [:]
        if response.contentType == "application/json", !response.body.isEmpty {
            object = try #require(
                try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        }
        return Reply(status: response.status, json: object, raw: response)
    }

    /// Converts Encodable values inside a JSON-like structure into plain JSON objects.
    func plain(_ value: Any) throws -> Any {
        switch value {
        case let dictionary as [String: Any]: return try dictionary.mapValues { try plain($0) }
        case let array as [Any]: return try array.map { try plain($0) }
        case let encodable as any Encodable:
            if encodable is String || encodable is Int || encodable is Bool || encodable is Int64 {
                return encodable
            }
            let data = try JSONEncoder().encode(encodable)
            return try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        default: return value
        }
    }

    func dump() throws -> [String: [[SQLValue]]] {
        try api.dumpTables()
    }

    /// The raw bytes of the database file and its WAL.
    func rawFiles() throws -> [UInt8] {
        var bytes: [UInt8] = []
        for suffix in ["", "-wal", "-shm"] {
            if let data = FileManager.default.contents(atPath: databasePath + suffix) { bytes += Array(data) }
        }
        return bytes
    }
}

/// A member's device as the tests drive it.
struct TestMember {
    let identity: DeviceIdentity
    let id: MemberID
    var token: String
    var record: MemberRecord { MemberRecord(id: id, keys: identity.publicKeys, rights: rights, name: name) }
    let rights: MemberRights
    let name: String
}

/// A space created through the API, with helpers that do what a client would.
struct TestSpace {
    let harness: APIHarness
    let space: SpaceID
    var owner: TestMember
    let adminToken: String
    var roster: Roster

    var base: String { "/api/spaces/\(space)" }

    static func create(_ harness: APIHarness, name: String = "Family") throws -> TestSpace {
        let identity = DeviceIdentity.generate()
        let ownerID = MemberID.random()
        let space = SpaceID.random()
        let genesis = identity.createSpace(space, as: ownerID, ownerName: "Paul")
        let reply = try harness.send(
            "POST", "/api/spaces", json: ["name": name, "genesis": genesis, "deviceLabel": "laptop"])
        #expect(reply.status == 201, "\(reply.json)")
        let owner = TestMember(
            identity: identity, id: ownerID, token: reply.object("deviceToken")["token"] as? String ?? "",
            rights: .all, name: "Paul")
        return TestSpace(
            harness: harness, space: space, owner: owner, adminToken: reply.string("adminToken"),
            roster: try Roster(genesis: genesis))
    }

    /// Adds a member by public key, signed by `signer` (the owner by default); returns the new member
    /// with the device token the server issued.
    mutating func add(_ name: String, rights: MemberRights = [], by signer: TestMember? = nil) throws
        -> TestMember
    {
        let signer = signer ?? owner
        let identity = DeviceIdentity.generate()
        let record = MemberRecord(id: .random(), keys: identity.publicKeys, rights: rights, name: name)
        let event = try roster.nextEvent(.memberAdded(record), signedBy: signer.identity)
        let reply = try harness.send("POST", "\(base)/members", token: signer.token, json: ["event": event])
        #expect(reply.status == 201, "\(reply.json)")
        try roster.apply(event)
        return TestMember(
            identity: identity, id: record.id, token: reply.object("deviceToken")["token"] as? String ?? "",
            rights: rights, name: name)
    }

    mutating func remove(_ member: TestMember, by signer: TestMember? = nil) throws {
        let signer = signer ?? owner
        let event = try roster.nextEvent(.memberRemoved(member.id), signedBy: signer.identity)
        let reply = try harness.send(
            "DELETE", "\(base)/members/\(member.id)", token: signer.token, json: ["event": event])
        #expect(reply.status == 201, "\(reply.json)")
        try roster.apply(event)
    }

    /// Creates a thread with a fresh key wrapped by `creator` to `recipients`.
    func createThread(by creator: TestMember, for recipients: [TestMember]) throws -> (ThreadID, ThreadKey) {
        let thread = ThreadID.random()
        let key = ThreadKey.random()
        let wraps = recipients.map { creator.identity.wrap(key, for: $0.record, in: space, thread: thread) }
        let reply = try harness.send(
            "POST", "\(base)/threads", token: creator.token, json: ["thread": thread, "wraps": wraps])
        #expect(reply.status == 201, "\(reply.json)")
        return (thread, key)
    }

    /// Posts a message and returns its cursor.
    @discardableResult
    func post(_ text: String, by author: TestMember, thread: ThreadID, key: ThreadKey) throws -> Int64 {
        let message = author.identity.encrypt(
            Array(text.utf8), with: key, in: space, thread: thread, as: author.id)
        let reply = try harness.send(
            "POST", "\(base)/threads/\(thread)/messages", token: author.token, json: ["message": message])
        #expect(reply.status == 201, "\(reply.json)")
        return (reply["cursor"] as? NSNumber)?.int64Value ?? -1
    }

    /// What a client does to read: fetch and verify the roster from the owner's key, fetch its
    /// wrap, open it, list and decrypt messages.
    func read(as member: TestMember, thread: ThreadID, since: Int64 = 0) throws -> [String] {
        let eventsReply = try harness.send("GET", "\(base)/events", token: member.token)
        #expect(eventsReply.status == 200)
        let eventsData = try JSONSerialization.data(withJSONObject: eventsReply["events"] ?? [])
        let events = try JSONDecoder().decode([MembershipEvent].self, from: eventsData)
        let roster = try Roster.verify(events: events, ownerKey: owner.identity.publicKeys.signing)
        let wrapsReply = try harness.send("GET", "\(base)/threads/\(thread)/wraps", token: member.token)
        #expect(wrapsReply.status == 200, "\(wrapsReply.json)")
        let wraps = try JSONDecoder().decode(
            SpaceWire.WrapList.self, from: JSONSerialization.data(withJSONObject: wrapsReply.json))
        // A single wrap (what spaces stored before wrap bundles) or a bundle holding the thread.
        let key =
            if let wrap = wraps.wraps.first {
                try wrap.open(with: member.identity, verifyingAgainst: roster)
            } else {
                try #require(
                    try wraps.bundles?.first?.open(with: member.identity, verifyingAgainst: roster)[thread])
            }
        let list = try harness.send(
            "GET", "\(base)/threads/\(thread)/messages?since=\(since)", token: member.token)
        #expect(list.status == 200)
        let entries = list.array("messages")
        return try entries.map { entry in
            let data = try JSONSerialization.data(withJSONObject: entry["message"] ?? [:])
            let message = try JSONDecoder().decode(EncryptedMessage.self, from: data)
            return String(decoding: try message.decrypt(with: key, verifyingAgainst: roster), as: UTF8.self)
        }
    }
}
