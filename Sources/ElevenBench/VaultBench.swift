import ClientCore
import Foundation
import SpaceModel
import TestSupport

// `eleven-bench vault`: (1) time from `eleven device link CODE` to every space readable on the new
// device (link, then `eleven read` of each space), against reading the same spaces on the old
// device in the same run; (2) vault pull and push with 1,000 saved spaces through a real
// `eleven-server --home`, against sealing and opening the same vault bytes with libsodium and a
// plain HTTP round trip to the same server.

private let vaultUsage = """
    usage: eleven-bench vault [--runs N] [--spaces N]

      --runs N      links and syncs measured (default 5)
      --spaces N    saved spaces in the vault for push/pull (default 1000)
    """

func runVaultBench(_ arguments: [String]) -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        print(vaultUsage)
        return 0
    }
    var runs = 5
    var spaceCount = 1000
    var index = 0
    while index < arguments.count {
        let value = index + 1 < arguments.count ? Int(arguments[index + 1]) : nil
        switch (arguments[index], value) {
        case ("--runs", let v?): runs = min(max(v, 1), 50)
        case ("--spaces", let v?): spaceCount = min(max(v, 1), 5000)
        default:
            FileHandle.standardError.write(
                Data(benchUsageError("unknown option '\(arguments[index])'", usage: vaultUsage).utf8))
            return 2
        }
        index += 2
    }
    let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()
    let tool = { (name: String) in bin.appendingPathComponent(name).path }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "eleven-bench-vault-\(getpid())")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var children: [ChildProcess] = []
    defer {
        for child in children { child.finish(timeout: 5) }
        try? FileManager.default.removeItem(at: directory)
    }
    // Port 0: each program prints the address it bound.
    func start(_ name: String, _ arguments: [String], prefix: String) -> String? {
        guard let child = try? ChildProcess(tool(name), arguments),
            let value = try? child.value(afterPrefix: prefix, timeout: 20)
        else { return nil }
        children.append(child)
        return value
    }
    let path = { (name: String) in directory.appendingPathComponent(name).path }
    guard
        let relay = start(
            "eleven-relay", ["--listen", "127.0.0.1:0", "--db", path("relay.sqlite"), "--no-limits"],
            prefix: "eleven-relay listening on "),
        let spaces = start(
            "eleven-server", ["--listen", "127.0.0.1:0", "--db", path("spaces.sqlite"), "--quiet"],
            prefix: "eleven-server listening on "),
        let home = start(
            "eleven-server", ["--listen", "127.0.0.1:0", "--db", path("home.sqlite"), "--home", "--quiet"],
            prefix: "eleven-server listening on ")
    else { return benchFail("the relay or a server did not start") }

    // (1) Linking: A has three spaces with a message each and is signed in.
    let eleven = tool("eleven")
    let a = ["ELEVEN_HOME": path("a"), "ELEVEN_RELAY": relay]
    let names = ["Family", "Work", "Club"]
    for name in names {
        guard
            runToEnd(eleven, ["space", "create", name, "--server", spaces, "--as", "Paul"], environment: a)
                == 0,
            runToEnd(eleven, ["send", "--space", name, "hello"], environment: a) == 0
        else { return benchFail("could not create the spaces") }
    }
    guard runToEnd(eleven, ["signin", "--server", home], environment: a) == 0 else {
        return benchFail("eleven signin failed")
    }
    var links: [Double] = []
    var reads: [Double] = []
    for run in 0..<runs {
        guard let add = try? ChildProcess(eleven, ["device", "add", "--yes"], environment: a),
            let code = try? add.value(afterPrefix: "Device code: ", timeout: 20)
        else { return benchFail("eleven device add did not print a code") }
        let b = ["ELEVEN_HOME": path("b\(run)"), "ELEVEN_RELAY": relay]
        let started = ContinuousClock.now
        var ok = runToEnd(eleven, ["device", "link", code], environment: b) == 0
        for name in names { ok = ok && runToEnd(eleven, ["read", "--space", name], environment: b) == 0 }
        let linked = ContinuousClock.now - started
        add.finish(timeout: 5)
        guard ok else { return benchFail("run \(run): the new device could not read every space") }
        links.append(milliseconds(linked))
        let readStart = ContinuousClock.now
        for name in names { _ = runToEnd(eleven, ["read", "--space", name], environment: a) }
        reads.append(milliseconds(ContinuousClock.now - readStart))
    }
    let link = percentile(links, 0.5)
    let read = percentile(reads, 0.5)
    print("device link, \(names.count) spaces, \(runs) runs        median ms   min ms")
    print(String(format: "link + read every space         %9.1f  %7.1f", link, links.min() ?? 0))
    print(String(format: "reference: read them on A       %9.1f  %7.1f", read, reads.min() ?? 0))
    print(String(format: "ratio %.2f (the difference is what linking costs)", link / read))
    print("")

    // (2) Push and pull of a vault with many saved spaces.
    do {
        let state = LocalState(directory: StateDirectory(path: path("big")))
        _ = try state.identity(create: true)
        var saved = SavedSpaces()
        for n in 0..<spaceCount {
            saved.save(
                SavedSpace(
                    space: .random(), name: "Space \(n)", server: spaces, member: .random(),
                    ownerSigningKey: Base64URL.encode([UInt8](repeating: UInt8(n & 0xff), count: 32)),
                    deviceToken: Base64URL.encode((0..<32).map { _ in UInt8.random(in: 0...255) })))
        }
        try state.save(saved)
        let sync = HomeSync(state: state)
        _ = try sync.signIn(server: home, label: "bench")
        var pulls: [Double] = []
        var pushes: [Double] = []
        for run in 0..<runs {
            let pullStart = ContinuousClock.now
            let pulled = try sync.sync()
            pulls.append(milliseconds(ContinuousClock.now - pullStart))
            guard !pulled.pushed, pulled.spaces == spaceCount else {
                return benchFail("unexpected pull result")
            }
            let pushStart = ContinuousClock.now
            try sync.star(saved.spaces[0].space, run % 2 == 0)
            let pushed = try sync.sync()
            pushes.append(milliseconds(ContinuousClock.now - pushStart))
            guard pushed.pushed else { return benchFail("run \(run): a change was not pushed") }
        }
        // References in the same run: libsodium on the same bytes, and a bare HTTP round trip.
        var document = VaultDocument()
        document.absorb(try state.spaces().spaces, device: "bench")
        let plaintext = document.encoded()
        let key = VaultKey.random(generation: 1)
        var crypto: [Double] = []
        var sealedCount = 0
        for _ in 0..<max(runs, 5) {
            let cryptoStart = ContinuousClock.now
            let sealed = key.seal(plaintext)
            _ = try key.open(sealed)
            crypto.append(milliseconds(ContinuousClock.now - cryptoStart))
            sealedCount = sealed.count
        }
        var coding: [Double] = []
        for _ in 0..<max(runs, 5) {
            let codingStart = ContinuousClock.now
            _ = try VaultDocument(decoding: document.encoded())
            coding.append(milliseconds(ContinuousClock.now - codingStart))
        }
        var trips: [Double] = []
        let client = try HomeClient(server: home)
        for _ in 0..<max(runs, 5) {
            let tripStart = ContinuousClock.now
            _ = try? client.anchors()  // refused without a session: one HTTP round trip, no work
            trips.append(milliseconds(ContinuousClock.now - tripStart))
        }
        let pull = percentile(pulls, 0.5)
        let push = percentile(pushes, 0.5)
        let seal = percentile(crypto, 0.5)
        let trip = percentile(trips, 0.5)
        print(
            "vault with \(spaceCount) saved spaces: \(plaintext.count / 1024) KiB plaintext, "
                + "\(sealedCount / 1024) KiB sealed; \(runs) runs        median ms")
        print(String(format: "pull (session, fetch, open, merge, save locally)    %9.2f", pull))
        print(String(format: "push (record, fetch, merge, seal, compare-and-swap) %9.2f", push))
        print(String(format: "reference: libsodium seal + open of the same bytes  %9.2f", seal))
        print(String(format: "reference: one HTTP round trip to the home server   %9.2f", trip))
        print(
            String(
                format: "for scale: JSON encode + decode of the vault         %9.2f", percentile(coding, 0.5))
        )
        print(
            String(
                format: "pull = %.1f x (seal+open + round trip); push = %.1f x", pull / (seal + trip),
                push / (seal + trip)))
    } catch {
        return benchFail("vault push/pull: \(error)")
    }
    return 0
}

private func benchFail(_ message: String) -> Int32 {
    FileHandle.standardError.write(Data("eleven-bench vault: \(message)\n".utf8))
    return 1
}
