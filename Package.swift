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
        .executable(name: "eleven-bench", targets: ["ElevenBench"]),
        .library(name: "PAKE", targets: ["PAKE"]),
        .library(name: "WordCodes", targets: ["WordCodes"]),
        .library(name: "Net", targets: ["Net"]),
        .library(name: "Relay", targets: ["Relay"]),
    ],
    targets: [
        // System libraries (Debian -dev packages).
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // Linux declarations Glibc does not import (epoll, accept4, eventfd, timerfd).
        .systemLibrary(name: "CNet"),

        // Modules.
        .target(name: "PAKE", dependencies: ["CSodium", "COpenSSL"]),
        .target(name: "WordCodes", exclude: ["README.md"]),
        .target(name: "Net", dependencies: ["CNet", "COpenSSL"]),
        .target(name: "Relay", dependencies: ["Net", "CSQLite", "COpenSSL"]),

        // Thin executables.
        .executableTarget(name: "ElevenCLI", dependencies: ["PAKE", "WordCodes"]),
        .executableTarget(name: "ElevenRelay", dependencies: ["Relay", "Net"]),
        .executableTarget(
            name: "ElevenBench", dependencies: ["PAKE", "WordCodes", "Net", "Relay", "CSodium"]),

        // Helpers shared by the test targets (process control, free ports, the Python venv).
        .target(name: "TestSupport", path: "Tests/TestSupport"),

        .testTarget(name: "PAKETests", dependencies: ["PAKE", "CSodium", "TestSupport"]),
        .testTarget(name: "WordCodesTests", dependencies: ["WordCodes", "TestSupport"]),
        .testTarget(name: "NetTests", dependencies: ["Net", "TestSupport"]),
        .testTarget(name: "RelayTests", dependencies: ["Relay", "Net", "TestSupport"]),
        .testTarget(name: "ElevenCLITests", dependencies: ["TestSupport"]),
    ]
)
