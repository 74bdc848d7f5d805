import CLISupport
import ClientCore
import Foundation
import JoinProtocol
import SidecarBot
import SpaceModel
import SpaceServer
import TestSupport
import Testing

/// Every error code the programs can print (`--json`) or the space/home server can answer is
/// snake_case and listed in `docs/errors.md`. The codes are collected from the sources, so a new
/// code fails this test until it is documented.
@Suite struct ErrorCodeDocsTests {
    /// Files whose `code` is not an error: a correction says how a typed code was read.
    static let notErrors: Set<String> = ["WordCodes/Correction.swift"]

    /// A Swift string literal without escapes but `\(…)` (one level of parentheses inside).
    static let literal = #""([^"\n\\]*(?:\\\((?:[^()]|\([^()]*\))*\)[^"\n\\]*)*)""#

    /// Where a code is written as a literal: `code: "x"` and `code = "x"` (CLIError, BotError,
    /// SpaceClientError, …), and the first literal of the server's and the home's error values.
    static let literalPatterns = [
        #"(?<!let )(?<!var )\bcode(?::| =)\s*"# + literal,
        #"\b(?:HomeError|RecoveryError|APIError(?:\.\w+)?|badRequest|forbidden|notFound|conflict|unauthorised)\(\s*(?:\d+,\s*)?"#
            + literal,
    ]

    /// `refused_\(reason)` and `refused_\(ready.reason ?? "invite")` as the document writes such
    /// a family: `refused_<reason>`, after the last name of the value before any default.
    static func family(_ raw: String) -> String {
        var code = raw
        while let start = code.range(of: "\\("), let end = code[start.upperBound...].lastIndex(of: ")") {
            let value = code[start.upperBound..<end].components(separatedBy: "??")[0]
            let name = value.split(separator: ".").last?.trimmingCharacters(in: .whitespaces) ?? ""
            code.replaceSubrange(start.lowerBound...end, with: "<\(name)>")
        }
        return code
    }

    /// The codes in the sources, each with a file that writes it.
    static func sourceCodes() throws -> [String: String] {
        let root = TestSupport.packageRoot.appendingPathComponent("Sources")
        var codes: [String: String] = [:]
        func add(_ raw: String, _ file: String) {
            let code = family(raw)
            // Sentences are messages, not codes.
            guard !code.isEmpty, code.range(of: #"^[A-Za-z0-9_.<>-]+$"#, options: .regularExpression) != nil
            else { return }
            codes[code] = codes[code] ?? file
        }
        let files = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String } ?? []
        for file in files where file.hasSuffix(".swift") && !notErrors.contains(file) {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for pattern in literalPatterns {
                for match in matches(pattern, in: text) { add(match[1], file) }
            }
            // `var code: String { switch self { case .x: "x_y" … } }`: every literal in the body.
            for body in bodies(after: #"var code: String\s*\{"#, in: text) {
                for match in matches(literal, in: body) { add(match[1], file) }
            }
            // `enum Code: String { case a = "a_b", c }`: raw values, written or implied.
            for body in bodies(after: #"enum Code: String[^{]*\{"#, in: text) {
                let declarations = body.replacingOccurrences(
                    of: #"//[^\n]*"#, with: "", options: .regularExpression)
                for match in matches(#"\bcase\s+([^\n]+)"#, in: declarations) {
                    for part in match[1].split(separator: ",") {
                        let part = part.trimmingCharacters(in: .whitespaces)
                        if let raw = matches(#"^\w+\s*=\s*"([^"]+)"$"#, in: part).first {
                            add(raw[1], file)
                        } else if part.range(of: #"^\w+$"#, options: .regularExpression) != nil {
                            add(part, file)
                        }
                    }
                }
            }
        }
        // Where an enum lists its cases, take them from the type as well as from the text.
        for code in typedCodes { codes[code] = codes[code] ?? "(CaseIterable)" }
        return codes
    }

    /// Every code of the error types that spell theirs as a `Code` enum, from the types.
    static var typedCodes: [String] {
        InviteLinkError.Code.allCases.map(\.rawValue) + KeyModelError.Code.allCases.map(\.rawValue)
            + InviteEnd.allCases.map(\.code) + HomeError.Code.allCases.map(\.rawValue)
            + RecoveryError.Code.allCases.map(\.rawValue) + BotError.Code.allCases.map(\.rawValue)
            + CLIError.Code.allCases.map(\.rawValue) + JoinGrantError.Code.allCases.map(\.rawValue)
            + APIError.Code.allCases.map(\.rawValue)
    }

    static func matches(_ pattern: String, in text: String) -> [[String]] {
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (0..<match.numberOfRanges).map { index in
                Range(match.range(at: index), in: text).map { String(text[$0]) } ?? ""
            }
        }
    }

    /// The text between each match of `opening` (which ends with `{`) and its closing brace.
    static func bodies(after opening: String, in text: String) -> [String] {
        let regex = try! NSRegularExpression(pattern: opening)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
            guard let start = Range(match.range, in: text)?.upperBound else { return nil }
            var depth = 1
            var index = start
            while index < text.endIndex, depth > 0 {
                if text[index] == "{" { depth += 1 } else if text[index] == "}" { depth -= 1 }
                index = text.index(after: index)
            }
            return String(text[start..<index])
        }
    }

    /// `refused_<reason>` counts as snake_case: the family's fixed part is.
    static func isSnakeCase(_ code: String) -> Bool {
        code.replacingOccurrences(of: "<[a-z]+>", with: "x", options: .regularExpression)
            .range(of: "^[a-z0-9]+(_[a-z0-9]+)*$", options: .regularExpression) != nil
    }

    @Test func everyCodeIsSnakeCaseAndDocumented() throws {
        let codes = try Self.sourceCodes()
        // The scan must see the codes it is meant to see, or an empty scan would pass.
        #expect(codes.count > 250, "only \(codes.count) codes found: is the scan broken?")
        for known in [
            "unknown_word", "pake_confirmation_mismatch", "code_invalid", "crowded", "usage", "not_a_link",
        ] {
            #expect(codes[known] != nil, "the scan missed \(known)")
        }

        let notSnake = codes.filter { !Self.isSnakeCase($0.key) }
        #expect(notSnake.isEmpty, "not snake_case: \(notSnake.sorted { $0.key < $1.key })")

        let docs = try String(
            contentsOf: TestSupport.packageRoot.appendingPathComponent("docs/errors.md"), encoding: .utf8)
        let missing = codes.filter { !docs.contains("`\($0.key)`") }
        #expect(missing.isEmpty, "missing from docs/errors.md: \(missing.sorted { $0.key < $1.key })")

        // `refused_<reason>`: every reason an attendant or the bot gives is named on that line.
        #expect(codes["refused_<reason>"] != nil, "the scan missed refused_<reason>")
        let refusedLine = docs.split(separator: "\n").first { $0.hasPrefix("| `refused_<reason>`") } ?? ""
        let unnamed = RefusalReason.allCases.filter { !refusedLine.contains("`\($0.rawValue)`") }
        #expect(unnamed.isEmpty, "reasons missing from refused_<reason> in docs/errors.md: \(unnamed)")
    }

    /// The typed codes are snake_case, checked on the types themselves, not on their text.
    @Test func typedCodesAreSnakeCase() {
        let notSnake = Self.typedCodes.filter { !Self.isSnakeCase($0) }
        #expect(notSnake.isEmpty, "not snake_case: \(notSnake)")
        #expect(RefusalReason.allCases.allSatisfy { Self.isSnakeCase($0.rawValue) })
    }

    /// The cases callers match a server's error by keep the wire spelling, both ways, and an
    /// unknown code keeps its own.
    @Test func typedServerCodesKeepTheirSpelling() throws {
        let codes = try Self.sourceCodes()
        for code in SpaceErrorCode.known {
            #expect(SpaceErrorCode(code.spelling) == code)
            #expect(codes[code.spelling] != nil, "\(code) is spelled nowhere in Sources")
        }
        #expect(SpaceErrorCode("made_up_code") == .other("made_up_code"))
        #expect(Set(SpaceErrorCode.known.map(\.spelling)).count == SpaceErrorCode.known.count)
    }

    @Test func theCheckCatchesWhatItShould() {
        #expect(!Self.isSnakeCase("unknown-word") && !Self.isSnakeCase("pake.message_length"))
        #expect(Self.isSnakeCase("refused_<reason>") && Self.isSnakeCase("http_<status>"))
        #expect(Self.family(#"refused_\(ready.reason ?? "invite")"#) == "refused_<reason>")
        #expect(Self.family(#"http_\(status)"#) == "http_<status>")
        let text = #"throw CLIError(code: "bad-one", message: "a sentence") ; x = APIError(400, "x_y", "m")"#
        let found = Self.literalPatterns.flatMap { Self.matches($0, in: text).map { $0[1] } }
        #expect(found == ["bad-one", "x_y"], "\(found)")
    }
}
