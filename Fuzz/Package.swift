// swift-tools-version: 6.0
import Foundation
import PackageDescription

// A path dependency's identity is its directory name (the checkout may be called anything).
let mainPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent

// libFuzzer targets for every parser of untrusted input. Kept out of the main package: a main-less
// executable built with `--sanitize=fuzzer` takes libFuzzer's `main` and would break a normal
// `swift build` there. See README.md.
let package = Package(
    name: "Fuzz",
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(
            name: "FuzzHTTPParser",
            dependencies: [.product(name: "Net", package: mainPackage)],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzWebSocketFrames",
            dependencies: [.product(name: "Net", package: mainPackage)],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzRelayCore",
            dependencies: [
                .product(name: "Relay", package: mainPackage),
                .product(name: "Mailbox", package: mainPackage),
            ],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzCodeParser",
            dependencies: [.product(name: "WordCodes", package: mainPackage)],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzPeerMessages",
            dependencies: [
                .product(name: "JoinProtocol", package: mainPackage),
                .product(name: "Mailbox", package: mainPackage),
                .product(name: "SpaceModel", package: mainPackage),
                .product(name: "ClientCore", package: mainPackage),
                .product(name: "PAKE", package: mainPackage),
            ],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzInviteLink",
            dependencies: [.product(name: "SpaceModel", package: mainPackage)],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ]
)
