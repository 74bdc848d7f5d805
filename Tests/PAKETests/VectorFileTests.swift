import Foundation
import TestSupport
import Testing

/// The vectors are embedded in the test target; when the shared originals are next to the
/// package (`../shared/vectors`), the copies must still match them byte for byte.
@Suite("Embedded vector files")
struct VectorFileTests {
    static let directory = TestSupport.packageRoot.deletingLastPathComponent()
        .appendingPathComponent("shared/vectors")

    @Test(
        .enabled(if: FileManager.default.fileExists(atPath: directory.path)),
        arguments: [
            ("rfc9382-p256.json", rfc9382P256VectorsJSON),
            ("spake2-symmetric.json", spake2SymmetricVectorsJSON),
        ])
    func copyMatchesSharedFile(_ name: String, _ embedded: String) throws {
        let original = try String(contentsOf: Self.directory.appendingPathComponent(name), encoding: .utf8)
        #expect(original.trimmingCharacters(in: .newlines) == embedded)
    }
}
