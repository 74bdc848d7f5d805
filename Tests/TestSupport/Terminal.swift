import Foundation

extension TestSupport {
    /// Runs a program on a pseudo-terminal, as a person at a terminal would: the test virtualenv's
    /// Python forks it on a new pty (`pty.fork`), copies this side's stdin to the terminal and
    /// what the program writes (stdout and stderr together, as a terminal shows them) to stdout,
    /// forwards SIGTERM and SIGINT to it, and exits with its status (128 + signal when killed).
    /// Signals are unblocked first: a test process's threads block some, and its children inherit
    /// the mask, so a forwarded SIGTERM would otherwise stay pending.
    /// For prompts that a program shows only on a terminal. Returns the executable and arguments
    /// to hand to ``ChildProcess``.
    public static func onTerminal(_ executable: String, _ arguments: [String]) -> (String, [String]) {
        (python, ["-c", terminalScript, executable] + arguments)
    }

    private static let terminalScript = """
        import os, pty, select, signal, sys
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(sys.argv[1], sys.argv[1:])
        def forward(number, frame):
            os.kill(pid, number)
        signal.signal(signal.SIGTERM, forward)
        signal.signal(signal.SIGINT, forward)
        inputs = [fd, 0]
        while True:
            try:
                ready, _, _ = select.select(inputs, [], [])
            except InterruptedError:
                continue
            if fd in ready:
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    data = b""
                if not data:
                    break
                os.write(1, data)
            if 0 in ready:
                data = os.read(0, 4096)
                if data:
                    os.write(fd, data)
                else:
                    inputs.remove(0)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        sys.exit(128 - code if code < 0 else code)
        """
}
