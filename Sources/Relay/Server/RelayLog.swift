import Foundation
import Mailbox
import Support

/// One value in a log line.
public enum RelayLogValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
}

/// JSON-lines logs (one object per line: `time`, `level`, `event`, then fields).
///
/// Blindness: callers pass only counters, fixed labels (error codes, event names), addresses
/// of the relay itself and operator-supplied settings. Nothing a client sends (bodies, sides,
/// nameplates, mailbox ids, AppIDs) is ever a field, so code words and keys cannot leak here.
public final class RelayLog: Sendable {
    public enum Level: String, Sendable { case info, warning, error }

    private let write: @Sendable (String) -> Void
    private let lock = Locked(())

    /// Logs to standard error.
    public convenience init() {
        self.init { line in
            var bytes = Array(line.utf8)
            bytes.append(0x0A)
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress! + offset, $0.count - offset) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }

    /// Logs to `write` (one call per line, without the newline), e.g. for tests.
    public init(write: @escaping @Sendable (String) -> Void) {
        self.write = write
    }

    public func log(_ level: Level = .info, _ event: String, _ fields: [(String, RelayLogValue)] = []) {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        out += Array("{\"time\":".utf8)
        JSONWriter.writeString(Self.timestamp(), into: &out)
        out += Array(",\"level\":".utf8)
        JSONWriter.writeString(level.rawValue, into: &out)
        out += Array(",\"event\":".utf8)
        JSONWriter.writeString(event, into: &out)
        for (key, value) in fields {
            out.append(UInt8(ascii: ","))
            JSONWriter.writeString(key, into: &out)
            out.append(UInt8(ascii: ":"))
            switch value {
            case .string(let s): JSONWriter.writeString(s, into: &out)
            case .int(let i): out += Array(String(i).utf8)
            case .double(let d): out += Array((d.isFinite ? String(d) : "null").utf8)
            case .bool(let b): out += Array((b ? "true" : "false").utf8)
            }
        }
        out.append(UInt8(ascii: "}"))
        let line = String(decoding: out, as: UTF8.self)
        // One writer at a time so lines never interleave.
        lock.withLock { _ in write(line) }
    }

    /// The time as RFC 3339 UTC with milliseconds.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec),
            Int(now.tv_nsec / 1_000_000))
    }
}
