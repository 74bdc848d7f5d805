import WordCodes

/// A program made of sub-commands (`eleven join`, `eleven space create`, …): finds the command
/// whose path matches the longest prefix of the arguments. A prefix that only leads to commands
/// (`eleven space`) is a group: its `--help` lists them; an unknown word suggests the nearest.
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
    public var help: String { help(for: []) }

    /// The help of the group `words` (`["space"]` for `eleven space`; empty for the program):
    /// the commands under it, each with its summary.
    public func help(for words: [String]) -> String {
        let name = ([program] + words).joined(separator: " ")
        var lines = ["usage: \(name) <command> [options]", ""]
        if words.isEmpty { lines += [summary, ""] }
        lines.append("commands:")
        for e in entries where e.spec.path.dropFirst().starts(with: words) {
            let shown = e.spec.path.dropFirst(words.count + 1).joined(separator: " ")
            let pad = max(2, 22 - shown.count)
            lines.append("  \(shown)\(String(repeating: " ", count: pad))\(e.spec.summary)")
        }
        lines += ["", "Run `\(name) <command> --help` for a command's options."]
        if words.isEmpty { lines.append("`\(program) --version` prints the version.") }
        return lines.joined(separator: "\n")
    }

    /// Finds and runs the command for `arguments` (without the program name).
    public func run(_ arguments: [String]) throws {
        if arguments == ["--help"] || arguments == ["-h"] || arguments == ["help"] {
            throw CLIError.helpRequested(help)
        }
        if arguments == ["--version"] { throw CLIError.versionRequested(program) }
        var best: Entry?
        for e in entries {
            let path = Array(e.spec.path.dropFirst())
            if arguments.count >= path.count && Array(arguments.prefix(path.count)) == path {
                if best == nil || path.count > best!.spec.path.count - 1 { best = e }
            }
        }
        guard let entry = best else { throw noCommand(arguments) }
        let rest = Array(arguments.dropFirst(entry.spec.path.count - 1))
        do {
            try entry.run(try entry.spec.parse(rest))
        } catch let error as CLIError where error.status == .usage && error.help == nil {
            // A usage error the command found itself: point at this command's help.
            throw error.showing(help: entry.spec.help)
        }
    }

    /// The error (or the help) for arguments that name no command: a group without its
    /// command, or a word no command has, with the nearest command names as a suggestion.
    private func noCommand(_ arguments: [String]) -> CLIError {
        let words = Array(arguments.prefix { !$0.hasPrefix("-") })
        let paths = entries.map { Array($0.spec.path.dropFirst()) }
        // The longest prefix of the words under which some command lives.
        var depth = 0
        while depth < words.count,
            paths.contains(where: { $0.count > depth + 1 && $0.starts(with: words.prefix(depth + 1)) })
        {
            depth += 1
        }
        let group = Array(words.prefix(depth))
        let groupHelp = help(for: group)
        let name = ([program] + group).joined(separator: " ")
        let next = Set(paths.filter { $0.count > depth && $0.starts(with: group) }.map { $0[depth] })
        guard depth < words.count else {
            if arguments.contains("--help") || arguments.contains("-h") { return .helpRequested(groupHelp) }
            if group.isEmpty { return .usage("no command given", help: groupHelp) }
            return .usage(
                "'\(name)' needs a command: \(next.sorted().joined(separator: ", "))", help: groupHelp)
        }
        let unknown = words[depth]
        var message = "unknown command '\(([program] + group + [unknown]).joined(separator: " "))'"
        let nearest = CommandGroup.nearest(to: unknown, in: next)
        if !nearest.isEmpty {
            message += "; did you mean " + nearest.map { "'\(name) \($0)'" }.joined(separator: " or ") + "?"
        }
        return .usage(message, help: groupHelp)
    }

    /// The names closest to `word`: within a small edit distance (a typo: a letter wrong, missing,
    /// extra, or two swapped), else those it begins (`rec` for `receive` and `recovery`).
    public static func nearest(to word: String, in names: Set<String>) -> [String] {
        let typed = word.lowercased()
        let limit = max(1, min(2, typed.count / 3))
        let scored = names.map { ($0, EditDistance.damerauLevenshtein(typed, $0, limit: limit)) }
            .filter { $0.1 <= limit }
        if let best = scored.map(\.1).min() {
            return scored.filter { $0.1 == best }.map(\.0).sorted()
        }
        guard typed.count >= 2 else { return [] }
        return names.filter { $0.hasPrefix(typed) }.sorted()
    }
}
