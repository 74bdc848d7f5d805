import Foundation

/// A real SMTP server on a free loopback port: `aiosmtpd` from the test virtualenv, storing every
/// message it accepts in a Maildir. Tests read the sign-in codes the home server sends from the
/// delivered messages. Stopped by its process id when dropped.
public final class MailServerUnderTest {
    public let port: UInt16
    public let directory: URL
    private let process: ChildProcess

    /// With `starttls`, offers STARTTLS with a fresh self-signed certificate for 127.0.0.1
    /// (``certificate``) and refuses mail without it.
    public init(starttls: Bool = false) throws {
        port = try TestSupport.freePort()
        directory = try TestSupport.temporaryDirectory()
        var tls: [String] = []
        if starttls {
            let key = directory.appendingPathComponent("key.pem").path
            let made = try TestSupport.run(
                "/usr/bin/openssl",
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days",
                    "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key,
                    "-out",
                    directory.appendingPathComponent("cert.pem").path,
                ], timeout: 60)
            guard made.status == 0 else {
                throw TestSupportError.server("openssl req failed: \(made.stderr)")
            }
            tls = ["--tlscert", directory.appendingPathComponent("cert.pem").path, "--tlskey", key]
        }
        process = try ChildProcess(
            TestSupport.python,
            ["-m", "aiosmtpd", "-n", "-l", "127.0.0.1:\(port)"] + tls + [
                "-c", "aiosmtpd.handlers.Mailbox", directory.appendingPathComponent("maildir").path,
            ], port: port)
    }

    /// The self-signed certificate of a STARTTLS server (PEM).
    public var certificate: String { directory.appendingPathComponent("cert.pem").path }

    /// `127.0.0.1:PORT`, for `eleven-server --smtp`.
    public var address: String { "127.0.0.1:\(port)" }

    /// Every delivered message, oldest first.
    public func messages() -> [String] {
        let new = directory.appendingPathComponent("maildir/new")
        let files =
            (try? FileManager.default.contentsOfDirectory(at: new, includingPropertiesForKeys: nil)) ?? []
        return files.compactMap { url -> (Date, String)? in
            guard let text = try? String(contentsOf: url, encoding: .utf8) else { return nil }
            let date =
                (try? url.resourceValues(forKeys: [.contentModificationDateKey]))?.contentModificationDate
                ?? .distantPast
            return (date, text)
        }.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Messages delivered to `address` (its envelope recipient, as the mail server saw it).
    public func messages(to address: String) -> [String] {
        messages().filter { $0.lowercased().contains("x-rcptto: \(address.lowercased())") }
    }

    /// The code in the `count`-th message to `address` (1 for the first), waiting for it.
    public func code(to address: String, number count: Int = 1, timeout: Double = 60) throws -> String {
        var found: String?
        _ = TestSupport.eventually(timeout: timeout) {
            let delivered = messages(to: address)
            guard delivered.count >= count else { return false }
            found = Self.code(in: delivered[count - 1])
            return found != nil
        }
        guard let found else {
            throw TestSupportError.server(
                "no message \(count) to \(address) within \(timeout) s: \(messages())")
        }
        return found
    }

    /// The six digits after "code is " in a message.
    public static func code(in message: String) -> String? {
        guard let range = message.range(of: "code is ") else { return nil }
        let digits = message[range.upperBound...].prefix(6)
        return digits.count == 6 && digits.allSatisfy(\.isNumber) ? String(digits) : nil
    }

    deinit {
        process.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
