import Foundation
import Mailbox
import Net
import SpaceModel

/// Which relay a short code goes through. A bare code (`coral-piano-42`) names no server, so
/// both sides must agree without it; the first of these that says something wins:
///
/// 1. `--relay URL`;
/// 2. `ELEVEN_RELAY`;
/// 3. `"relay"` in `config.json` in the state directory (`$ELEVEN_HOME`);
/// 4. the relay the space server advertises (`GET /api/relay`): the inviter's server, or the
///    server a word link (`https://host/invite#Paul/coral-piano-42`) names;
/// 5. ``publicDefault``, the public relay, as Magic Wormhole's clients have one.
public struct RelayChoice: Equatable, Sendable {
    /// Where the choice came from, to name it in an error.
    public enum Source: Equatable, Sendable {
        case option
        case environment
        case configFile(path: String)
        case server(String)
        case builtIn

        /// How a person refers to it: `'--relay'`, `ELEVEN_RELAY`, …
        public var name: String {
            switch self {
            case .option: "'--relay'"
            case .environment: "ELEVEN_RELAY"
            case .configFile(let path): "\"relay\" in \(path)"
            case .server(let server): "the relay \(server) advertises"
            case .builtIn: "the default relay"
            }
        }
    }

    /// The public relay used when nothing else names one.
    public static let publicDefault = "wss://relay.elevenmessenger.com/v1"
    /// The state directory's configuration file.
    public static let configFile = "config.json"

    public let url: String
    public let source: Source

    /// Chooses the relay. `option`: `--relay` as written on the command line; `environment`: the
    /// process environment; `advertised`: asks the space server that applies, if any (called only
    /// when nothing before it chose; a server that cannot be asked or advertises none is passed
    /// over). Throws ``RelayChoiceError`` for a value that is not a ws:// or wss:// URL, naming
    /// where it came from.
    public static func resolve(
        option: String?, environment: [String: String], state: StateDirectory,
        advertised: () -> (server: String, relay: String?)? = { nil }
    ) throws(RelayChoiceError) -> RelayChoice {
        if let option { return try checked(option, .option) }
        if let value = environment["ELEVEN_RELAY"], !value.isEmpty { return try checked(value, .environment) }
        if let configured = try configured(state) { return configured }
        if let (server, relay) = advertised(), let relay { return try checked(relay, .server(server)) }
        return RelayChoice(url: publicDefault, source: .builtIn)
    }

    private static func configured(_ state: StateDirectory) throws(RelayChoiceError) -> RelayChoice? {
        let path = state.file(configFile)
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard let object = (try? JSONParser.parse(Array(data)))?.objectValue else {
            throw RelayChoiceError(source: .configFile(path: path), value: nil)
        }
        guard let value = object["relay"] else { return nil }
        guard let relay = value.stringValue else {
            throw RelayChoiceError(source: .configFile(path: path), value: nil)
        }
        return try checked(relay, .configFile(path: path))
    }

    private static func checked(_ url: String, _ source: Source) throws(RelayChoiceError) -> RelayChoice {
        // Net's own parser, the one that will connect: a port out of range or a user name in the
        // address is refused here, whichever setting it came from, not after reconnects.
        guard let parsed = try? NetURL(url), ["ws", "wss"].contains(parsed.scheme), !url.contains("@")
        else { throw RelayChoiceError(source: source, value: url) }
        return RelayChoice(url: url, source: source)
    }
}

/// A relay setting that is not a ws:// or wss:// URL; the message names the setting.
public struct RelayChoiceError: Error, Equatable, Sendable, CustomStringConvertible {
    public let source: RelayChoice.Source
    /// The bad value (nil: the configuration file itself is unreadable).
    public let value: String?

    public var description: String {
        guard let value else {
            return "\(source.name) must be a ws:// or wss:// URL (config.json is not a JSON object)"
        }
        // A user name or password in the address is not echoed.
        guard !value.contains("@") else {
            return "\(source.name) must be a ws:// or wss:// URL without a user name or password"
        }
        return "\(source.name) must be a ws:// or wss:// URL, not '\(value)'"
    }
}

extension SpaceClient {
    /// The join relay the server advertises (`GET /api/relay`); nil when it advertises none.
    public func advertisedRelay() throws(SpaceClientError) -> String? {
        struct Answer: Decodable { let relay: String }
        do {
            let answer: Answer = try call(.get, "/api/relay")
            return answer.relay
        } catch  where error.status == 404 {
            return nil
        }
    }

    /// The relay advertised by `server`, asked briefly; nil when it cannot be asked or has none
    /// (the choice then falls through to the public default).
    public static func advertisedRelay(of server: String) -> String? {
        guard let client = try? SpaceClient(server: server) else { return nil }
        return (try? client.advertisedRelay()) ?? nil
    }
}
