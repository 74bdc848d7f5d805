import Foundation
import Testing

@testable import Bot

@Suite struct BotKeyTests {
    @Test func hexAndRawKeysParse() {
        #expect(BotSealingKey.parse(Array(repeating: 7, count: 32)) != nil)
        #expect(BotSealingKey.parse(Array((String(repeating: "ab", count: 32) + "\n").utf8)) != nil)
        #expect(BotSealingKey.parse(Array("short".utf8)) == nil)
        #expect(BotSealingKey.parse(Array(String(repeating: "zz", count: 32).utf8)) == nil)
    }
}
