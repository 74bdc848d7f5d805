import Foundation
import Mailbox
import Support
import Testing

@testable import Relay

/// Records what the service hands to the glue.
final class RecordingSink: RelayConnectionSink {
    enum Event: Equatable {
        case frame(ConnectionID, String)
        case close(ConnectionID)
        case storageFailed(RelayStorageError.Code)
    }

    private let events = Locked<[Event]>([])
    /// Runs when storage fails (on the storage's thread), as a glue's shutdown would.
    let onStorageFailure = Locked<(@Sendable () -> Void)?>(nil)

    func send(text: String, to connection: ConnectionID) {
        events.withLock { $0.append(.frame(connection, text)) }
    }
    func close(_ connection: ConnectionID) { events.withLock { $0.append(.close(connection)) } }
    func storageFailed(_ error: RelayStorageError) {
        events.withLock { $0.append(.storageFailed(error.code)) }
        onStorageFailure.withLock { $0 }?()
    }

    var all: [Event] { events.withLock { $0 } }

    /// The frames `c` received, parsed.
    func frames(_ c: UInt64) -> [JSONObject] {
        all.compactMap {
            guard case .frame(let id, let text) = $0, id == ConnectionID(c) else { return nil }
            return try? JSONParser.parse(text).objectValue
        }
    }

    func types(_ c: UInt64) -> [String] { frames(c).compactMap { $0["type"]?.stringValue } }
}

/// A storage that holds every commit until the test releases it.
final class GatedStorage: RelayStorage {
    private let held = Locked<[(writes: [StorageOp], completion: @Sendable (RelayStorageError?) -> Void)]>([])
    let committed = Locked(RelaySnapshot())

    func load() throws(RelayStorageError) -> RelaySnapshot { .empty }
    func enqueue(_ writes: [StorageOp], completion: @escaping @Sendable (RelayStorageError?) -> Void) {
        held.withLock { $0.append((writes, completion)) }
    }
    func close() {}

    var heldCount: Int { held.withLock { $0.count } }

    /// Commits (or fails) everything held, in order.
    func release(failing error: RelayStorageError? = nil) {
        let items = held.withLock { h in
            let items = h
            h = []
            return items
        }
        // One commit's completions, run as ``GroupCommit`` runs them.
        CommitBatch.run {
            for item in items {
                if error == nil { committed.withLock { $0.apply(item.writes) } }
                item.completion(error)
            }
        }
    }
}

/// Records each batch the service hands over (``RelayConnectionSink/deliver(_:)``).
final class BatchRecordingSink: RelayConnectionSink {
    let batches = Locked<[[RelayDelivery]]>([])

    func deliver(_ batch: [RelayDelivery]) { batches.withLock { $0.append(batch) } }
    func send(text: String, to connection: ConnectionID) {
        Issue.record("a frame handed over alone")
    }
    func close(_ connection: ConnectionID) { Issue.record("a close handed over alone") }

    /// The batch's frames as (connection, type, kind).
    static func frames(_ batch: [RelayDelivery]) -> [(UInt64, String, RelayFrameKind)] {
        batch.compactMap { item in
            guard case .frame(let bytes, let kind, let id) = item,
                let type = (try? JSONParser.parse(bytes))?.objectValue?["type"]?.stringValue
            else { return nil }
            return (id.rawValue, type, kind)
        }
    }
}

@Suite("RelayService")
struct ServiceTests {
    static let address = ClientAddress(family: .ipv4, host: "192.0.2.10", port: 5555)

    @Test("replies that depend on a write wait for its commit, and later replies wait behind them")
    func commitBeforeReply() throws {
        let storage = GatedStorage()
        let sink = RecordingSink()
        let clock = ManualClock(startTime)
        let relay = try RelayService(config: RelayConfig(), storage: storage, sink: sink, clock: clock)
        relay.connectionOpened(id: ConnectionID(1), remote: Self.address)
        #expect(sink.types(1) == ["welcome"], "no write, delivered at once")
        relay.received(text: #"{"type":"bind","appid":"a/b","side":"s1","id":"01"}"#, from: ConnectionID(1))
        #expect(sink.types(1) == ["welcome", "ack"])
        relay.received(text: #"{"type":"claim","nameplate":"5","id":"02"}"#, from: ConnectionID(1))
        relay.received(text: #"{"type":"ping","ping":3,"id":"03"}"#, from: ConnectionID(1))
        #expect(sink.types(1) == ["welcome", "ack"], "nothing before the claim is durable")
        #expect(storage.heldCount == 1)
        storage.release()
        #expect(sink.types(1) == ["welcome", "ack", "ack", "claimed", "ack", "pong"])
        #expect(storage.committed.withLock { $0.nameplates.count } == 1)
        let frames = sink.frames(1)
        #expect(frames[2]["id"] == "02")
        #expect(frames[3]["mailbox"]?.stringValue?.count == 13)
        #expect(frames[5]["pong"] == .number(JSONNumber(3)))
        #expect(frames.allSatisfy { $0["server_tx"] != nil })
    }

    @Test("frames wait only for the writes they reveal, not for other connections' commits")
    func dependencies() throws {
        let storage = GatedStorage()
        let sink = RecordingSink()
        let relay = try RelayService(
            config: RelayConfig(), storage: storage, sink: sink, clock: ManualClock(startTime))
        for c in UInt64(1)...3 {
            relay.connectionOpened(id: ConnectionID(c), remote: Self.address)
            relay.received(text: #"{"type":"bind","appid":"a/b","side":"s\#(c)"}"#, from: ConnectionID(c))
        }
        // 1 creates a nameplate and queues a message: both held.
        relay.received(text: #"{"type":"claim","nameplate":"5"}"#, from: ConnectionID(1))
        relay.received(text: #"{"type":"open","mailbox":"m"}"#, from: ConnectionID(1))
        relay.received(text: #"{"type":"add","phase":"0","body":"aa"}"#, from: ConnectionID(1))
        // 2 pings: independent of anything uncommitted, delivered at once.
        relay.received(text: #"{"type":"ping","ping":1}"#, from: ConnectionID(2))
        #expect(sink.types(2) == ["welcome", "ack", "ack", "pong"])
        // 2 claims the uncommitted nameplate and 3 opens the uncommitted mailbox: they wait.
        relay.received(text: #"{"type":"claim","nameplate":"5"}"#, from: ConnectionID(2))
        relay.received(text: #"{"type":"open","mailbox":"m"}"#, from: ConnectionID(3))
        #expect(sink.types(2) == ["welcome", "ack", "ack", "pong"])
        #expect(sink.types(3) == ["welcome", "ack"])
        #expect(sink.types(1) == ["welcome", "ack"])
        storage.release()
        #expect(sink.types(1) == ["welcome", "ack", "ack", "claimed", "ack", "ack", "message"])
        #expect(sink.types(2) == ["welcome", "ack", "ack", "pong", "ack", "claimed"])
        #expect(sink.types(3) == ["welcome", "ack", "ack", "message"], "the replay came after the commit")
    }

    @Test("a commit's frames for every connection go to the sink in one batch, each connection's in order")
    func oneBatchPerCommit() throws {
        let storage = GatedStorage()
        let sink = BatchRecordingSink()
        let relay = try RelayService(
            config: RelayConfig(), storage: storage, sink: sink, clock: ManualClock(startTime))
        for c in UInt64(1)...2 {
            relay.connectionOpened(id: ConnectionID(c), remote: Self.address)
            relay.received(text: #"{"type":"bind","appid":"a/b","side":"s\#(c)"}"#, from: ConnectionID(c))
        }
        relay.received(text: #"{"type":"claim","nameplate":"5"}"#, from: ConnectionID(1))
        relay.received(text: #"{"type":"open","mailbox":"m"}"#, from: ConnectionID(1))
        relay.received(text: #"{"type":"add","phase":"0","body":"aa"}"#, from: ConnectionID(1))
        relay.received(text: #"{"type":"claim","nameplate":"5"}"#, from: ConnectionID(2))
        relay.received(text: #"{"type":"open","mailbox":"m"}"#, from: ConnectionID(2))
        let before = sink.batches.withLock { $0.count }
        storage.release()
        let batches = sink.batches.withLock { Array($0[before...]) }
        #expect(batches.count == 1)
        let frames = batches.first.map(BatchRecordingSink.frames) ?? []
        #expect(frames.filter { $0.0 == 1 }.map(\.1) == ["ack", "claimed", "ack", "ack", "message"])
        #expect(frames.filter { $0.0 == 2 }.map(\.1) == ["ack", "claimed", "ack", "message"])
        #expect(frames.allSatisfy { ($0.1 == "ack") == ($0.2 == .ack) && $0.2 != .error })
    }

    @Test("a reply that changes only the idle clock does not wait for a commit")
    func lazyTouch() throws {
        let storage = GatedStorage()
        let sink = RecordingSink()
        let clock = ManualClock(startTime)
        let relay = try RelayService(config: RelayConfig(), storage: storage, sink: sink, clock: clock)
        let a = ConnectionID(1)
        relay.connectionOpened(id: a, remote: Self.address)
        relay.received(text: #"{"type":"bind","appid":"a/b","side":"s1"}"#, from: a)
        relay.received(text: #"{"type":"allocate"}"#, from: a)
        storage.release()
        let nameplate = try #require(sink.frames(1).last?["nameplate"]?.stringValue)
        // The stock client claims what it allocated, then opens: only touches, no new rows (late
        // enough that they are written at all).
        clock.advance(by: RelayCore.touchResolution)
        relay.received(text: #"{"type":"claim","nameplate":"\#(nameplate)"}"#, from: a)
        #expect(sink.types(1).last == "claimed")
        let mailbox = try #require(sink.frames(1).last?["mailbox"]?.stringValue)
        clock.advance(by: RelayCore.touchResolution)
        relay.received(text: #"{"type":"open","mailbox":"\#(mailbox)"}"#, from: a)
        #expect(sink.types(1) == ["welcome", "ack", "ack", "allocated", "ack", "claimed", "ack"])
        #expect(storage.heldCount == 2, "the touches are still queued for storage")
        relay.received(text: #"{"type":"add","phase":"0","body":"aa"}"#, from: a)
        #expect(sink.types(1).last == "ack", "a new message waits for its commit")
        storage.release()
        #expect(sink.types(1).suffix(2) == ["ack", "message"])
    }

    @Test("a failed commit reveals nothing, closes every connection and turns new ones away with an error")
    func storageFailure() throws {
        let storage = GatedStorage()
        let sink = RecordingSink()
        let relay = try RelayService(
            config: RelayConfig(), storage: storage, sink: sink, clock: ManualClock(startTime))
        for c in UInt64(1)...2 {
            relay.connectionOpened(id: ConnectionID(c), remote: Self.address)
            relay.received(text: #"{"type":"bind","appid":"a/b","side":"s\#(c)"}"#, from: ConnectionID(c))
        }
        relay.received(text: #"{"type":"open","mailbox":"m"}"#, from: ConnectionID(1))
        relay.received(text: #"{"type":"add","phase":"0","body":"ab"}"#, from: ConnectionID(1))
        storage.release(failing: RelayStorageError(.write, "disk full"))
        #expect(!sink.types(1).contains("message"), "an uncommitted message is never echoed")
        #expect(sink.all.contains(.storageFailed(.write)))
        #expect(sink.all.contains(.close(ConnectionID(1))))
        #expect(sink.all.contains(.close(ConnectionID(2))))
        #expect(relay.failure?.code == .write)
        relay.connectionOpened(id: ConnectionID(3), remote: Self.address)
        #expect(sink.all.last == .close(ConnectionID(3)))
        #expect(sink.types(3) == ["welcome"])
        #expect(
            sink.frames(3).first?["welcome"]?.objectValue?["error"]?.stringValue?.contains("database") == true
        )
    }

    @Test("shutting down from the storage-failure callback does not deadlock")
    func shutdownFromFailure() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let storage = try SQLiteRelayStorage(path: dir.path("relay.sqlite"))
        let sink = RecordingSink()
        let relay = try RelayService(
            config: RelayConfig(), storage: storage, sink: sink, clock: ManualClock(startTime))
        let done = DispatchSemaphore(value: 0)
        sink.onStorageFailure.withLock {
            $0 = {
                relay.shutdown()
                storage.flush()
                done.signal()
            }
        }
        relay.connectionOpened(id: ConnectionID(1), remote: Self.address)
        relay.received(text: #"{"type":"bind","appid":"a/b","side":"s1"}"#, from: ConnectionID(1))
        storage.close()  // the disk goes away
        relay.received(text: #"{"type":"open","mailbox":"m"}"#, from: ConnectionID(1))
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(relay.failure?.code == .closed)
        #expect(sink.all.contains(.close(ConnectionID(1))))
    }

    @Test("a full exchange through the service on SQLite, and a restart in the middle")
    func sqliteExchange() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        let clock = ManualClock(startTime)
        var sink = RecordingSink()
        var storage = try SQLiteRelayStorage(path: path)
        var relay = try RelayService(config: RelayConfig(), storage: storage, sink: sink, clock: clock)
        let a = ConnectionID(1)
        relay.connectionOpened(id: a, remote: Self.address)
        relay.received(text: #"{"type":"bind","appid":"x.example/app","side":"aaaa"}"#, from: a)
        relay.received(text: #"{"type":"allocate"}"#, from: a)
        storage.flush()
        let nameplate = try #require(
            sink.frames(1).first { $0["type"] == "allocated" }?["nameplate"]?.stringValue)
        relay.received(text: #"{"type":"claim","nameplate":"\#(nameplate)"}"#, from: a)
        storage.flush()
        let mailbox = try #require(sink.frames(1).first { $0["type"] == "claimed" }?["mailbox"]?.stringValue)
        relay.received(text: #"{"type":"open","mailbox":"\#(mailbox)"}"#, from: a)
        relay.received(text: #"{"type":"add","phase":"pake","body":"0a0b","id":"ee01"}"#, from: a)
        storage.flush()
        let echo = try #require(sink.frames(1).last)
        #expect(echo["type"] == "message")
        #expect(echo["body"] == "0a0b")
        #expect(echo["id"] == "ee01")
        #expect(echo["side"] == "aaaa")

        // Restart: a new service on the same file.
        relay.connectionClosed(id: a)
        relay.shutdown()
        clock.advance(by: 30)
        sink = RecordingSink()
        storage = try SQLiteRelayStorage(path: path)
        relay = try RelayService(config: RelayConfig(), storage: storage, sink: sink, clock: clock)
        let b = ConnectionID(2)
        relay.connectionOpened(id: b, remote: Self.address)
        relay.received(text: #"{"type":"bind","appid":"x.example/app","side":"bbbb"}"#, from: b)
        relay.received(text: #"{"type":"claim","nameplate":"\#(nameplate)"}"#, from: b)
        relay.received(text: #"{"type":"open","mailbox":"\#(mailbox)"}"#, from: b)
        storage.flush()
        #expect(sink.types(2) == ["welcome", "ack", "ack", "claimed", "ack", "message"])
        #expect(sink.frames(2)[3]["mailbox"]?.stringValue == mailbox)
        #expect(sink.frames(2)[5]["body"] == "0a0b")
        relay.shutdown()
    }

    @Test("many threads at once: every connection sees its frames in order")
    func concurrency() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let storage = try SQLiteRelayStorage(
            path: dir.path("relay.sqlite"), options: .init(synchronous: .normal))
        let sink = RecordingSink()
        var config = RelayConfig()
        config.limits = .unlimited
        let relay = try RelayService(config: config, storage: storage, sink: sink)
        let pairs = 20
        DispatchQueue.concurrentPerform(iterations: pairs * 2) { i in
            let id = ConnectionID(UInt64(i + 1))
            relay.connectionOpened(id: id, remote: Self.address)
            relay.received(text: #"{"type":"bind","appid":"x/y","side":"side\#(i)"}"#, from: id)
            relay.received(text: #"{"type":"open","mailbox":"pair\#(i / 2)"}"#, from: id)
            for n in 0..<5 {
                relay.received(text: #"{"type":"add","phase":"\#(n)","body":"0\#(n)","id":\#(n)}"#, from: id)
            }
        }
        storage.flush()
        for i in 0..<(pairs * 2) {
            let frames = sink.frames(UInt64(i + 1))
            let mine = frames.filter { $0["type"] == "message" && $0["side"]?.stringValue == "side\(i)" }
            #expect(
                mine.map { $0["phase"]?.stringValue } == (0..<5).map { String($0) }, "own echoes in order")
            #expect(frames.first?["type"] == "welcome")
            #expect(
                frames.filter { $0["type"] == "message" }.count == 10,
                "both sides' messages, replayed or live")
        }
        #expect(storage.statistics.batches > 0)
        #expect(relay.gauges.subscribedConnections == pairs * 2)
        relay.shutdown()
    }
}

@Suite("Acknowledged means durable")
struct DurabilityTests {
    @Test("at any moment, the database holds every message already echoed to its sender")
    func echoedMessagesAreCommitted() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        let storage = try SQLiteRelayStorage(path: path)
        // A second connection reads what is committed, as a restart after `kill -9` would.
        let observer = try SQLiteRelayStorage(path: path)
        let sink = RecordingSink()
        var config = RelayConfig()
        config.limits = .unlimited
        let relay = try RelayService(config: config, storage: storage, sink: sink)
        let writers = 6
        let perWriter = 40
        let checked = Locked(0)
        let lost = Locked<[String]>([])
        let writersDone = Locked(0)
        // The observer runs on its own thread for the whole time the writers run.
        let observed = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let thread = Thread {
            started.signal()
            var rounds = 0
            while writersDone.withLock({ $0 }) < writers, rounds < 5000 {
                rounds += 1
                let echoed = (1...writers).flatMap { sink.frames(UInt64($0)) }.filter {
                    $0["type"] == "message"
                }
                guard let snapshot = try? observer.load() else { continue }
                for frame in echoed {
                    guard let side = frame["side"]?.stringValue, let body = frame["body"]?.stringValue
                    else { continue }
                    let key = MailboxKey(app: "x/y", id: MailboxID("box\(side.dropFirst())"))
                    if snapshot.mailboxes[key]?.messages.contains(where: { $0.body == body }) != true {
                        lost.withLock { $0.append(body) }
                    }
                    checked.withLock { $0 += 1 }
                }
                usleep(500)
            }
            observed.signal()
        }
        thread.start()
        started.wait()
        DispatchQueue.concurrentPerform(iterations: writers) { i in
            let id = ConnectionID(UInt64(i + 1))
            relay.connectionOpened(id: id, remote: nil)
            relay.received(text: #"{"type":"bind","appid":"x/y","side":"w\#(i)"}"#, from: id)
            relay.received(text: #"{"type":"open","mailbox":"box\#(i)"}"#, from: id)
            for n in 0..<perWriter {
                relay.received(text: #"{"type":"add","phase":"\#(n)","body":"\#(i)0\#(n)"}"#, from: id)
                usleep(200)
            }
            writersDone.withLock { $0 += 1 }
        }
        #expect(observed.wait(timeout: .now() + 60) == .success)
        storage.flush()
        let total = (1...writers).flatMap { sink.frames(UInt64($0)) }.filter { $0["type"] == "message" }.count
        #expect(total == writers * perWriter)
        #expect(checked.withLock { $0 } > 0, "some echoes were checked while traffic ran")
        #expect(lost.withLock { $0 }.isEmpty, "echoed before committed")
        observer.close()
        relay.shutdown()
    }
}
