import CLISupport
import Net

// The addresses a command line gives (`--relay`, `--server`), checked before any connection with
// the parser the connection itself uses (`NetURL`): a malformed address or a port out of range is
// a usage error at once, not reconnects and then "unavailable". Errors never repeat a user name or
// password written into the address.

/// A relay address: `ws://` or `wss://`.
func checkedRelayURL(_ text: String, field: String = "--relay") throws -> String {
    try checkedURL(text, field: field, schemes: ["ws", "wss"], example: "ws://127.0.0.1:4000/v1")
}

/// `--relay` as written on the command line, checked before any flow starts (where the relay is
/// otherwise chosen is the flows' business).
func checkRelayOption(_ arguments: ParsedArguments) throws {
    if arguments.wasGiven("relay"), let relay = arguments.value("relay") { _ = try checkedRelayURL(relay) }
}

/// A space server address: `http://` or `https://`, nothing after the host but an optional `/`.
func checkedServerURL(_ text: String, field: String = "--server") throws -> String {
    try checkedURL(text, field: field, schemes: ["http", "https"], example: "http://127.0.0.1:8711")
}

private func checkedURL(_ text: String, field: String, schemes: Set<String>, example: String) throws -> String
{
    guard !text.trimmingCharacters(in: .whitespaces).isEmpty else {
        throw CLIError.usage("'\(field)' is empty: give an address such as \(example)", help: nil)
    }
    let problem: String
    do throws(NetError) {
        let url = try NetURL(text)
        guard schemes.contains(url.scheme) else {
            throw NetError(
                .invalidURL,
                "it must start with \(schemes.sorted().map { "\($0)://" }.joined(separator: " or "))")
        }
        return text
    } catch {
        problem = text.contains("@") ? "an address may not hold a user name or password" : error.message
    }
    throw CLIError.usage(
        "'\(field)' must be an address such as \(example), not '\(withoutURLPasswords(text))' (\(problem))",
        help: nil)
}
