import CLISupport
import ClientCore
import Foundation
import JoinProtocol
import WordCodes

// The `eleven join` prompt: asks for the code so it never sits in the shell's history. On a
// terminal it reads keys in raw mode (termios) and completes words on Tab (`CodeEntry`); when
// standard input is not a terminal it reads one plain line.

/// Reads the invite code from standard input; on a terminal `prompt` asks for it and Tab
/// completes its words from `candidates` (Eleven's word list unless told otherwise).
func promptForCode(
    _ prompt: String = codePrompt,
    candidates: @escaping @Sendable (String) -> [String] = { Completion.candidates(for: $0) }
) throws -> String {
    let line: String?
    if isatty(0) == 1 {
        line = try readCodeFromTerminal(prompt, entry: CodeEntry(candidates: candidates))
    } else {
        line = readLine(strippingNewline: true)
    }
    return try requireCode(line)
}

/// The code as typed, trimmed. An empty code is a usage error (2) whether it came as an argument
/// or at the prompt: nothing was tried, so nothing was rejected.
func requireCode(_ text: String?) throws -> String {
    let code = (text ?? "").trimmingCharacters(in: .whitespaces)
    guard !code.isEmpty else { throw CLIError.usage("no code was given", help: nil) }
    return code
}

private let codePrompt = "Enter the invite code (Tab completes words): "

private func readCodeFromTerminal(_ codePrompt: String, entry: CodeEntry) throws -> String? {
    var saved = termios()
    guard tcgetattr(0, &saved) == 0 else { return readLine(strippingNewline: true) }
    var raw = saved
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN)
    raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
    withUnsafeMutablePointer(to: &raw.c_cc) {
        $0.withMemoryRebound(to: cc_t.self, capacity: Int(NCCS)) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
    }
    guard tcsetattr(0, TCSAFLUSH, &raw) == 0 else { return readLine(strippingNewline: true) }
    defer {
        _ = tcsetattr(0, TCSAFLUSH, &saved)
        writePrompt("\r\n")
    }
    var entry = entry
    writePrompt(codePrompt)
    var pending: [UInt8] = []
    while true {
        var byte: UInt8 = 0
        let n = read(0, &byte, 1)
        if n < 0 && errno == EINTR { continue }
        guard n == 1 else { return entry.text }
        let key: CodeEntry.Key
        switch byte {
        case 9: key = .tab
        case 10, 13: key = .enter
        case 8, 127: key = .backspace
        case 21: key = .clearLine
        case 23: key = .deleteWord
        case 3: key = .cancel
        case 4: key = entry.text.isEmpty ? .cancel : .enter
        case 27:
            // An escape sequence (arrow keys): skip it.
            var next: UInt8 = 0
            if read(0, &next, 1) == 1, next == UInt8(ascii: "[") || next == UInt8(ascii: "O") {
                repeat { guard read(0, &next, 1) == 1 else { break } } while !(64...126).contains(next)
            }
            continue
        default:
            pending.append(byte)
            guard let character = String(validating: pending, as: UTF8.self)?.first else {
                if pending.count > 4 { pending = [] }
                continue
            }
            pending = []
            key = .character(character)
        }
        for effect in entry.press(key) {
            switch effect {
            case .redraw(let text): writePrompt("\r\u{1B}[2K" + codePrompt + text)
            case .suggestions(let words): writePrompt("\r\n" + words.joined(separator: "  ") + "\r\n")
            case .bell: writePrompt("\u{07}")
            case .submit(let text): return text
            case .cancelled: throw interruptedError()
            }
        }
    }
}
