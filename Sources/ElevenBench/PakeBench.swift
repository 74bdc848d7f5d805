import CSodium
import Foundation
import PAKE

// `eleven-bench pake`: full SPAKE2 exchanges per second for each suite, and the cost of our
// edwards25519 exchange relative to the bare libsodium operations it needs, measured in the
// same process, interleaved round by round so background load hits both alike.

private let pakeUsage = """
    usage: eleven-bench pake [--seconds S] [--rounds N]

    Measures, in one run:
      - full exchanges per second (both sides: password preparation, messages, and for the
        RFC 9382 suites key confirmation) for SPAKE2-edwards25519, SPAKE2-P256 and the Magic
        Wormhole symmetric variant;
      - the ratio of our edwards25519 exchange to the libsodium floor: the libsodium calls that
        exchange makes, called directly with fixed inputs. Per side: 2 crypto_scalarmult_ed25519_noclamp
        (w·M, w·N), 1 crypto_scalarmult_ed25519_base_noclamp (x·P), 1 crypto_core_ed25519_add
        (pA = x·P + w·M), 1 crypto_core_ed25519_sub (pB − w·N), 1 crypto_scalarmult_ed25519_noclamp
        (K; it also validates the peer's point). Target: ratio ≤ 1.25.
      - the same ratio with the password prepared once and reused (floor without w·M, w·N).

    Times are thread CPU time (CLOCK_THREAD_CPUTIME_ID), so other processes on the machine
    slow the wall clock but not the ratio; rates are given per CPU second and per wall second.

    options:
      --seconds S   total time budget (default 10)
      --rounds N    interleaved rounds for the ratios (default 20)
      --help        this text
    """

private struct Measurement {
    var iterations = 0
    var cpu = 0.0
    var wall = 0.0
    var perIterationCPU: Double { cpu / Double(max(iterations, 1)) }
    static func += (lhs: inout Measurement, rhs: Measurement) {
        lhs.iterations += rhs.iterations
        lhs.cpu += rhs.cpu
        lhs.wall += rhs.wall
    }
}

private func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

private func wallSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// Runs `body` in batches until `seconds` of wall time have passed.
private func measure(seconds: Double, _ body: () -> Void) -> Measurement {
    let wallStart = wallSeconds()
    let cpuStart = threadCPUSeconds()
    var iterations = 0
    repeat {
        for _ in 0..<4 { body() }
        iterations += 4
    } while wallSeconds() - wallStart < seconds
    return Measurement(
        iterations: iterations, cpu: threadCPUSeconds() - cpuStart, wall: wallSeconds() - wallStart)
}

/// Keeps results observable so the optimiser cannot drop the work.
nonisolated(unsafe) private var sink: UInt8 = 0

private func consume(_ key: SecretBytes) {
    sink &+= key.withUnsafeBytes { $0.first ?? 0 }
}

private let code = Array("coral-piano-42".utf8)
private let context = Array("eleven-bench/pake".utf8)
private let joiner = Array("joiner".utf8)
private let attendant = Array("attendant".utf8)

/// One full RFC 9382 exchange: each side prepares its password, sends its message,
/// confirms and verifies the other's confirmation.
private func rfcExchange(
    _ suite: SPAKE2.Suite, random: inout SystemRandom, prepared: (SPAKE2.Password, SPAKE2.Password)? = nil
) {
    let passwordA = prepared?.0 ?? SPAKE2.Password(deriving: code, context: context, suite: suite)
    let passwordB = prepared?.1 ?? SPAKE2.Password(deriving: code, context: context, suite: suite)
    let a = SPAKE2(role: .a, password: passwordA, identityA: joiner, identityB: attendant).start(
        using: &random)
    let b = SPAKE2(role: .b, password: passwordB, identityA: joiner, identityB: attendant).start(
        using: &random)
    let messageA = a.message
    do {
        let confirmingA = try a.receive(b.message)
        let confirmingB = try b.receive(messageA)
        let confirmationA = confirmingA.confirmation
        consume(try confirmingA.finish(peerConfirmation: confirmingB.confirmation))
        consume(try confirmingB.finish(peerConfirmation: confirmationA))
    } catch {
        fatalError("benchmark exchange failed: \(error)")
    }
}

private func wormholeExchange(random: inout SystemRandom) {
    let one = WormholeSPAKE2(password: code, identity: context).start(using: &random)
    let two = WormholeSPAKE2(password: code, identity: context).start(using: &random)
    let messageOne = one.message
    do {
        consume(try one.finish(two.message))
        consume(try two.finish(messageOne))
    } catch {
        fatalError("benchmark exchange failed: \(error)")
    }
}

/// The libsodium calls of one edwards25519 exchange (both sides), on fixed valid inputs.
private struct SodiumFloor {
    var m = [UInt8](repeating: 0, count: 32)
    var n = [UInt8](repeating: 0, count: 32)
    var w = [UInt8](repeating: 0, count: 32)
    var x = [UInt8](repeating: 0, count: 32)
    var y = [UInt8](repeating: 0, count: 32)
    var wM = [UInt8](repeating: 0, count: 32)
    var wN = [UInt8](repeating: 0, count: 32)
    var point = [UInt8](repeating: 0, count: 32)
    var peer = [UInt8](repeating: 0, count: 32)
    var difference = [UInt8](repeating: 0, count: 32)
    var k = [UInt8](repeating: 0, count: 32)

    init() {
        crypto_core_ed25519_random(&m)
        crypto_core_ed25519_random(&n)
        crypto_core_ed25519_scalar_random(&w)
        crypto_core_ed25519_scalar_random(&x)
        crypto_core_ed25519_scalar_random(&y)
        _ = crypto_scalarmult_ed25519_base_noclamp(&peer, y)
        _ = crypto_scalarmult_ed25519_noclamp(&wM, w, m)
        _ = crypto_scalarmult_ed25519_noclamp(&wN, w, n)
    }

    mutating func side(includingPassword: Bool) {
        var status: Int32 = 0
        if includingPassword {
            status |= crypto_scalarmult_ed25519_noclamp(&wM, w, m)
            status |= crypto_scalarmult_ed25519_noclamp(&wN, w, n)
        }
        status |= crypto_scalarmult_ed25519_base_noclamp(&point, x)
        status |= crypto_core_ed25519_add(&point, point, wM)
        status |= crypto_core_ed25519_sub(&difference, peer, wN)
        status |= crypto_scalarmult_ed25519_noclamp(&k, x, difference)
        precondition(status == 0, "libsodium floor operation failed")
        sink &+= k[0]
    }

    mutating func exchange(includingPassword: Bool) {
        side(includingPassword: includingPassword)
        side(includingPassword: includingPassword)
    }
}

func runPakeBench(_ arguments: [String]) -> Int32 {
    var seconds = 10.0
    var rounds = 20
    var index = 0
    while index < arguments.count {
        switch arguments[index] {
        case "--help", "-h":
            print(pakeUsage)
            return 0
        case "--seconds" where index + 1 < arguments.count:
            guard let value = Double(arguments[index + 1]), value > 0, value <= 600 else {
                FileHandle.standardError.write(
                    Data("eleven-bench pake: --seconds needs a number in (0, 600]\n".utf8))
                return 2
            }
            seconds = value
            index += 1
        case "--rounds" where index + 1 < arguments.count:
            guard let value = Int(arguments[index + 1]), (1...100).contains(value) else {
                FileHandle.standardError.write(
                    Data("eleven-bench pake: --rounds needs an integer in 1...100\n".utf8))
                return 2
            }
            rounds = value
            index += 1
        default:
            FileHandle.standardError.write(
                Data(benchUsageError("unknown option '\(arguments[index])'", usage: pakeUsage).utf8))
            return 2
        }
        index += 1
    }

    Sodium.ensureInitialized()
    var random = SystemRandom()
    var floor = SodiumFloor()
    let prepared = (
        SPAKE2.Password(deriving: code, context: context, suite: .edwards25519),
        SPAKE2.Password(deriving: code, context: context, suite: .edwards25519)
    )
    // Warm up caches, lazy globals and page faults.
    for _ in 0..<20 {
        rfcExchange(.edwards25519, random: &random)
        rfcExchange(.p256, random: &random)
        wormholeExchange(random: &random)
        floor.exchange(includingPassword: true)
    }

    // Budget: 60 % to the interleaved edwards25519 rounds (4 slices each), 40 % to the others.
    let slice = seconds * 0.6 / Double(rounds * 4)
    var ours = Measurement()
    var ratios: [Double] = []
    var preparedRatios: [Double] = []
    for _ in 0..<rounds {
        let exchange = measure(seconds: slice) { rfcExchange(.edwards25519, random: &random) }
        let bare = measure(seconds: slice) { floor.exchange(includingPassword: true) }
        let exchangePrepared = measure(seconds: slice) {
            rfcExchange(.edwards25519, random: &random, prepared: prepared)
        }
        let barePrepared = measure(seconds: slice) { floor.exchange(includingPassword: false) }
        ours += exchange
        ratios.append(exchange.perIterationCPU / bare.perIterationCPU)
        preparedRatios.append(exchangePrepared.perIterationCPU / barePrepared.perIterationCPU)
    }
    let p256 = measure(seconds: seconds * 0.2) { rfcExchange(.p256, random: &random) }
    let wormhole = measure(seconds: seconds * 0.2) { wormholeExchange(random: &random) }

    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
    func row(_ name: String, _ m: Measurement) -> String {
        let perCPU = Double(m.iterations) / m.cpu
        let perWall = Double(m.iterations) / m.wall
        return name.padding(toLength: 44, withPad: " ", startingAt: 0)
            + String(
                format: "%10.0f %10.0f %10.1f %8d", perCPU, perWall, m.perIterationCPU * 1e6, m.iterations)
    }

    print("eleven-bench pake: \(rounds) rounds, budget \(String(format: "%.1f", seconds)) s")
    print("full exchanges (both sides, password preparation included; RFC suites with key confirmation)")
    print(
        "suite".padding(toLength: 44, withPad: " ", startingAt: 0)
            + "   per CPU-s   per wall-s  CPU µs/ex    count")
    print(row(SPAKE2.Suite.edwards25519.name, ours))
    print(row(SPAKE2.Suite.p256.name, p256))
    print(row("Wormhole SPAKE2 (python-spake2 symmetric)", wormhole))
    let ratio = median(ratios)
    let preparedRatio = median(preparedRatios)
    print(
        "ratio edwards25519 exchange / libsodium floor (median of \(rounds) rounds): "
            + String(format: "%.3f", ratio) + " (min " + String(format: "%.3f", ratios.min()!)
            + ", max " + String(format: "%.3f", ratios.max()!) + "), target <= 1.25: "
            + (ratio <= 1.25 ? "met" : "MISSED"))
    print(
        "ratio with the password prepared once (floor without w·M, w·N): "
            + String(format: "%.3f", preparedRatio))
    print(
        "(floor per exchange: 6 noclamp + 2 base_noclamp + 2 add + 2 sub; prepared: 2 noclamp + 2 base + 2 add + 2 sub; check \(sink))"
    )
    return 0
}
