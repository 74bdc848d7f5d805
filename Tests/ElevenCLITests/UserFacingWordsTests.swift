import Foundation
import TestSupport
import Testing

/// The seeds' copy rule: what people read never says "passkey", "PRF", "key", "escrow" or
/// "backup"; people sign in, save their spaces and add ways back in. Option names, placeholders,
/// commands in backticks and `--json` fields may keep technical names.
@Suite struct UserFacingWordsTests {
    static let forbidden = try! NSRegularExpression(
        pattern: #"\b(passkeys?|prf|keys?|escrow|backups?)\b"#, options: [.caseInsensitive])

    /// Commands whose help still uses the words, in areas swept separately ("public key" is how
    /// `whoami` and `members add` name what people exchange today). A command leaves this list
    /// once swept; the test fails while a listed command is already clean, so the list only shrinks.
    static let notYetSwept: Set<String> = ["whoami", "space join", "members add", "members remove", "demo"]

    /// The forbidden words in `text`, after dropping what is not prose.
    static func violations(_ text: String) -> [String] {
        var prose = text
        // Commands in backticks, options with their placeholders, argument names, environment.
        for pattern in [
            #"`[^`]*`"#, #"--[a-z0-9-]+( [A-Z][A-Z_|:.]*)?"#, #"(?m)^\s+[A-Z][A-Z_]+\s"#, #"\[env: [^\]]*\]"#,
        ] {
            prose = prose.replacingOccurrences(of: pattern, with: " ", options: .regularExpression)
        }
        let range = NSRange(prose.startIndex..., in: prose)
        return forbidden.matches(in: prose, range: range).compactMap { Range($0.range, in: prose) }.map {
            String(prose[$0])
        }
    }

    /// Every command `eleven --help` lists.
    static func commands() throws -> [String] {
        let help = try TestSupport.run(eleven, ["--help"], timeout: 30).stdout
        return help.split(separator: "\n").filter { $0.hasPrefix("  ") }.compactMap { line in
            line.trimmingCharacters(in: .whitespaces).components(separatedBy: "  ").first
        }
    }

    @Test func helpTextSaysNoTechnicalWords() throws {
        let commands = try Self.commands()
        #expect(commands.contains("signin") && commands.contains("recovery add"), "\(commands)")
        var found: [String: [String]] = [:]
        for command in commands {
            let help = try TestSupport.run(
                eleven, command.split(separator: " ").map(String.init) + ["--help"], timeout: 30)
            let text = help.stdout.split(separator: "\n").dropFirst().joined(separator: "\n")
            let words = Self.violations(text)
            if !words.isEmpty { found[command] = words }
        }
        let unexpected = found.filter { !Self.notYetSwept.contains($0.key) }
        #expect(unexpected.isEmpty, "help says technical words: \(unexpected)")
        let clean = Self.notYetSwept.subtracting(found.keys)
        #expect(clean.isEmpty, "swept already; remove from notYetSwept: \(clean)")
    }

    /// Messages and prompts in the sign-in, device and recovery code: every string literal that
    /// reads as a sentence (has a space), outside comments, logs and `--json` output.
    @Test func signInDeviceAndRecoveryMessagesSayNoTechnicalWords() throws {
        let root = TestSupport.packageRoot.appendingPathComponent("Sources")
        var files = [
            "ElevenCLI/DeviceCommands.swift", "ElevenCLI/RecoveryCommands.swift",
            "ElevenCLI/AnchorNudge.swift",
        ]
        let home = root.appendingPathComponent("ClientCore/Home")
        files += try FileManager.default.contentsOfDirectory(atPath: home.path).map {
            "ClientCore/Home/\($0)"
        }
        var found: [String] = []
        for file in files {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//"), !code.contains("Terminal.json") else { continue }
                for literal in code.matches(of: /"((?:[^"\\]|\\.)*)"/) {
                    let content = String(literal.1)
                    guard content.contains(" ") else { continue }
                    let words = Self.violations(content)
                    if !words.isEmpty { found.append("\(file):\(number + 1): \(content)") }
                }
            }
        }
        #expect(found.isEmpty, "messages say technical words:\n\(found.joined(separator: "\n"))")
    }

    @Test func theScanFindsWhatItLooksFor() {
        #expect(Self.violations("Touch your security key") == ["key"])
        #expect(Self.violations("Make a backup with your passkey (PRF)") == ["backup", "passkey", "PRF"])
        #expect(Self.violations("use `eleven recovery add --security-key`, or --key KEY").isEmpty)
        #expect(Self.violations("  KEY   the member").isEmpty)
        #expect(Self.violations("a keyboard and a monkey").isEmpty)
    }
}
