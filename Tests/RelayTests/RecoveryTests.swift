import Foundation
import Mailbox
import Support
import Testing

@testable import Relay

/// In-memory storage whose database can be switched off: commits fail and `ping` reports it.
final class SwitchableStorage: RelayStorage {
    let store = InMemoryRelayStorage()
    private let down = Locked(false)

    func setDown(_ value: Bool) {
        down.withLock { $0 = value }
        store.setFailure(value ? RelayStorageError(.write, "database unreachable") : nil)
    }

    func load() throws(RelayStorageError) -> RelaySnapshot {
        if down.withLock({ $0 }) { throw RelayStorageError(.read, "database unreachable") }
        return try store.load()
    }
    func enqueue(_ writes: [StorageOp], completion: @escaping @Sendable (RelayStorageError?) -> Void) {
        store.enqueue(writes, completion: completion)
    }
    func close() { store.close() }
    func ping() -> RelayStorageError? {
        down.withLock { $0 } ? RelayStorageError(.open, "database unreachable") : nil
    }
}

@Suite("RelayService without its database")
struct RecoveryTests {
    static let address = ClientAddress(family: .ipv4, host: "192.0.2.10", port: 5555)

    @Test("while the database is away the relay answers with errors; once it is back it reloads and serves")
    func outageAndRecovery() throws {
        let storage = SwitchableStorage()
        let sink = RecordingSink()
        let relay = try RelayService(
            config: RelayConfig(), storage: storage, sink: sink, clock: ManualClock(startTime))
        defer { relay.shutdown() }
        let a = ConnectionID(1)
        relay.connectionOpened(id: a, remote: Self.address)
        relay.received(text: #"{"type":"bind","appid":"a/b","side":"s1"}"#, from: a)
        relay.received(text: #"{"type":"claim","nameplate":"5"}"#, from: a)
        storage.store.waitForCompletions()
        let mailbox = try #require(sink.frames(1).last?["mailbox"]?.stringValue)
        relay.received(text: #"{"type":"open","mailbox":"\#(mailbox)"}"#, from: a)
        relay.received(text: #"{"type":"add","phase":"0","body":"aa"}"#, from: a)
        storage.store.waitForCompletions()
        #expect(sink.types(1).last == "message")

        storage.setDown(true)
        relay.received(text: #"{"type":"add","phase":"1","body":"bb"}"#, from: a)
        storage.store.waitForCompletions()
        #expect(sink.types(1).filter { $0 == "message" }.count == 1, "the lost message is never echoed")
        #expect(sink.all.contains(.close(a)))
        #expect(relay.failure != nil)
        relay.connectionOpened(id: ConnectionID(2), remote: Self.address)
        #expect(sink.types(2) == ["welcome"])
        #expect(sink.frames(2).first?["welcome"]?.objectValue?["error"] != nil)
        relay.received(text: #"{"type":"bind","appid":"a/b","side":"s2"}"#, from: ConnectionID(2))
        #expect(sink.frames(2).last?["error"]?.stringValue?.contains("database") == true)
        usleep(1_500_000)
        #expect(relay.failure != nil, "still down: no recovery")

        storage.setDown(false)
        #expect(eventually(timeout: 5) { relay.failure == nil })
        #expect(relay.recoveries == 1)
        let b = ConnectionID(3)
        relay.connectionOpened(id: b, remote: Self.address)
        relay.received(text: #"{"type":"bind","appid":"a/b","side":"s2"}"#, from: b)
        relay.received(text: #"{"type":"claim","nameplate":"5"}"#, from: b)
        storage.store.waitForCompletions()
        #expect(sink.frames(3).last?["mailbox"]?.stringValue == mailbox, "the reloaded state")
        relay.received(text: #"{"type":"open","mailbox":"\#(mailbox)"}"#, from: b)
        storage.store.waitForCompletions()
        #expect(
            sink.frames(3).filter { $0["type"]?.stringValue == "message" }.map { $0["body"]?.stringValue }
                == ["aa"])
    }
}
