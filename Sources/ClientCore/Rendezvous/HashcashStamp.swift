import COpenSSL
import Foundation
import Mailbox

/// What a relay's welcome asks for before `bind` (`permission-required`): a Hashcash stamp
/// of `bits` leading zero bits for `resource`.
public struct HashcashRequest: Equatable, Sendable {
    public let bits: Int
    public let resource: String

    public init(bits: Int, resource: String) {
        self.bits = bits
        self.resource = resource
    }

    /// The request in a relay's welcome (`"permission-required": {"hashcash": {"bits": …,
    /// "resource": …}}`), nil when it asks for none.
    public init?(welcome: Welcome) {
        guard let hashcash = welcome.permissionRequired?["hashcash"]?.objectValue,
            case .number(let number)? = hashcash["bits"], let value = number.doubleValue,
            value.isFinite, abs(value) < 1e15,
            let resource = hashcash["resource"]?.stringValue
        else { return nil }
        // A fractional count is cut to its whole part, as Foundation's number did before.
        self.init(bits: Int(value), resource: resource)
    }

    /// The `submit-permissions` command carrying `stamp`.
    public static func submission(stamp: String) -> ClientMessage {
        .submitPermission(method: "hashcash", stamp: stamp)
    }
}

/// Mints Hashcash v1 stamps (`1:bits:YYMMDDhhmmss:resource::rand:counter` whose SHA-1 starts
/// with `bits` zero bits), the proof of work a relay may ask for before it serves a client.
/// SHA-1 comes from OpenSSL. The work doubles with every bit, so it is bounded twice: requests
/// above ``maximumBits`` are refused outright, and the search stops when `keepGoing` says so.
public enum HashcashStamp {
    /// The most bits eleven works for: 2^30 hashes take minutes. A relay asking for more is
    /// refusing service in effect.
    public static let maximumBits = 30
    /// Counters tried between two calls of `keepGoing`.
    static let batch = 1 << 16

    /// Searches for a stamp. `rand` is the stamp's random field (the caller's randomness);
    /// `keepGoing(tried)` is asked every ``batch`` tries, and a false ends the search (nil).
    public static func mint(
        _ request: HashcashRequest, date: Date, rand: String, keepGoing: (Int) -> Bool
    ) -> String? {
        guard (0...maximumBits).contains(request.bits) else { return nil }
        let prefix = "1:\(request.bits):\(dateField(date)):\(request.resource)::\(rand):"
        let base = EVP_MD_CTX_new()
        let work = EVP_MD_CTX_new()
        defer {
            EVP_MD_CTX_free(base)
            EVP_MD_CTX_free(work)
        }
        // The prefix is hashed once; each try continues from a copy of that state.
        guard EVP_DigestInit_ex(base, EVP_sha1(), nil) == 1,
            Array(prefix.utf8).withUnsafeBytes({ EVP_DigestUpdate(base, $0.baseAddress, $0.count) }) == 1
        else { return nil }
        var digest = [UInt8](repeating: 0, count: 20)
        var counter = 0
        while true {
            for _ in 0..<batch {
                let suffix = Array(String(counter, radix: 16).utf8)
                var length: UInt32 = 0
                let ok =
                    EVP_MD_CTX_copy_ex(work, base) == 1
                    && suffix.withUnsafeBytes { EVP_DigestUpdate(work, $0.baseAddress, $0.count) } == 1
                    && EVP_DigestFinal_ex(work, &digest, &length) == 1
                guard ok else { return nil }
                if leadingZeroBits(digest) >= request.bits { return prefix + String(counter, radix: 16) }
                counter += 1
            }
            guard keepGoing(counter) else { return nil }
        }
    }

    static func leadingZeroBits(_ digest: [UInt8]) -> Int {
        var bits = 0
        for byte in digest {
            guard byte == 0 else { return bits + byte.leadingZeroBitCount }
            bits += 8
        }
        return bits
    }

    /// `YYMMDDhhmmss` in UTC.
    static func dateField(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let fields = [
            (c.year ?? 2000) % 100, c.month ?? 1, c.day ?? 1, c.hour ?? 0, c.minute ?? 0, c.second ?? 0,
        ]
        return fields.map { $0 < 10 ? "0\($0)" : "\($0)" }.joined()
    }
}
