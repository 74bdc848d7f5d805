import Foundation

/// One command-line option. Long name without dashes (`relay` for `--relay`), an optional short
/// letter, and a value name when it takes a value (`nil` makes it a flag).
public struct OptionSpec: Sendable {
    public let name: String
    public let short: Character?
    public let valueName: String?
    public let help: String
    /// An environment variable that supplies the value when the option is not given.
    public let environment: String?
    /// Shown in help; the value used when neither the option nor the environment gives one.
    public let defaultValue: String?
    /// Whether the option may be given more than once (values accumulate).
    public let repeatable: Bool

    public init(
        _ name: String, short: Character? = nil, value valueName: String? = nil, help: String,
        environment: String? = nil, default defaultValue: String? = nil, repeatable: Bool = false
    ) {
        self.name = name
        self.short = short
        self.valueName = valueName
        self.help = help
        self.environment = environment
        self.defaultValue = defaultValue
        self.repeatable = repeatable
    }

    public var isFlag: Bool { valueName == nil }
}

/// A positional argument.
public struct PositionalSpec: Sendable {
    public let name: String
    public let help: String
    public let optional: Bool
    /// Whether it swallows every remaining positional argument.
    public let variadic: Bool

    public init(_ name: String, help: String, optional: Bool = false, variadic: Bool = false) {
        self.name = name
        self.help = help
        self.optional = optional
        self.variadic = variadic
    }
}

/// A command (or sub-command) and everything its `--help` says.
public struct CommandSpec: Sendable {
    public let path: [String]
    public let summary: String
    public let options: [OptionSpec]
    public let positionals: [PositionalSpec]
    public let discussion: String?

    public init(
        _ path: [String], summary: String, options: [OptionSpec] = [],
        positionals: [PositionalSpec] = [], discussion: String? = nil
    ) {
        self.path = path
        self.summary = summary
        self.options = options
        self.positionals = positionals
        self.discussion = discussion
    }

    /// The help text: usage line, summary, arguments, options with defaults and environment.
    public var help: String {
        var usage = "usage: " + path.joined(separator: " ")
        if !options.isEmpty { usage += " [options]" }
        for p in positionals {
            let shown = p.variadic ? "\(p.name)…" : p.name
            usage += p.optional ? " [\(shown)]" : " \(shown)"
        }
        var lines = [usage, "", summary]
        if let discussion {
            lines += ["", discussion]
        }
        if !positionals.isEmpty {
            lines += ["", "arguments:"]
            for p in positionals {
                lines.append(Self.row(p.name, p.help))
            }
        }
        lines += ["", "options:"]
        for o in options {
            var left = o.short.map { "-\($0), " } ?? "    "
            left += "--\(o.name)"
            if let v = o.valueName { left += " \(v)" }
            var help = o.help
            if let d = o.defaultValue { help += " (default: \(d))" }
            if let e = o.environment { help += " [env: \(e)]" }
            lines.append(Self.row(left, help))
        }
        lines.append(Self.row("-h, --help", "show this help"))
        if path.count == 1 { lines.append(Self.row("    --version", "print the version")) }
        return lines.joined(separator: "\n")
    }

    private static func row(_ left: String, _ right: String) -> String {
        let pad = 26
        let l = "  " + left
        if l.count >= pad { return l + "\n" + String(repeating: " ", count: pad) + right }
        return l + String(repeating: " ", count: pad - l.count) + right
    }

    /// Parses `arguments` (everything after the command path). `--help` anywhere wins.
    public func parse(
        _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(CLIError) -> ParsedArguments {
        var values: [String: [String]] = [:]
        var flags = Set<String>()
        var positional: [String] = []
        var index = 0
        var onlyPositionals = false
        if arguments.contains(where: { $0 == "--help" || $0 == "-h" }) && !arguments.contains("--") {
            throw .helpRequested(help)
        }
        // A program that is one command (`eleven-relay`) takes `--version` as the groups do.
        if path.count == 1 && arguments.contains("--version") && !arguments.contains("--") {
            throw .versionRequested(path[0])
        }
        while index < arguments.count {
            let arg = arguments[index]
            index += 1
            if onlyPositionals || arg == "-" || !arg.hasPrefix("-") {
                positional.append(arg)
                continue
            }
            if arg == "--" {
                onlyPositionals = true
                continue
            }
            var name: String
            var inlineValue: String?
            let spec: OptionSpec
            if arg.hasPrefix("--") {
                name = String(arg.dropFirst(2))
                if let eq = name.firstIndex(of: "=") {
                    inlineValue = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                guard let found = options.first(where: { $0.name == name }) else {
                    throw .usage("unknown option '--\(name)'", help: help)
                }
                spec = found
            } else {
                let letters = Array(arg.dropFirst())
                guard letters.count == 1, let found = options.first(where: { $0.short == letters[0] })
                else {
                    throw .usage("unknown option '\(arg)'", help: help)
                }
                spec = found
                name = found.name
            }
            if spec.isFlag {
                if inlineValue != nil { throw .usage("'--\(name)' takes no value", help: help) }
                flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count else {
                    throw .usage("'--\(name)' needs a value (\(spec.valueName ?? "VALUE"))", help: help)
                }
                value = arguments[index]
                index += 1
            }
            if values[name] != nil && !spec.repeatable {
                throw .usage("'--\(name)' was given more than once", help: help)
            }
            values[name, default: []].append(value)
        }
        let given = flags.union(values.keys)
        for spec in options where !spec.isFlag && values[spec.name] == nil {
            if let env = spec.environment, let v = environment[env], !v.isEmpty {
                values[spec.name] = [v]
            } else if let d = spec.defaultValue {
                values[spec.name] = [d]
            }
        }
        let required = positionals.filter { !$0.optional }.count
        if positional.count < required {
            let missing = positionals[positional.count]
            throw .usage("missing \(missing.name)", help: help)
        }
        let variadic = positionals.last?.variadic ?? false
        if !variadic && positional.count > positionals.count {
            throw .usage("unexpected argument '\(positional[positionals.count])'", help: help)
        }
        return ParsedArguments(values: values, flags: flags, positionals: positional, given: given)
    }
}

/// What `CommandSpec.parse` found.
public struct ParsedArguments: Sendable {
    public let values: [String: [String]]
    public let flags: Set<String>
    public let positionals: [String]
    /// The options written on the command line (not filled from the environment or a default).
    public let given: Set<String>

    public init(
        values: [String: [String]], flags: Set<String>, positionals: [String], given: Set<String>? = nil
    ) {
        self.values = values
        self.flags = flags
        self.positionals = positionals
        self.given = given ?? flags.union(values.keys)
    }

    /// Whether `--name` was written on the command line.
    public func wasGiven(_ name: String) -> Bool { given.contains(name) }

    public func flag(_ name: String) -> Bool { flags.contains(name) }
    public func value(_ name: String) -> String? { values[name]?.last }
    public func all(_ name: String) -> [String] { values[name] ?? [] }
    public func positional(_ index: Int) -> String? {
        index < positionals.count ? positionals[index] : nil
    }

    /// An integer option within bounds, with a usage error naming the option otherwise.
    public func int(_ name: String, in range: ClosedRange<Int>) throws(CLIError) -> Int? {
        guard let raw = value(name) else { return nil }
        guard let v = Int(raw), range.contains(v) else {
            throw .usage(
                "'--\(name)' must be a whole number from \(range.lowerBound) to \(range.upperBound), "
                    + "not '\(raw)'", help: nil)
        }
        return v
    }

    /// A duration option such as `90s`, `15m`, `2h`, `3d` (a bare number is seconds).
    public func duration(_ name: String, max: TimeInterval) throws(CLIError) -> TimeInterval? {
        guard let raw = value(name) else { return nil }
        guard let seconds = Duration.parse(raw), seconds > 0, seconds <= max else {
            throw .usage(
                "'--\(name)' must be a duration like 90s, 15m, 2h or 3d, more than 0 and at most "
                    + "\(Duration.describe(max)), not '\(raw)'", help: nil)
        }
        return seconds
    }
}

/// Parses the small duration syntax the commands accept.
public enum Duration {
    /// `seconds` in the largest unit that shows it whole: `3d`, `1h`, `90s`.
    public static func describe(_ seconds: TimeInterval) -> String {
        for (unit, size) in [("d", 86_400.0), ("h", 3600), ("m", 60)]
        where seconds >= size && seconds.truncatingRemainder(dividingBy: size) == 0 {
            return "\(Int(seconds / size))\(unit)"
        }
        return "\(Int(seconds))s"
    }

    public static func parse(_ text: String) -> TimeInterval? {
        let units: [Character: TimeInterval] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let last = text.last else { return nil }
        if let unit = units[last] {
            guard let n = Double(text.dropLast()), n.isFinite else { return nil }
            return n * unit
        }
        guard let n = Double(text), n.isFinite else { return nil }
        return n
    }
}
