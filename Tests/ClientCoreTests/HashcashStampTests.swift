import ClientCore
import Foundation
import Mailbox
import Testing

/// The proof of work eleven does for a relay's `permission-required` (the relay accepting the
/// stamps is `RelayHashcashTests`): the stamp's form, the bound on bits, and the search
/// stopping when its owner says so. Inputs are fixed, so every run does the same hashes.
@Suite struct HashcashStampTests {
    static let date = Date(timeIntervalSince1970: 1_795_000_000)

    @Test func aStampNamesItsBitsDateAndResource() throws {
        let stamp = try #require(
            HashcashStamp.mint(
                HashcashRequest(bits: 12, resource: "eleven-relay"), date: Self.date, rand: "00ff"
            ) {
                _ in true
            })
        let fields = stamp.split(separator: ":", omittingEmptySubsequences: false)
        #expect(fields.count == 7)
        #expect(Array(fields[0...5]) == ["1", "12", "261118110640", "eleven-relay", "", "00ff"])
        #expect(!fields[6].isEmpty && fields[6].allSatisfy(\.isHexDigit))
    }

    @Test func theWorkIsBounded() {
        // More bits than eleven works for: refused without a single hash.
        var asked = 0
        let refused = HashcashStamp.mint(
            HashcashRequest(bits: HashcashStamp.maximumBits + 1, resource: "r"), date: Self.date, rand: "ab"
        ) { _ in
            asked += 1
            return true
        }
        #expect(refused == nil && asked == 0)
        // Within the bound, the owner stops the search (a time limit): after three batches.
        var tried: [Int] = []
        let stopped = HashcashStamp.mint(
            HashcashRequest(bits: HashcashStamp.maximumBits, resource: "r"), date: Self.date, rand: "ab"
        ) { count in
            tried.append(count)
            return tried.count < 3
        }
        #expect(stopped == nil)
        #expect(tried == [1 << 16, 2 << 16, 3 << 16])
    }

    @Test func theWelcomesRequestIsRead() {
        func welcome(_ text: String) -> Welcome {
            Welcome(decoding: (try? JSONParser.parse(text))?.objectValue ?? JSONObject())
        }
        #expect(
            HashcashRequest(
                welcome: welcome(
                    #"{"motd":"hi","permission-required":{"hashcash":{"bits":16,"resource":"eleven-relay"}}}"#
                ))
                == HashcashRequest(bits: 16, resource: "eleven-relay"))
        #expect(
            HashcashRequest(
                welcome: welcome(#"{"permission-required":{"hashcash":{"bits":16.0,"resource":"r"}}}"#))
                == HashcashRequest(bits: 16, resource: "r"))
        #expect(HashcashRequest(welcome: welcome(#"{"motd":"hi"}"#)) == nil)
        #expect(
            HashcashRequest(
                welcome: welcome(#"{"permission-required":{"hashcash":{"bits":"16","resource":"r"}}}"#))
                == nil)
        #expect(
            HashcashRequest.submission(stamp: "1:16:x:r::a:b").encoded
                == #"{"method":"hashcash","stamp":"1:16:x:r::a:b","type":"submit-permissions"}"#)
        // A '/' in the relay's resource goes out as it is, as Python's client and the relay write
        // it (Foundation's writer sent "\/", the same JSON string).
        #expect(
            HashcashRequest.submission(stamp: "1:16:x:r/s::a:b").encoded
                == #"{"method":"hashcash","stamp":"1:16:x:r/s::a:b","type":"submit-permissions"}"#)
    }
}
