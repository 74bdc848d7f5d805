import Foundation

/// JSON-lines log of the space server. Entries carry methods, paths (ids only, never the query),
/// statuses and timings: never tokens, keys or bodies, so the log can be shipped anywhere.
public struct ServerLog: Sendable {
    private let sink: @Sendable (String) -> Void
    /// Events not written (nor formatted: a request line costs more than the request's own work).
    private let skipping: Set<String>

    /// A log writing each line to `sink`, except entries whose event is in `skipping`.
    public init(skipping: Set<String> = [], sink: @escaping @Sendable (String) -> Void) {
        self.sink = sink
        self.skipping = skipping
    }

    /// A log that discards everything.
    public static let silent = ServerLog(skipping: ["request"]) { _ in }

    /// Writes one entry: `{"time": …, "event": event, …fields}` with sorted keys. `fields` is
    /// built only for an entry that is written: a skipped request line cost a dictionary of
    /// boxed values per request (docs/bot.md, "Session 13").
    public func log(_ event: String, _ fields: @autoclosure () -> [String: any Sendable] = [:]) {
        guard !skipping.contains(event) else { return }
        var object: [String: Any] = ["event": event, "time": Self.timestamp()]
        for (key, value) in fields() { object[key] = value }
        guard JSONSerialization.isValidJSONObject(object),
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        sink(String(decoding: data, as: UTF8.self))
    }

    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = time_t(now.tv_sec)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec),
            Int(now.tv_nsec / 1_000_000))
    }
}
