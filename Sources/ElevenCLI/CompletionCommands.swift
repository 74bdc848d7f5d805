import CLISupport
import WordCodes

// `eleven completion bash` prints a bash completion script that asks `eleven completion complete`
// what to offer, so the script never falls behind the command table; `eleven completion words
// PARTIAL` lists the completions of a partly typed code.

/// The completion commands; `commands` are the program's others, which `complete` completes.
func completionCommands(completing commands: [CommandGroup.Entry]) -> [CommandGroup.Entry] {
    let bash = CommandSpec(
        ["eleven", "completion", "bash"],
        summary: "Print a bash completion script (commands, options, code words).",
        discussion: """
            Load it with `source <(eleven completion bash)`, or save it in \
            /etc/bash_completion.d/eleven. Tab then completes commands and options, and the words \
            of a code after `eleven join`, `eleven device link` and `eleven receive`. Typing the code at the prompt \
            instead keeps it out of your shell history.
            """)
    let words = CommandSpec(
        ["eleven", "completion", "words"], summary: "List the completions of a partly typed code.",
        positionals: [PositionalSpec("PARTIAL", help: "what was typed so far, e.g. coral-pi", optional: true)]
    )
    let complete = CommandSpec(
        ["eleven", "completion", "complete"], summary: "List what Tab offers (the script calls it).",
        positionals: [
            PositionalSpec(
                "WORD", help: "the words after `eleven`, the last one being typed (after `--`)",
                optional: true,
                variadic: true)
        ])
    let specs = commands.map(\.spec) + [bash, words, complete]
    return [
        .init(bash) { _ in Terminal.out(bashCompletionScript) },
        .init(words) { arguments in
            for candidate in codeCompletions(arguments.positional(0) ?? "") { Terminal.out(candidate) }
        },
        .init(complete) { arguments in
            let candidates = CommandCompletion.candidates(words: arguments.positionals, commands: specs) {
                spec, index, typed in
                guard index == 0 else { return [] }
                if codeArguments.contains(spec.path) { return codeCompletions(typed) }
                return spec.path == ["eleven", "receive"] ? lonelyWordDash(wormholeCompletions(typed)) : []
            }
            for candidate in candidates { Terminal.out(candidate) }
        },
    ]
}

/// The commands whose first argument is a short code (Eleven's word list, not Wormhole's).
private let codeArguments: Set<[String]> = [["eleven", "join"], ["eleven", "device", "link"]]

/// Completions of a partly typed code. A code whose number already follows its words is whole:
/// nothing more is offered. A word completed alone gets its `-`, as at the `eleven join` prompt.
func codeCompletions(_ partial: String) -> [String] {
    let segments = partial.split(omittingEmptySubsequences: false) { !$0.isLetter && !$0.isNumber }
    let finished = segments.dropLast()
    if let number = finished.firstIndex(where: { !$0.isEmpty && $0.allSatisfy(\.isNumber) }),
        finished[..<number].contains(where: { !$0.isEmpty })
    {
        return []
    }
    return lonelyWordDash(Completion.candidates(for: partial))
}

/// A word completed alone gets its `-`, so the next word can follow at once.
private func lonelyWordDash(_ candidates: [String]) -> [String] {
    candidates.count == 1 ? [candidates[0] + "-"] : candidates
}

private let bashCompletionScript = """
    # bash completion for eleven (eleven completion bash)
    _eleven() {
        local IFS=$'\\n'
        COMPREPLY=($("${COMP_WORDS[0]}" completion complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
        # A code word ends in `-`: the next word follows without a space.
        if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *- ]]; then
            compopt -o nospace 2>/dev/null
        fi
        return 0
    }
    complete -F _eleven eleven
    """
