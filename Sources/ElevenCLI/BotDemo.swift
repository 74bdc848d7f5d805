import CLISupport
import Foundation
import WordCodes

/// The demo's first act: Family gets a bot (`eleven-bot` with its state in the demo's
/// directory), Paul mints a code the bot attends, Sam joins with it while nobody else is online
/// and reads the history; Eve's wrong guess burns a code and Paul hears of it.
extension Demo {
    func runBotStory(paul: Person, sam: Person, eve: Person, directory: URL, relayURL: String) throws {
        let state = directory.appendingPathComponent("bot").path
        let key = directory.appendingPathComponent("bot.key").path
        let bot = DemoBot(state: state, key: key, relay: relayURL)
        say("Paul sets up a bot for Family, so nobody has to stay online to let people in.")
        try bot.runShown(["init"])
        let setup = try paul.start(["invite", "--short", "--yes"], answer: nil)
        guard let setupCode = setup.value(afterPrefix: "Invite code: ") else {
            setup.stop()
            throw Self.failure(of: setup, "Paul's invite for the bot did not start")
        }
        try bot.runShown(["join", setupCode, "--name", "Bot"])
        guard setup.finish() == 0 else { throw Self.failure(of: setup, "Paul could not let the bot in") }
        try paul.runShown(["bot", "enable", "--member", "Bot"])
        let running = try ServiceChild.start(
            "eleven-bot", bot.arguments(["run"]), scheme: "", readyText: "\"event\":\"started\"")
        defer { running.stop() }
        say("  Bot       (eleven-bot run: attends Family's invites from now on)")
        say("")

        // Paul mints a code and goes offline; Sam types it (with a typo the code reader fixes).
        let invite = try paul.start(["invite", "--short", "--words", String(words)], answer: nil)
        guard let text = invite.value(afterPrefix: "Invite code: "),
            let code = try? CodeParser.parse(text).code,
            invite.finish() == 0
        else {
            invite.stop()
            throw Self.failure(of: invite, "Paul's invite did not start")
        }
        let typed = Self.mistype(code) ?? code.description
        say("  Sam       (types the code Paul read out: \"\(typed)\")")
        try sam.runShown(["join", typed, "--name", "Sam"])
        try sam.runShown(["read"])
        try paul.runShown(["bot", "notes"])
        say("")

        // Eve guesses: one guess, and the code is burned; the bot tells Paul.
        let second = try paul.start(["invite", "--short", "--words", String(words)], answer: nil)
        guard let text2 = second.value(afterPrefix: "Invite code: "),
            let code2 = try? CodeParser.parse(text2).code,
            second.finish() == 0
        else {
            second.stop()
            throw Self.failure(of: second, "Paul's second invite did not start")
        }
        var guess = Code.generate(nameplate: code2.nameplate, wordCount: words)
        while guess.words == code2.words {
            guess = Code.generate(nameplate: code2.nameplate, wordCount: words)
        }
        say("  Eve       (guesses \"\(guess)\" for Paul's new code)")
        let eveStatus = try eve.runShown(["join", guess.description, "--name", "Eve"], allowFailure: true)
        guard eveStatus == ExitStatus.codeRejected.rawValue else {
            throw CLIError(
                code: .demoFailed, message: "Eve's wrong guess was not refused", status: .failure)
        }
        // The bot's alert reaches Paul's inbox a moment later.
        try paul.runShown(["bot", "notes", "--wait", "10s"])
        say("")
    }
}

/// `eleven-bot` with the demo's state directory and key file, output shown as "Bot".
private struct DemoBot {
    let state: String
    let key: String
    let relay: String

    func arguments(_ command: [String]) -> [String] {
        command + ["--state", state, "--key-file", key] + (command == ["init"] ? [] : ["--relay", relay])
    }

    func runShown(_ command: [String]) throws {
        let child = try ShownProcess(
            try siblingBinary("eleven-bot"), arguments(command), label: "Bot       ", environment: [:],
            answer: nil)
        guard child.finish() == 0 else {
            throw CLIError(
                code: .demoFailed, message: "`eleven-bot \(command.joined(separator: " "))` failed",
                status: .failure)
        }
    }
}
