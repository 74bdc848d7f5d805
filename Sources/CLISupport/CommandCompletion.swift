/// What Tab offers on a command line, worked out from the command table itself, so every command
/// a program has is completed (a hand-kept list falls behind): command and group words, a
/// command's options, and its positional arguments through `value` (the program knows which of
/// them are codes). An option's value is never completed as a positional argument.
public enum CommandCompletion {
    /// The candidates for the last of `words` (the words after the program name; the last one is
    /// being typed, possibly empty). `value(spec, index, typed)` completes the positional argument
    /// at `index` of `spec`.
    public static func candidates(
        words: [String], commands: [CommandSpec], value: (CommandSpec, Int, String) -> [String]
    ) -> [String] {
        let typed = words.last ?? ""
        let before = Array(words.dropLast())
        let paths = commands.map { Array($0.path.dropFirst()) }
        // Words of commands one level below the ones typed (`space` → create, join).
        var out = Set(
            paths.filter { $0.count > before.count && $0.starts(with: before) }.map { $0[before.count] }
        ).filter { $0.hasPrefix(typed) }.sorted()
        // The command the words typed so far run (the longest path they start with).
        guard
            let spec = commands.filter({ before.starts(with: $0.path.dropFirst()) })
                .max(by: { $0.path.count < $1.path.count })
        else { return out }
        if typed.hasPrefix("-") {
            return out + (spec.options.map { "--\($0.name)" } + ["--help"]).filter { $0.hasPrefix(typed) }
        }
        var positional = 0
        var awaitingValue = false
        var onlyPositionals = false
        for word in before.dropFirst(spec.path.count - 1) {
            if awaitingValue {
                awaitingValue = false
            } else if word == "--" && !onlyPositionals {
                onlyPositionals = true
            } else if !onlyPositionals && word.hasPrefix("-") && word != "-" {
                let name = word.hasPrefix("--") ? String(word.dropFirst(2)) : nil
                let option = spec.options.first { option in
                    if let name { return option.name == name }
                    return word.count == 2 && option.short == word.last
                }
                awaitingValue = option.map { !$0.isFlag } ?? false
            } else {
                positional += 1
            }
        }
        // The value of an option (`--name <Tab>`): nothing to offer.
        if awaitingValue { return [] }
        guard !spec.positionals.isEmpty else { return out }
        let index: Int
        if positional < spec.positionals.count {
            index = positional
        } else if spec.positionals.last?.variadic == true {
            index = spec.positionals.count - 1
        } else {
            return out
        }
        out += value(spec, index, typed)
        return out
    }
}
