import CLISupport
import WordCodes

// `eleven completion bash` prints a bash completion script; `eleven completion words PARTIAL`
// lists the completions of a partly typed code (the script calls it for `eleven join`).

let completionCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "completion", "bash"],
            summary: "Print a bash completion script (code words for join).",
            discussion: """
                Load it with `source <(eleven completion bash)`, or save it in \
                /etc/bash_completion.d/eleven. `eleven join cora<Tab>` then completes the code's \
                words. Typing the code at the prompt of `eleven join` instead keeps it out of your \
                shell history.
                """)
    ) { _ in
        Terminal.out(bashCompletionScript)
    },
    .init(
        CommandSpec(
            ["eleven", "completion", "words"], summary: "List the completions of a partly typed code.",
            positionals: [
                PositionalSpec("PARTIAL", help: "what was typed so far, e.g. coral-pi", optional: true)
            ])
    ) { arguments in
        for candidate in Completion.candidates(for: arguments.positional(0) ?? "") { Terminal.out(candidate) }
    },
]

private let bashCompletionScript = """
    # bash completion for eleven (eleven completion bash)
    _eleven() {
        local cur="${COMP_WORDS[COMP_CWORD]}"
        if [[ $COMP_CWORD -ge 2 && ${COMP_WORDS[1]} == join && $cur != -* ]]; then
            local IFS=$'\\n'
            COMPREPLY=($(eleven completion words "$cur" 2>/dev/null))
            compopt -o nospace 2>/dev/null
            return 0
        fi
        if [[ $COMP_CWORD -eq 1 ]]; then
            COMPREPLY=($(compgen -W "demo whoami space spaces members thread threads read send receive \\
    invite approve join completion" -- "$cur"))
        fi
    }
    complete -F _eleven eleven
    """
