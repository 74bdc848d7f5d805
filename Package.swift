// swift-tools-version: 6.0
import PackageDescription

// Eleven short-code invites. See README.md and ../shared/docs/DESIGN.md for the map.
// C libraries come from Debian packages through system-library targets; no Swift package
// dependency is fetched.

let package = Package(
    name: "Eleven",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "eleven", targets: ["ElevenCLI"]),
        .executable(name: "eleven-relay", targets: ["ElevenRelay"]),
        .executable(name: "eleven-server", targets: ["ElevenServer"]),
        .executable(name: "eleven-bench", targets: ["ElevenBench"]),
        .executable(name: "eleven-bot", targets: ["ElevenBot"]),
        .library(name: "PAKE", targets: ["PAKE"]),
        .library(name: "Mailbox", targets: ["Mailbox"]),
        .library(name: "WordCodes", targets: ["WordCodes"]),
        .library(name: "Net", targets: ["Net"]),
        .library(name: "Relay", targets: ["Relay"]),
        .library(name: "Support", targets: ["Support"]),
        .library(name: "SpaceModel", targets: ["SpaceModel"]),
        .library(name: "JoinProtocol", targets: ["JoinProtocol"]),
        .library(name: "ClientCore", targets: ["ClientCore"]),
        .library(name: "SpaceServer", targets: ["SpaceServer"]),
        .library(name: "SQLite", targets: ["SQLite"]),
    ],
    targets: [
        // System libraries (Debian -dev packages).
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CQRencode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CFIDO2", pkgConfig: "libfido2", providers: [.apt(["libfido2-dev"])]),
        // libcurl's SMTP client: the home server mails email sign-in codes.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Linux declarations Glibc does not import (epoll, accept4, eventfd, timerfd, pipe2, and
        // posix_spawn's chdir and closefrom actions).
        .systemLibrary(name: "CNet"),

        // Modules.
        .target(name: "PAKE", dependencies: ["CSodium", "COpenSSL"]),
        // The mailbox protocol's identifiers and its JSON codec, shared by the relay and the
        // clients so each is defined once; no I/O.
        .target(name: "Mailbox"),
        .target(name: "WordCodes", dependencies: ["Mailbox"], exclude: ["README.md"]),
        // Small shared mechanisms: one lock, a batch queue, a hand-off between threads, back-off.
        .target(name: "Support", dependencies: ["CNet"]),
        .target(name: "Net", dependencies: ["CNet", "COpenSSL", "Support"]),
        // The one SQLite layer: connection, statements, sync policy, schema versions, application
        // ids, storage-failure classes.
        .target(name: "SQLite", dependencies: ["CSQLite"]),
        .target(
            name: "Relay", dependencies: ["Mailbox", "Net", "SQLite", "CPostgres", "COpenSSL", "Support"]),
        // Keys, roster, invites and the wire types of the space and home APIs; no I/O.
        .target(name: "SpaceModel", dependencies: ["PAKE", "WordCodes", "Mailbox", "Support", "CSodium"]),
        // The pure machines of a join: rendezvous, handshake and channel, verification words, an
        // invite's whole life (InviteAttendant); time and randomness passed in, no I/O.
        .target(
            name: "JoinProtocol",
            dependencies: ["Mailbox", "PAKE", "WordCodes", "SpaceModel", "Support", "CSodium"]),
        .target(
            name: "ClientCore",
            dependencies: [
                "SpaceModel", "JoinProtocol", "Mailbox", "PAKE", "Net", "Support", "CSodium", "CFIDO2",
                "COpenSSL",
            ]),
        .target(
            name: "SpaceServer",
            dependencies: ["SpaceModel", "Net", "Support", "SQLite", "PAKE", "CSodium", "CCurl"],
            exclude: ["API.md"]),

        // The sidecar bot: attends short-code joins for its space.
        .target(
            name: "SidecarBot",
            dependencies: [
                "ClientCore", "JoinProtocol", "SpaceModel", "PAKE", "WordCodes", "SQLite", "Support",
                "CSodium",
            ]),

        // Argument parsing, help text, exit codes and output shared by the executables.
        .target(name: "CLISupport", dependencies: ["WordCodes", "Mailbox"]),

        // Thin executables.
        .executableTarget(
            name: "ElevenCLI",
            dependencies: [
                "PAKE", "WordCodes", "SpaceModel", "Support", "JoinProtocol", "ClientCore", "CLISupport",
                "CQRencode", "Net",
            ]),
        .executableTarget(name: "ElevenServer", dependencies: ["SpaceServer", "Net", "CLISupport"]),
        .executableTarget(name: "ElevenRelay", dependencies: ["Relay", "Mailbox", "Net", "CLISupport"]),
        .executableTarget(
            name: "ElevenBot", dependencies: ["SidecarBot", "ClientCore", "CLISupport", "Net", "Support"]),
        .executableTarget(
            name: "ElevenBench",
            dependencies: [
                "PAKE", "WordCodes", "Mailbox", "Net", "Relay", "CSodium", "SpaceModel", "Support",
                "SpaceServer",
                "JoinProtocol", "ClientCore", "SidecarBot", "TestSupport", "LoadHarness", "CLISupport",
            ]),

        // Helpers shared by the test targets and the benchmarks: the one child-process type, free
        // ports, `eventually`, PostgreSQL, faults, the Python venv. Starts children with Support's
        // `Subprocess`.
        .target(name: "TestSupport", dependencies: ["Support"], path: "Tests/TestSupport"),
        // The bot load world (relay, space server and bot as processes, an in-process owner)
        // shared by the bot and soak benchmarks and the soak tests.
        .target(
            name: "LoadHarness",
            dependencies: ["SidecarBot", "ClientCore", "PAKE", "WordCodes", "TestSupport"],
            path: "Tests/LoadHarness"),
        // Adversaries that deviate from the protocol: a relay proxy that reads, drops, delays,
        // reorders, substitutes and injects mailbox frames. Shared by the client core's tests and
        // the end-to-end tests of the real programs.
        .target(
            name: "Adversaries",
            dependencies: ["ClientCore", "JoinProtocol", "Net", "PAKE", "SpaceModel", "TestSupport"],
            path: "Tests/Adversaries"),

        .testTarget(name: "PAKETests", dependencies: ["PAKE", "CSodium", "COpenSSL", "TestSupport"]),
        .testTarget(name: "WordCodesTests", dependencies: ["WordCodes", "TestSupport"]),
        .testTarget(name: "NetTests", dependencies: ["Net", "TestSupport"]),
        .testTarget(
            name: "RelayTests", dependencies: ["Relay", "Mailbox", "Net", "SQLite", "Support", "TestSupport"]),
        .testTarget(
            name: "ClientCoreTests",
            dependencies: [
                "ClientCore", "JoinProtocol", "Mailbox", "SpaceModel", "Support", "PAKE", "Net",
                "TestSupport",
                "Adversaries",
            ]),
        .testTarget(
            name: "SpaceServerTests",
            dependencies: [
                "SpaceServer", "SpaceModel", "Support", "JoinProtocol", "ClientCore", "Net", "SQLite",
                "TestSupport", "PAKE", "CFIDO2",
            ]),
        .testTarget(
            name: "ElevenCLITests",
            dependencies: [
                "CLISupport", "ElevenCLI", "ClientCore", "SpaceModel", "Net", "TestSupport", "Adversaries",
                "JoinProtocol", "PAKE", "Support", "SidecarBot", "SpaceServer",
            ]),
        .testTarget(
            name: "BotTests",
            dependencies: [
                "SidecarBot", "JoinProtocol", "ClientCore", "Mailbox", "SpaceModel", "Support", "SQLite",
                "TestSupport", "LoadHarness",
            ]),
        .testTarget(
            name: "SQLiteTests",
            dependencies: ["SQLite", "CSQLite", "Relay", "SpaceServer", "SidecarBot", "TestSupport"]),
    ]
)
