import Testing

@testable import SpaceServer

/// The HTTP server decodes a request's query only when it may hold `wait` (most requests have
/// none or only `from=`/`limit=`); any query that could decode to a `wait` key is still read.
@Suite struct LongPollQueryTests {
    @Test func queriesThatMayNameWaitAreRead() {
        for query in ["wait=5", "since=3&wait=1", "x=1&wait", "w%61it=999", "a=%20", "await=1"] {
            #expect(SpaceHTTPServer.mayName("wait", query), "\(query)")
        }
        for query in ["", "from=0", "since=12&limit=100", "wai=1", "w+ait=1", "WAIT=1"] {
            #expect(!SpaceHTTPServer.mayName("wait", query), "\(query)")
        }
    }
}
