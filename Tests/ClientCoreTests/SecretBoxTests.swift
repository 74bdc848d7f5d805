import PAKE
import SpaceModel
import Testing

@testable import ClientCore

/// The one AEAD every at-rest format uses: opens only with the same key and context, and
/// refuses anything changed or cut short.
@Suite struct SecretBoxTests {
    @Test func opensOnlyWithTheSameKeyAndContext() {
        let key = SecretBytes.random(count: 32)
        let plain = Array("saved spaces".utf8)
        let box = SecretBox.seal(plain, key: key, ad: [1, 2])
        #expect(box.count == plain.count + SecretBox.overhead)
        #expect(SecretBox.open(box, key: key, ad: [1, 2]) == plain)
        #expect(SecretBox.open(box, key: key, ad: [1, 3]) == nil)
        #expect(SecretBox.open(box, key: SecretBytes.random(count: 32), ad: [1, 2]) == nil)
        for index in [0, SecretBox.nonceByteCount, box.count - 1] {
            var changed = box
            changed[index] ^= 1
            #expect(SecretBox.open(changed, key: key, ad: [1, 2]) == nil)
        }
        #expect(SecretBox.open(box.prefix(SecretBox.overhead - 1), key: key, ad: [1, 2]) == nil)
        #expect(SecretBox.open(box, key: SecretBytes([1, 2, 3]), ad: [1, 2]) == nil)
        // A fresh nonce every time.
        #expect(SecretBox.seal(plain, key: key, ad: []) != SecretBox.seal(plain, key: key, ad: []))
    }
}
