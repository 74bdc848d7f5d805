import Foundation
import TestSupport
import Testing

@testable import PAKE

/// Python peers: the real python-spake2 (PyPI `spake2`), and an independent RFC 9382 edwards25519
/// on PyNaCl. One interpreter per test answers every exchange over stdin/stdout lines.
@Suite(
    "Interop with Python: python-spake2, and RFC 9382 on PyNaCl", .enabled(if: !TestSupport.interopSkipped))
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
        let peer = try ChildProcess(python, ["-c", Self.script], input: .open)
        defer { peer.stop() }
        let greeting = try peer.readLine(timeout: 30)
        try #require(greeting == "ready 0.9", "python-spake2 said: \(greeting) \(peer.stderr)")

        var random = SystemRandom()
        var agreed = 0
        var disagreed = 0
        for round in 0..<50 {
            // Random byte passwords (not only text), some empty identities, one in five wrong.
            let password = random.bytes(count: 1 + Int(random.bytes(count: 1)[0] % 40))
            let identity = round % 4 == 0 ? [] : Array("lothar.com/wormhole/test-\(round)".utf8)
            let wrongPassword = round % 5 == 4
            let peerPassword = wrongPassword ? password + [0x21] : password

            try peer.send(line: "start \(Self.hexOrDash(peerPassword)) \(Self.hexOrDash(identity))")
            let theirMessage = [UInt8](hex: try peer.readLine())
            let ours = WormholeSPAKE2(password: password, identity: identity).start(using: &random)
            try peer.send(line: "finish \(ours.message.hex)")
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
        try peer.send(line: "start \(Self.hexOrDash(Array("pw".utf8))) -")
        let reflected = try peer.readLine()
        try peer.send(line: "finish \(reflected)")
        #expect(try peer.readLine().hasPrefix("error"))
        peer.closeInput()
        #expect(peer.finish(timeout: 10).status == 0)
    }

    /// RFC 9382 edwards25519 has no published vectors, so an independent Python version (PyNaCl
    /// for the group operations, hashlib/hmac for the transcript and key schedule, M and N
    /// re-derived with Appendix A) recomputes each exchange: `rfc <w> <x> <y> <A> <B> <AAD>`,
    /// scalars big-endian.
    static let rfcScript = """
        import sys, hashlib, hmac
        from nacl import bindings as na
        def sha(b): return hashlib.sha256(b).digest()
        def gen(seed):
            h = seed.encode()
            while True:
                h = sha(h)
                if na.crypto_core_ed25519_is_valid_point(h): return h
        M = gen("edwards25519 point generation seed (M)")
        N = gen("edwards25519 point generation seed (N)")
        def hkdf(ikm, salt, info, n):
            prk = hmac.new(salt or bytes(32), ikm, hashlib.sha256).digest()
            out, t, i = b"", b"", 1
            while len(out) < n:
                t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
                out, i = out + t, i + 1
            return out[:n]
        def lp(b): return len(b).to_bytes(8, "little") + b
        def unhex(s): return b"" if s == "-" else bytes.fromhex(s)
        print("ready", flush=True)
        for line in sys.stdin:
            w, x, y, A, B, aad = [unhex(p) for p in line.split()[1:]]
            wl, xl, yl = w[::-1], x[::-1], y[::-1]
            eight = (8).to_bytes(32, "little")
            pA = na.crypto_core_ed25519_add(na.crypto_scalarmult_ed25519_base_noclamp(xl), na.crypto_scalarmult_ed25519_noclamp(wl, M))
            pB = na.crypto_core_ed25519_add(na.crypto_scalarmult_ed25519_base_noclamp(yl), na.crypto_scalarmult_ed25519_noclamp(wl, N))
            KA = na.crypto_scalarmult_ed25519_noclamp(na.crypto_core_ed25519_scalar_mul(xl, eight), na.crypto_core_ed25519_sub(pB, na.crypto_scalarmult_ed25519_noclamp(wl, N)))
            KB = na.crypto_scalarmult_ed25519_noclamp(na.crypto_core_ed25519_scalar_mul(yl, eight), na.crypto_core_ed25519_sub(pA, na.crypto_scalarmult_ed25519_noclamp(wl, M)))
            assert KA == KB
            TT = lp(A) + lp(B) + lp(pA) + lp(pB) + lp(KA) + lp(w)
            h = sha(TT)
            kc = hkdf(h[16:], b"", b"ConfirmationKeys" + aad, 32)
            cA = hmac.new(kc[:16], TT, hashlib.sha256).digest()
            cB = hmac.new(kc[16:], TT, hashlib.sha256).digest()
            print(pA.hex(), pB.hex(), KA.hex(), TT.hex(), h[:16].hex(), cA.hex(), cB.hex(), flush=True)
        """

    @Test func rfcEdwards25519AgainstIndependentPython() throws {
        let python = TestSupport.python
        try #require(
            FileManager.default.isExecutableFile(atPath: python),
            "No Python at \(python): run scripts/test (or set ELEVEN_TEST_PYTHON), or ELEVEN_SKIP_INTEROP=1")
        let peer = try ChildProcess(python, ["-c", Self.rfcScript], input: .open)
        defer { peer.stop() }
        try #require(try peer.readLine(timeout: 30) == "ready", "\(peer.stderr)")
        var random = SeededRandom(seed: 9382)
        func scalar() -> [UInt8] {
            BigEndianMath.reduce(random.bytes(count: 64), modulo: Ed25519TestPoints.order)
        }
        for round in 0..<12 {
            let (w, x, y) = (scalar(), scalar(), scalar())
            let idA = round % 3 == 0 ? [] : Array("joiner-\(round)".utf8)
            let idB = round % 4 == 0 ? [] : Array("attendant".utf8)
            let aad = round % 2 == 0 ? [] : random.bytes(count: round)
            try peer.send(
                line: "rfc " + [w, x, y, idA, idB, aad].map(Self.hexOrDash).joined(separator: " "))
            let expected = try peer.readLine().split(separator: " ").map(String.init)
            try #require(expected.count == 7, "python: \(expected) \(peer.stderr)")

            let password = try SPAKE2.Password(scalar: w, suite: .edwards25519)
            var randomA = ReplayRandom(scalarBigEndian: x)
            var randomB = ReplayRandom(scalarBigEndian: y)
            let a = SPAKE2(role: .a, password: password, identityA: idA, identityB: idB, additionalData: aad)
                .start(using: &randomA)
            let b = SPAKE2(role: .b, password: password, identityA: idA, identityB: idB, additionalData: aad)
                .start(using: &randomB)
            #expect(a.message.hex == expected[0])
            #expect(b.message.hex == expected[1])
            let messageA = a.message
            let confirmingA = try a.receive(b.message)
            let confirmingB = try b.receive(messageA)
            #expect(confirmingA.schedule.sharedElement.hex == expected[2])
            #expect(confirmingB.schedule.transcript.hex == expected[3])
            #expect(confirmingA.confirmation.hex == expected[5])
            #expect(confirmingB.confirmation.hex == expected[6])
            let confirmationA = confirmingA.confirmation
            let key = try confirmingA.finish(peerConfirmation: confirmingB.confirmation)
            #expect(key.hex == expected[4])
            #expect(try confirmingB.finish(peerConfirmation: confirmationA) == key)
        }
        peer.closeInput()
        #expect(peer.finish(timeout: 10).status == 0)
    }
}
