import CLISupport

/// `eleven demo`: the local end-to-end demonstration on embedded defaults.
let demoCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "demo"],
            summary: "Run a local short-code demo end to end (relay on loopback, two clients).")
    ) { _ in
        throw CLIError(code: "not_ready", message: "the demo is not written yet")
    }
]
