import Foundation
import PAKE
import TestSupport
import Testing

/// The real python-spake2 (PyPI `spake2`) as the peer: one interpreter answers every exchange
/// over stdin/stdout lines.
@Suite("Interop with python-spake2", .enabled(if: !TestSupport.interopSkipped))
struct PythonInteropTests {
    /// `start <password hex> <identity hex>` → our message; `finish <peer hex>` → key or error.
    /// Empty byte strings travel as "-".
    static let script = """
        import sys
        import spake2
        from spake2 import SPAKE2_Symmetric
        def unhex(s):
            return b"" if s == "-" else bytes.fromhex(s)
        print("ready", spake2.__version__, flush=True)
        side = None
        for line in sys.stdin:
            parts = line.split()
            if parts[0] == "start":
                side = SPAKE2_Symmetric(unhex(parts[1]), idSymmetric=unhex(parts[2]))
                print(side.start().hex(), flush=True)
            elif parts[0] == "finish":
                try:
                    print(side.finish(unhex(parts[1])).hex(), flush=True)
                except Exception as e:
                    print("error", type(e).__name__, flush=True)
        """

    static func hexOrDash(_ bytes: [UInt8]) -> String { bytes.isEmpty ? "-" : bytes.hex }

    @Test func fiftyExchangesWithPythonSpake2() throws {
        let python = TestSupport.python
        try #require(
            FileManager.default.isExecutableFile(atPath: python),
            "No Python at \(python): run scripts/test (or set ELEVEN_TEST_PYTHON), or ELEVEN_SKIP_INTEROP=1")
        let peer = try LineProcess(python, ["-c", Self.script])
        defer { peer.close() }
        let greeting = try peer.readLine(timeout: 30)
        try #require(greeting == "ready 0.9", "python-spake2 said: \(greeting) \(peer.drainErrors())")

        var random = SystemRandom()
        var agreed = 0
        var disagreed = 0
        for round in 0..<50 {
            // Random byte passwords (not only text), some empty identities, one in five wrong.
            let password = random.bytes(count: 1 + Int(random.bytes(count: 1)[0] % 40))
            let identity = round % 4 == 0 ? [] : Array("lothar.com/wormhole/test-\(round)".utf8)
            let wrongPassword = round % 5 == 4
            let peerPassword = wrongPassword ? password + [0x21] : password

            try peer.send("start \(Self.hexOrDash(peerPassword)) \(Self.hexOrDash(identity))")
            let theirMessage = [UInt8](hex: try peer.readLine())
            let ours = WormholeSPAKE2(password: password, identity: identity).start(using: &random)
            try peer.send("finish \(ours.message.hex)")
            let theirKey = try peer.readLine()
            let ourKey = try ours.finish(theirMessage)
            #expect(theirKey.count == 64, "python: \(theirKey)")
            if wrongPassword {
                #expect(ourKey.hex != theirKey, "round \(round): different passwords agreed")
                disagreed += 1
            } else {
                #expect(ourKey.hex == theirKey, "round \(round): same password disagreed")
                agreed += 1
            }
        }
        #expect(agreed == 40 && disagreed == 10)

        // python-spake2 refuses its own message reflected back to it.
        try peer.send("start \(Self.hexOrDash(Array("pw".utf8))) -")
        let reflected = try peer.readLine()
        try peer.send("finish \(reflected)")
        #expect(try peer.readLine().hasPrefix("error"))
        #expect(peer.close() == 0)
    }
}
