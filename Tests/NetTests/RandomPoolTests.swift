import Foundation
import Testing

@testable import Net

@Suite struct RandomPoolTests {
    /// Masking keys come from a pool refilled a block at a time: values across many refills are
    /// not repeated (200 random 32-bit values collide with odds of about 1 in 200,000).
    @Test func maskingKeysDifferAcrossRefills() {
        var pool = RandomPool(byteCount: 64)
        let values = (0..<200).map { _ in pool.nextUInt32() }
        #expect(Set(values).count == values.count)
        // Each 16-value block differs from the one before (a refill that kept the old bytes).
        for block in 1..<12 {
            #expect(values[(block - 1) * 16..<block * 16] != values[block * 16..<(block + 1) * 16])
        }
    }

    /// The handshake key is 16 random bytes in base64, fresh each time.
    @Test func handshakeKeysAreFresh() {
        let keys = (0..<100).map { _ in WebSocketHandshake.makeKey() }
        #expect(Set(keys).count == keys.count)
        #expect(keys.allSatisfy { Data(base64Encoded: $0)?.count == 16 })
    }
}
