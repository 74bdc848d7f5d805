/// A program made of sub-commands (`eleven join`, `eleven space create`, …): finds the command
/// whose path matches the longest prefix of the arguments, and prints the list when none does.
public struct CommandGroup: Sendable {
    public struct Entry: Sendable {
        public let spec: CommandSpec
        public let run: @Sendable (ParsedArguments) throws -> Void

        public init(_ spec: CommandSpec, run: @escaping @Sendable (ParsedArguments) throws -> Void) {
            self.spec = spec
            self.run = run
        }
    }

    public let program: String
    public let summary: String
    public let entries: [Entry]

    public init(program: String, summary: String, entries: [Entry]) {
        self.program = program
        self.summary = summary
        self.entries = entries
    }

    /// The top-level help: every command with its one-line summary.
    public var help: String {
        var lines = ["usage: \(program) <command> [options]", "", summary, "", "commands:"]
        for e in entries {
            let name = e.spec.path.dropFirst().joined(separator: " ")
            let pad = max(2, 22 - name.count)
            lines.append("  \(name)\(String(repeating: " ", count: pad))\(e.spec.summary)")
        }
        lines += ["", "Run `\(program) <command> --help` for a command's options."]
        return lines.joined(separator: "\n")
    }

    /// Finds and runs the command for `arguments` (without the program name).
    public func run(_ arguments: [String]) throws {
        if arguments.isEmpty {
            throw CLIError.usage("no command given", help: help)
        }
        if arguments == ["--help"] || arguments == ["-h"] || arguments == ["help"] {
            throw CLIError.helpRequested(help)
        }
        var best: Entry?
        for e in entries {
            let path = Array(e.spec.path.dropFirst())
            if arguments.count >= path.count && Array(arguments.prefix(path.count)) == path {
                if best == nil || path.count > best!.spec.path.count - 1 { best = e }
            }
        }
        guard let entry = best else {
            throw CLIError.usage("unknown command '\(arguments[0])'", help: help)
        }
        let rest = Array(arguments.dropFirst(entry.spec.path.count - 1))
        let parsed = try entry.spec.parse(rest)
        try entry.run(parsed)
    }
}
