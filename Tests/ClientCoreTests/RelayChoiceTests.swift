import ClientCore
import Foundation
import TestSupport
import Testing

/// Which relay a short code uses (`RelayChoice`): the order of the settings, errors that name
/// the setting, and the relay a real `eleven-server` advertises.
@Suite struct RelayChoiceTests {
    static func state(config: String? = nil) throws -> StateDirectory {
        let directory = try TestSupport.temporaryDirectory()
        if let config { try Data(config.utf8).write(to: directory.appendingPathComponent("config.json")) }
        return StateDirectory(path: directory.path)
    }

    @Test func theFirstSettingThatSaysSomethingWins() throws {
        let state = try Self.state(config: #"{"relay": "wss://config.example/v1"}"#)
        let env = ["ELEVEN_RELAY": "wss://env.example/v1"]
        let server = { ("https://space.example", "wss://server.example/v1") as (String, String?)? }
        func choose(_ option: String?, _ environment: [String: String], _ state: StateDirectory) throws
            -> RelayChoice
        {
            try RelayChoice.resolve(
                option: option, environment: environment, state: state, advertised: server)
        }
        #expect(try choose("ws://option.example/v1", env, state).source == .option)
        #expect(try choose(nil, env, state).url == "wss://env.example/v1")
        #expect(try choose(nil, ["ELEVEN_RELAY": ""], state).url == "wss://config.example/v1")
        let empty = try Self.state()
        let advertised = try choose(nil, [:], empty)
        #expect(
            advertised.url == "wss://server.example/v1"
                && advertised.source == .server("https://space.example"))
        let fallback = try RelayChoice.resolve(option: nil, environment: [:], state: empty)
        #expect(fallback.url == RelayChoice.publicDefault && fallback.source == .builtIn)
        #expect(RelayChoice.publicDefault.hasPrefix("wss://"))
    }

    @Test func aBadSettingIsNamed() throws {
        let empty = try Self.state()
        do {
            _ = try RelayChoice.resolve(option: nil, environment: ["ELEVEN_RELAY": "garbage"], state: empty)
            Issue.record("a bad ELEVEN_RELAY was accepted")
        } catch {
            #expect(error.source == .environment && error.value == "garbage")
            #expect(error.description == "ELEVEN_RELAY must be a ws:// or wss:// URL, not 'garbage'")
        }
        let badConfig = try Self.state(config: #"{"relay": "http://x"}"#)
        do {
            _ = try RelayChoice.resolve(option: nil, environment: [:], state: badConfig)
            Issue.record("an http relay in config.json was accepted")
        } catch {
            #expect(error.description.hasPrefix("\"relay\" in \(badConfig.path)/config.json must be"))
        }
        #expect(throws: RelayChoiceError.self) {
            try RelayChoice.resolve(option: "ws://", environment: [:], state: empty)
        }
        // Whichever setting it comes from, a port out of range is refused at once (it used to
        // pass here and fail only after three reconnects), and a password is not echoed.
        for (environment, config) in [
            (["ELEVEN_RELAY": "ws://127.0.0.1:99999/v1"], nil),
            ([:], #"{"relay": "ws://127.0.0.1:99999/v1"}"#),
        ] as [([String: String], String?)] {
            #expect(throws: RelayChoiceError.self) {
                try RelayChoice.resolve(
                    option: nil, environment: environment, state: try Self.state(config: config))
            }
        }
        do {
            _ = try RelayChoice.resolve(
                option: nil, environment: ["ELEVEN_RELAY": "ws://sam:hunter2@127.0.0.1:99999/v1"],
                state: empty)
            Issue.record("a relay address with a password was accepted")
        } catch {
            #expect(!error.description.contains("hunter2"), "\(error.description)")
        }
    }

    @Test func aSpaceServerAdvertisesItsRelay() throws {
        let port = try TestSupport.freePort()
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ChildProcess(
            TestSupport.productPath("eleven-server"),
            [
                "--listen", "127.0.0.1:\(port)", "--db", directory.appendingPathComponent("s.sqlite").path,
                "--relay", "wss://relay.example/v1",
            ], port: port)
        defer { server.stop() }
        #expect(SpaceClient.advertisedRelay(of: "http://127.0.0.1:\(port)") == "wss://relay.example/v1")
        let plain = try InviteLinkEndToEndTests.RunningServer()
        #expect(SpaceClient.advertisedRelay(of: plain.url) == nil)
    }
}
