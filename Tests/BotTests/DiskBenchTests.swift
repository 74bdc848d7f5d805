import Foundation
import TestSupport
import Testing

/// `eleven-bench disk`: the disk's own sync latency, measured in $TMPDIR, leaving nothing there.
@Suite struct DiskBenchTests {
    @Test func measuresSyncsAndCleansUp() throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = directory.path
        let result = try TestSupport.run(
            TestSupport.productPath("eleven-bench"), ["disk", "--seconds", "1"], environment: environment,
            timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        let line = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
        // One sync every 20 ms for a second: a few dozen, fewer on a slow disk, never none.
        let count = Int(line.prefix { $0.isNumber }) ?? 0
        #expect(count >= 3 && count <= 60, "\(result.stdout)")
        #expect(line.contains(" syncs of 4 KiB, p50 ") && line.contains(" over 100 ms"), "\(line)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test func badOptionsAreAUsageError() throws {
        for arguments in [
            ["disk", "--seconds", "soon"], ["disk", "--seconds", "-1"], ["disk", "--frobnicate"],
        ] {
            let result = try TestSupport.run(TestSupport.productPath("eleven-bench"), arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr.contains("usage: eleven-bench disk"), "\(arguments)")
        }
    }
}
