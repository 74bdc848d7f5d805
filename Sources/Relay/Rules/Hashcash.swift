import COpenSSL
import Mailbox

/// Checks Hashcash v1 stamps (`1:bits:date:resource:ext:rand:counter`) for the optional
/// `permission-required` admission control. SHA-1 comes from OpenSSL.
enum Hashcash {
    /// Why a stamp is refused, or nil when it is good.
    static func problem(
        stamp: String, requiredBits: Int, resource: String, now: RelayInstant, maximumAge: Double
    ) -> String? {
        let fields = stamp.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 7 else { return "expected 7 fields" }
        guard fields[0] == "1" else { return "version must be 1" }
        guard let claimed = Int(fields[1]), claimed >= requiredBits else {
            return "must claim at least \(requiredBits) bits"
        }
        guard let date = parseDate(fields[2]) else { return "bad date" }
        guard abs(now.seconds(since: date)) <= maximumAge else { return "date out of range" }
        guard fields[3] == resource else { return "wrong resource" }
        guard leadingZeroBits(sha1(Array(stamp.utf8))) >= requiredBits else {
            return "not enough work"
        }
        return nil
    }

    /// When a stamp made at `date` stops being acceptable (for forgetting used stamps).
    static func expiry(of stamp: String, maximumAge: Double) -> RelayInstant? {
        let fields = stamp.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 7, let date = parseDate(fields[2]) else { return nil }
        return date + maximumAge
    }

    static func sha1(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_sha1(), nil)
        }
        precondition(ok == 1 && length == 20, "OpenSSL SHA-1 failed")
        return digest
    }

    static func leadingZeroBits(_ digest: [UInt8]) -> Int {
        var bits = 0
        for byte in digest {
            if byte == 0 {
                bits += 8
                continue
            }
            bits += byte.leadingZeroBitCount
            break
        }
        return bits
    }

    /// `YYMMDD`, `YYMMDDhhmm` or `YYMMDDhhmmss` (UTC, years 2000–2099).
    static func parseDate(_ text: Substring) -> RelayInstant? {
        let digits = Array(text.utf8)
        guard [6, 10, 12].contains(digits.count), digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        func pair(_ i: Int) -> Int { Int(digits[i] - 0x30) * 10 + Int(digits[i + 1] - 0x30) }
        let year = 2000 + pair(0)
        let month = pair(2)
        let day = pair(4)
        let hour = digits.count >= 10 ? pair(6) : 0
        let minute = digits.count >= 10 ? pair(8) : 0
        let second = digits.count == 12 ? pair(10) : 0
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60 else {
            return nil
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        return RelayInstant(secondsSince1970: Double(days * 86400 + hour * 3600 + minute * 60 + second))
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }
}
