import Foundation

extension TestSupport {
    /// A throw-away CA and a leaf certificate for 127.0.0.1 signed by it, made with the `openssl`
    /// CLI in `directory`: `NAME-ca.pem` (the CA to pin), `NAME.pem` and `NAME-key.pem` (the
    /// server's chain and key).
    public static func makeCertificateChain(in directory: URL, name: String) throws {
        func path(_ file: String) -> String { directory.appendingPathComponent(file).path }
        func openssl(_ args: [String]) throws {
            let result = try run("/usr/bin/openssl", args, timeout: 30)
            guard result.status == 0 else {
                throw TestSupportError.server("openssl \(args.first ?? "") failed: \(result.stderr)")
            }
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try openssl(
            ["req", "-x509"] + ec + [
                "-keyout", path("\(name)-ca-key.pem"), "-out", path("\(name)-ca.pem"), "-days", "2",
                "-subj", "/CN=\(name) test CA",
            ])
        try openssl(
            ["req"] + ec + [
                "-keyout", path("\(name)-key.pem"), "-out", path("\(name).csr"), "-subj", "/CN=\(name)",
            ])
        try "subjectAltName=IP:127.0.0.1\n".write(
            toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
        try openssl([
            "x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(name)-ca.pem"), "-CAkey",
            path("\(name)-ca-key.pem"), "-CAcreateserial", "-out", path("\(name).pem"), "-days", "2",
            "-extfile", path("\(name).ext"),
        ])
    }
}
