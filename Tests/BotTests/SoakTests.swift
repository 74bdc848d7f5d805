import Foundation
import TestSupport
import Testing

/// The short CI version of `eleven-bench soak`: relay, server and bot under the mixed load for
/// 20 seconds; no error beyond the injected ones and no clear growth of memory or descriptors.
@Suite struct SoakTests {
    @Test func shortSoakHasNoErrorAndNoGrowth() async throws {
        try await TestSupport.offPool {
            let result = try TestSupport.run(
                TestSupport.productPath("eleven-bench"), ["soak", "--seconds", "20", "--sample", "2"],
                timeout: 90)
            print(result.stdout)
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stdout.contains("errors beyond the injected ones: 0"))
            #expect(result.stdout.contains("growth: none"))
            // The load really ran: joins, wrong codes, messages and reconnects all happened.
            let totals = result.stdout.split(separator: "\n").first { $0.hasPrefix("totals: ") } ?? ""
            for kind in ["joins", "wrong_codes", "messages", "reconnects"] {
                #expect(totals.contains(kind + " "), "\(totals)")
            }
        }
    }
}
