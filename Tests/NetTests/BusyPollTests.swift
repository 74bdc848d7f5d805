import Foundation
import Net
import TestSupport
import Testing

@Suite("Busy polling")
struct BusyPollTests {
    /// CPU seconds the loop's thread has used so far (read on the loop).
    private func loopCPU(_ loop: EventLoop) -> Double {
        let value = Mutex_Box<Double>(-1)
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            var ts = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
            value.set(Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9)
            done.signal()
        }
        _ = done.wait(timeout: .now() + 5)
        return value.get()
    }

    @Test func pollingLoopRunsTasksAndTimersThenSleepsWhenIdle() throws {
        // Always poll (not only with free cores: the test machine is busy) with a long budget.
        let loop = EventLoop(
            name: "poll-loop", busyPoll: BusyPoll(budget: .milliseconds(5), onlyWithFreeCores: false))
        defer {
            loop.stop()
            loop.waitUntilStopped()
        }
        let count = Mutex_Box(0)
        // Tasks handed over from another thread while the loop polls are all run, in order.
        for i in 0..<500 {
            loop.execute {
                if count.get() == i { count.set(i + 1) }
            }
            if i % 50 == 0 { usleep(200) }
        }
        #expect(eventually { count.get() == 500 })
        let fired = DispatchSemaphore(value: 0)
        loop.schedule(after: .milliseconds(30)) { fired.signal() }
        #expect(fired.wait(timeout: .now() + 5) == .success)
        // Idle: the loop blocks, it does not spin.
        let before = loopCPU(loop)
        usleep(600_000)
        let used = loopCPU(loop) - before
        #expect(before >= 0)
        #expect(used < 0.06, "an idle polling loop used \(used) s of CPU in 0.6 s")
    }

    @Test func echoThroughPollingServerAndClient() throws {
        let server = try makeEchoServer { config in
            config.busyPoll = BusyPoll(budget: .microseconds(200), onlyWithFreeCores: false)
        }
        defer { server.shutdown(timeout: .seconds(2)) }
        let loop = EventLoop(
            name: "poll-client", busyPoll: BusyPoll(budget: .microseconds(200), onlyWithFreeCores: false))
        defer {
            loop.stop()
            loop.waitUntilStopped()
        }
        let connected = DispatchSemaphore(value: 0)
        let socketBox = Mutex_Box<WebSocket?>(nil)
        WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/echo", loop: loop) { result in
            socketBox.set(try? result.get())
            connected.signal()
        }
        #expect(connected.wait(timeout: .now() + 10) == .success)
        let socket = try #require(socketBox.get())
        for i in 0..<200 {
            socket.send(text: "message \(i)")
            #expect(try socket.receive(timeout: .seconds(5)) == .text("message \(i)"))
        }
        socket.close()
    }

    @Test func defaults() {
        #expect(BusyPoll.off.budget == .zero)
        #expect(BusyPoll.serverDefault.budget == .microseconds(50))
        #expect(BusyPoll.serverDefault.onlyWithFreeCores)
        #expect(ServerConfiguration().busyPoll == .serverDefault)
        #expect(EventLoop(name: "default-loop").busyPoll == .off)
    }
}

@Suite("Busy polling gate")
struct BusyPollGateTests {
    @Test func parsesTheRunnableCount() {
        #expect(BusyPoll.runnableThreads(loadavg: "0.30 1.02 1.82 3/150 12345\n") == 3)
        #expect(BusyPoll.runnableThreads(loadavg: "18.29 16.27 12.49 17/402 99") == 17)
    }

    @Test func rejectsMalformedText() {
        for bad in [
            "", "0.30 1.02 1.82", "0.30 1.02 1.82 /150 1", "0.30 1.02 1.82 x/150 1", "0.30 1.02 1.82 3 150",
            "0.30 1.02 1.82 9999999999/150 1",
        ] {
            #expect(BusyPoll.runnableThreads(loadavg: bad) == nil, "\(bad)")
        }
    }

    @Test func readsThisMachine() throws {
        let text = try String(contentsOfFile: "/proc/loadavg", encoding: .utf8)
        let running = try #require(BusyPoll.runnableThreads(loadavg: text))
        #expect(running >= 1)  // this thread is running
    }
}
