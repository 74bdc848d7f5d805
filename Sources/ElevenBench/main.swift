import CLISupport
import Foundation

// eleven-bench: benchmarks that print a ratio against a reference measured in the same run.
// Each subcommand lives in its own file.

let usage = """
    usage: eleven-bench <command> [options]

    commands:
      pake     SPAKE2 exchanges per second per suite, and the ratio to the bare libsodium floor
      codes    wordlist entropy and single-typo correction rates over a large sample
      net      WebSocket echo round trips and idle-connection memory, against Python websockets
      spaces   messages appended and read per second through eleven-server, server memory
      relay    mailbox pairs/s, latency and idle-connection memory, against the reference mailbox server
      transit  bytes/s through the transit relay (--transit-listen), against the reference transit relay
      join     short-code join latency end to end, against `wormhole receive` through the same relay
      vault    device link to every space readable; vault push/pull with 1,000 saved spaces
      bot      bot-attended joins/s with 20 concurrent joiners (1, 10, 100 threads), p50/p99, bot memory
      soak     relay + server + bot under a steady mixed load; memory and descriptor curves
      disk     the disk's own sync latency with nothing else running (what a durable commit waits for)
      roster   CPU of one member command in a space of 200 members, chain verified afresh vs remembered

    Run `eleven-bench <command> --help` for a command's options.
    """

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first, command != "--help", command != "-h" else {
    print(usage)
    exit(arguments.isEmpty ? 2 : 0)
}
if command == "--version" {
    print("eleven-bench \(ElevenVersion.current)")
    exit(0)
}
let rest = Array(arguments.dropFirst())
switch command {
case "pake": exit(runPakeBench(rest))
case "codes": exit(runCodesBench(rest))
case "net": exit(runNetBench(rest))
case "spaces": exit(runSpacesBench(rest))
case "relay": exit(runRelayBench(rest))
case "transit": exit(runTransitBench(rest))
case "join": exit(runJoinBench(rest))
case "vault": exit(runVaultBench(rest))
case "bot": exit(runBotBench(rest))
case "soak": exit(runSoakBench(rest))
case "disk": exit(runDiskBench(rest))
case "roster": exit(runRosterBench(rest))
default:
    let names: Set = [
        "pake", "codes", "net", "spaces", "relay", "join", "vault", "bot", "soak", "disk", "roster",
    ]
    let nearest = CommandGroup.nearest(to: command, in: names)
    let suggestion =
        nearest.isEmpty ? "" : "; did you mean " + nearest.map { "'\($0)'" }.joined(separator: " or ") + "?"
    FileHandle.standardError.write(
        Data(
            "eleven-bench: unknown command '\(command)'\(suggestion)\n(`eleven-bench --help` lists them)\n"
                .utf8))
    exit(2)
}

/// A bench command's usage error: the program and command, the problem, and its usage line with
/// where the rest is (as every program prints one), not the whole usage.
func benchUsageError(_ problem: String, usage: String) -> String {
    let command = usage.prefix { $0 != "\n" }.split(separator: " ").dropFirst().prefix {
        $0.first?.isLowercase == true || $0.hasPrefix("--nodes")
    }
    return "\(command.joined(separator: " ")): \(problem)\n\(usageHint(usage))\n"
}
