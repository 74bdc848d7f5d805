import Support
import Testing

@testable import SpaceServer

/// `ServerLog` builds an entry's fields only when it writes the entry: the silent log of
/// `eleven-server --quiet` skips every request line without building its fields.
@Suite struct ServerLogTests {
    @Test func skippedEntriesAreNeverBuilt() throws {
        let lines = Locked<[String]>([])
        let built = Locked(0)
        func fields() -> [String: any Sendable] {
            built.withLock { $0 += 1 }
            return ["status": 200, "path": "/api/x"]
        }
        let log = ServerLog(skipping: ["request"]) { line in lines.withLock { $0.append(line) } }
        log.log("request", fields())
        ServerLog.silent.log("request", fields())
        #expect(built.withLock { $0 } == 0)
        #expect(lines.withLock { $0 }.isEmpty)
        log.log("listening", fields())
        #expect(built.withLock { $0 } == 1)
        let line = try #require(lines.withLock { $0 }.first)
        #expect(line.contains(#""event":"listening""#) && line.contains(#""path":"/api/x""#))
        #expect(line.contains(#""status":200"#))
    }
}
