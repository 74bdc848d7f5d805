import Foundation
import Net
import TestSupport
import Testing

/// Interop with an independent implementation: the Python `websockets` library.
/// Fails (does not skip) when the interpreter is missing, unless ELEVEN_SKIP_INTEROP=1.
@Suite("Interop with Python websockets", .enabled(if: !TestSupport.interopSkipped))
struct InteropTests {
    static func requirePython() throws {
        guard FileManager.default.isExecutableFile(atPath: TestSupport.python) else {
            throw NetError(.invalidState, "Python interop interpreter missing at \(TestSupport.python)")
        }
    }

    @Test func pythonClientAgainstOurServer() throws {
        try Self.requirePython()
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let script = """
            import asyncio, sys, websockets
            from websockets.asyncio.client import connect
            async def main(port):
                async with connect(f"ws://127.0.0.1:{port}/echo", max_size=None) as ws:
                    for i in range(20):
                        await ws.send(f"héllo {i}")
                        assert await ws.recv() == f"héllo {i}"
                    blob = bytes(range(256)) * 800
                    await ws.send(blob)
                    assert await ws.recv() == blob
                    await ws.send(["frag", "mented ", "✓"])
                    assert await ws.recv() == "fragmented ✓"
                    pong = await ws.ping(b"p")
                    await asyncio.wait_for(pong, 5)
                    await ws.close(code=1000, reason="done")
                    assert ws.close_code == 1000, ws.close_code
                # Protocol violation caught by our server: a frame with RSV1 set.
                async with connect(f"ws://127.0.0.1:{port}/echo") as ws:
                    ws.transport.write(bytes([0xC1, 0x81, 1, 2, 3, 4, 0x61 ^ 1]))
                    try:
                        await asyncio.wait_for(ws.recv(), 5)
                    except websockets.ConnectionClosed as e:
                        assert e.rcvd is not None and e.rcvd.code == 1002, e
                print("OK")
            asyncio.run(main(int(sys.argv[1])))
            """
        let result = try TestSupport.run(
            TestSupport.python, ["-c", script, String(server.port)], timeout: 30)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("OK"))
    }

    @Test func ourClientAgainstPythonServer() throws {
        try Self.requirePython()
        let port = try TestSupport.freePort()
        let script = """
            import asyncio, sys
            from websockets.asyncio.server import serve
            async def handler(ws):
                async for message in ws:
                    if message == "bye":
                        await ws.close(code=4001, reason="asked to")
                        return
                    await ws.send(message)
            async def main(port):
                async with serve(handler, "127.0.0.1", port, max_size=2**22):
                    print("READY", flush=True)
                    await asyncio.sleep(30)
            asyncio.run(main(int(sys.argv[1])))
            """
        let process = try ChildProcess(TestSupport.python, ["-c", script, String(port)])
        defer { process.stop(signal: SIGKILL) }
        #expect(try process.readLine(timeout: 30).contains("READY"))

        let ws = try WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/")
        for i in 0..<20 {
            ws.send(text: "hi \(i) ✓")
            #expect(try ws.receive(timeout: .seconds(5)) == .text("hi \(i) ✓"))
        }
        let blob = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        ws.send(binary: blob)
        #expect(try ws.receive(timeout: .seconds(5)) == .binary(blob))
        ws.send(text: "bye")
        let status = try ws.waitUntilClosed(timeout: .seconds(5))
        #expect(status.code.rawValue == 4001)
        #expect(status.reason == "asked to")

        // Client-initiated close handshake with Python.
        let second = try WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/")
        second.close(code: .normal, reason: "done")
        #expect(try second.waitUntilClosed(timeout: .seconds(5)).code == .normal)
    }
}
