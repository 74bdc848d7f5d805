import Mailbox
import Relay

/// Drives the relay's protocol core with arbitrary events. The input is split at newlines; each
/// line's first byte picks the event (`0b..oo cc`: `cc` the connection 0–3, `oo` 0 message,
/// 1 connect, 2 disconnect, 3 clock tick) and the rest is the message or the seconds to advance.
/// Must never crash, and after every event the storage writes it emitted, applied to a shadow
/// snapshot, must reproduce the core's durable state exactly (what a store would hold).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRelayCore(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let input = UnsafeBufferPointer(start: start, count: count)
    var seconds = 1_800_000_000.0
    var core = RelayCore(
        config: RelayConfig(), now: RelayInstant(secondsSince1970: seconds), random: FixedRandom())
    var shadow = RelaySnapshot.empty
    var open: Set<UInt64> = []
    for line in input.split(separator: 0x0A, omittingEmptySubsequences: true) {
        guard let header = line.first else { continue }
        let connection = UInt64(header & 0x03)
        let body = Array(line.dropFirst())
        let id = ConnectionID(connection)
        let now = RelayInstant(secondsSince1970: seconds)
        let output: RelayOutput
        switch (header >> 2) & 0x03 {
        case 0:
            if !open.contains(connection) {
                open.insert(connection)
                shadow.apply(core.connectionOpened(id, address: address(connection), now: now).writes)
            }
            output = core.received(body, from: id, now: now)
        case 1:
            guard !open.contains(connection) else { continue }
            open.insert(connection)
            output = core.connectionOpened(id, address: address(connection), now: now)
        case 2:
            guard open.remove(connection) != nil else { continue }
            output = core.connectionClosed(id, now: now)
        default:
            seconds += Double(body.first ?? 1) * 60
            output = core.tick(now: RelayInstant(secondsSince1970: seconds))
        }
        shadow.apply(output.writes)
        precondition(shadow == core.state, "the emitted writes do not reproduce the durable state")
    }
    return 0
}

private func address(_ connection: UInt64) -> ClientAddress {
    ClientAddress(family: .ipv4, host: "192.0.2.\(connection % 2 + 1)", port: 40_000 + Int(connection))
}

/// Deterministic, so a crash reproduces from its input alone.
private struct FixedRandom: RandomNumberGenerator, Sendable {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
