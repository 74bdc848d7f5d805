import CLISupport
import Foundation

// `eleven`: the command-line client. Each command family lives in its own file and contributes
// its entries here; this file only wires them and maps errors to exit statuses.

let commands =
    demoCommands + spaceCommands + memberCommands + messageCommands + wormholeCommands + joinCommands
    + linkCommands + deviceCommands + botCommands + recoveryCommands
let program = CommandGroup(
    program: "eleven",
    summary: "Eleven: join spaces with a short code, read and send end-to-end encrypted messages.",
    entries: commands + completionCommands(completing: commands))

let arguments = Array(CommandLine.arguments.dropFirst())
runProgram(name: "eleven", json: arguments.contains("--json")) {
    try program.run(arguments)
}
