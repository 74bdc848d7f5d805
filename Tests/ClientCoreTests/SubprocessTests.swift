import Foundation
import Support
import Testing

/// `Subprocess`, the one way children are started (the demo's services; every child of a test
/// through `ChildProcess`), checked on real programs.
@Suite struct SubprocessTests {
    /// Runs `script` under /bin/sh with its stdout on a pipe; returns the termination and what it
    /// printed.
    private func run(
        _ script: String, directory: String? = nil, environment: [String: String]? = nil
    ) throws -> (Subprocess.Termination, String) {
        let out = try Subprocess.pipe()
        let child = try Subprocess(
            "/bin/sh", ["-c", script], environment: environment, directory: directory,
            stdout: .descriptor(out.write.fileDescriptor))
        try out.write.close()
        let printed = String(decoding: out.read.readDataToEndOfFile(), as: UTF8.self)
        return (child.wait(), printed)
    }

    /// A descriptor this process opened without close-on-exec (as other libraries and threads
    /// do) does not reach the child: it gets 0, 1 and 2 only. Foundation's `Process` closed only
    /// the descriptors it saw when it looked, so one opened meanwhile leaked.
    @Test func theChildGetsOnlyTheStandardDescriptors() throws {
        var leaky: [Int32] = [0, 0]
        #expect(pipe(&leaky) == 0)
        defer { for fd in leaky { close(fd) } }
        // `ls` opens the directory it lists, as 3: the shell's own descriptors are what is left.
        let (ended, printed) = try run("exec ls -1 /proc/self/fd")
        #expect(ended == Subprocess.Termination(status: 0, signalled: false))
        let listed = Set(printed.split(separator: "\n").compactMap { Int32($0) })
        #expect(listed.isSubset(of: [0, 1, 2, 3]), "inherited: \(listed.sorted())")
    }

    /// This process ignores SIGPIPE (`Subprocess` and every event loop see to it): the child must
    /// not inherit that, nor
    /// a blocked signal, and runs in a process group of its own (a Ctrl-C meant for the test
    /// runner does not stop it behind the test's back).
    @Test func theChildHasDefaultSignalsAndItsOwnProcessGroup() throws {
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGUSR1)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        let (ended, printed) = try run(
            "grep -E '^(SigIgn|SigBlk):' /proc/self/status; echo pid $$; cut -d' ' -f5 /proc/self/stat")
        #expect(ended.status == 0)
        let lines = printed.split(separator: "\n")
        func mask(_ name: String) throws -> UInt64 {
            let line = try #require(lines.first { $0.hasPrefix(name + ":") })
            return try #require(
                UInt64(line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces), radix: 16))
        }
        // Bit n-1 is signal n. Only the standard signals are looked at: glibc's posix_spawn leaves
        // its own two internal real-time signals (32, 33) ignored in every child it starts.
        #expect(try mask("SigIgn") & 0x7fff_ffff == 0, "\(printed)")
        #expect(try mask("SigBlk") & 0x7fff_ffff == 0, "\(printed)")
        // `cut` is a child of the shell, in the shell's group: the group's id is the shell's pid.
        let shell = try #require(lines.first { $0.hasPrefix("pid ") }).dropFirst(4)
        #expect(lines.last.map(String.init) == String(shell))
        #expect(String(shell) != String(getpgrp()))
    }

    @Test func exitStatusSignalDirectoryAndEnvironment() throws {
        let (exited, _) = try run("exit 3")
        #expect(exited == Subprocess.Termination(status: 3, signalled: false))

        let directory = FileManager.default.temporaryDirectory.path
        let (ended, printed) = try run(
            "pwd; echo \"$ELEVEN_SUBPROCESS_TEST\"", directory: directory,
            environment: ["ELEVEN_SUBPROCESS_TEST": "seen", "PATH": "/usr/bin:/bin"])
        #expect(ended.status == 0)
        let realDirectory = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
        #expect(printed == "\(realDirectory)\nseen\n")

        let sleeper = try Subprocess("/bin/sleep", ["30"])
        #expect(!sleeper.hasExited)
        sleeper.signal(SIGTERM)
        #expect(sleeper.wait() == Subprocess.Termination(status: SIGTERM, signalled: true))
        #expect(sleeper.hasExited)
        // Collected once: a later signal goes nowhere (the id may be another program's by now).
        sleeper.signal(SIGKILL)
        #expect(sleeper.wait() == Subprocess.Termination(status: SIGTERM, signalled: true))
    }

    /// Writing to the input of a child that has exited is an error, not the end of this process.
    @Test func writingToAnExitedChildIsAnError() throws {
        let input = try Subprocess.pipe()
        let child = try Subprocess("/bin/true", [], stdin: .descriptor(input.read.fileDescriptor))
        try input.read.close()
        #expect(child.wait().status == 0)
        // SIGPIPE is signal 13: bit 12 of this process's mask of ignored signals.
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let ignored = try #require(status.split(separator: "\n").first { $0.hasPrefix("SigIgn:") })
        let mask = try #require(UInt64(ignored.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16))
        #expect(mask & (1 << 12) != 0)
        // Another test's child being spawned at this moment holds a copy of the read end until
        // it execs (close-on-exec applies then), and a write meanwhile lands in the pipe: write
        // again until the last reader is gone. With SIGPIPE not ignored, the first failing write
        // would end this process instead of throwing.
        var failure: (any Error)?
        for _ in 0..<200 where failure == nil {
            do {
                try input.write.write(contentsOf: Data("late\n".utf8))
                Thread.sleep(forTimeInterval: 0.01)
            } catch {
                failure = error
            }
        }
        #expect(failure != nil, "every write to the exited child's pipe succeeded")
    }

    @Test func aProgramThatCannotStartIsAnErrorThatSaysWhy() throws {
        let missing = "/nonexistent/eleven-no-such-program"
        let error = try #require(throws: SubprocessError.self) { try Subprocess(missing, []) }
        #expect(error.errno == ENOENT)
        #expect(error.description.contains(missing))
        #expect(throws: SubprocessError.self) {
            try Subprocess("/bin/true", [], directory: "/nonexistent/eleven-no-such-directory")
        }
    }

    /// Many children started at once from several threads, each with its pipes (the pattern that
    /// crashed Foundation's `run()` about once in five test runs): every one starts, says what it
    /// was asked, and is collected. Bounded: 4 threads × 40 children of `/bin/echo`.
    @Test func childrenStartedConcurrentlyKeepTheirOwnPipes() throws {
        let failures = Locked([String]())
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<40 {
                do {
                    let word = "child-\(thread)-\(index)"
                    let out = try Subprocess.pipe()
                    let child = try Subprocess(
                        "/bin/echo", [word], stdout: .descriptor(out.write.fileDescriptor))
                    try out.write.close()
                    let printed = String(decoding: out.read.readDataToEndOfFile(), as: UTF8.self)
                    let ended = child.wait()
                    if printed != word + "\n" || ended.status != 0 {
                        failures.withLock { $0.append("\(word): \(printed) \(ended)") }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
    }
}
