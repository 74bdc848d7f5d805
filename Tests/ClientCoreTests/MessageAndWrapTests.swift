import Foundation
import Testing

@testable import ClientCore
@testable import SpaceModel

@Suite struct MessageTests {
    @Test func encryptsAndDecrypts() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let key = ThreadKey.random()
        let thread = ThreadID.random()
        let message = sam.encrypt(
            Array("hello paul".utf8), with: key, in: fixture.space, thread: thread, as: samRecord.id)
        #expect(try message.decrypt(with: key, verifyingAgainst: fixture.roster) == Array("hello paul".utf8))
        #expect(try message.verifyAuthor(in: fixture.roster) == samRecord)
        // JSON round trip keeps everything.
        let decoded = try JSONDecoder().decode(EncryptedMessage.self, from: JSONEncoder().encode(message))
        #expect(decoded == message)
        // Empty messages work too.
        let empty = sam.encrypt([UInt8](), with: key, in: fixture.space, thread: thread, as: samRecord.id)
        #expect(try empty.decrypt(with: key, verifyingAgainst: fixture.roster) == [])
    }

    @Test func rejectsForgeryAndTampering() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let key = ThreadKey.random()
        let thread = ThreadID.random()
        let m = sam.encrypt(
            Array("meet at 6".utf8), with: key, in: fixture.space, thread: thread, as: samRecord.id)

        // Wrong key.
        #expect(
            errorCode { _ = try m.decrypt(with: .random(), verifyingAgainst: fixture.roster) }
                == .decryptionFailed)

        // Flipped signature bit.
        var signature = m.signature.bytes
        signature[5] ^= 1
        let forged = try EncryptedMessage(
            space: m.space, thread: m.thread, id: m.id, author: m.author, nonce: m.nonce,
            ciphertext: m.ciphertext,
            signature: Signature(bytes: signature))
        #expect(
            errorCode { _ = try forged.decrypt(with: key, verifyingAgainst: fixture.roster) } == .badSignature
        )

        // Claiming the owner as author without the owner's key.
        let impostor = try EncryptedMessage(
            space: m.space, thread: m.thread, id: m.id, author: fixture.ownerID, nonce: m.nonce,
            ciphertext: m.ciphertext, signature: m.signature)
        #expect(
            errorCode { _ = try impostor.decrypt(with: key, verifyingAgainst: fixture.roster) }
                == .badSignature)

        // Tampered associated data, validly re-signed by the author: the AEAD tag catches it.
        for (otherThread, otherID) in [(ThreadID.random(), m.id), (thread, MessageID.random())] {
            let signed = EncryptedMessage.signedBytes(
                space: m.space, thread: otherThread, id: otherID, author: m.author, nonce: m.nonce,
                ciphertext: m.ciphertext)
            let moved = try EncryptedMessage(
                space: m.space, thread: otherThread, id: otherID, author: m.author, nonce: m.nonce,
                ciphertext: m.ciphertext, signature: resign(sam, signed))
            #expect(
                errorCode { _ = try moved.decrypt(with: key, verifyingAgainst: fixture.roster) }
                    == .decryptionFailed)
        }

        // Tampered ciphertext, re-signed.
        var ciphertext = m.ciphertext
        ciphertext[0] ^= 0x80
        let tampered = try EncryptedMessage(
            space: m.space, thread: m.thread, id: m.id, author: m.author, nonce: m.nonce,
            ciphertext: ciphertext,
            signature: resign(
                sam,
                EncryptedMessage.signedBytes(
                    space: m.space, thread: m.thread, id: m.id, author: m.author, nonce: m.nonce,
                    ciphertext: ciphertext)))
        #expect(
            errorCode { _ = try tampered.decrypt(with: key, verifyingAgainst: fixture.roster) }
                == .decryptionFailed)

        // Author who was never a member; message from another space.
        let stranger = DeviceIdentity.generate()
        let fromStranger = stranger.encrypt([1], with: key, in: fixture.space, thread: thread, as: .random())
        #expect(
            errorCode { _ = try fromStranger.decrypt(with: key, verifyingAgainst: fixture.roster) }
                == .signerNotMember)
        let elsewhere = sam.encrypt([1], with: key, in: .random(), thread: thread, as: samRecord.id)
        #expect(
            errorCode { _ = try elsewhere.decrypt(with: key, verifyingAgainst: fixture.roster) }
                == .wrongContext)
    }

    @Test func formerMembersMessagesStillVerify() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let key = ThreadKey.random()
        let m = sam.encrypt([7], with: key, in: fixture.space, thread: .random(), as: samRecord.id)
        try fixture.remove(samRecord.id)
        #expect(try m.decrypt(with: key, verifyingAgainst: fixture.roster) == [7])
    }

    @Test func decodingRejectsBadLengths() {
        let json =
            #"{"space":"AAAAAAAAAAAAAAAAAAAAAA","thread":"AAAAAAAAAAAAAAAAAAAAAA","id":"AAAAAAAAAAAAAAAAAAAAAA","author":"AAAAAAAAAAAAAAAAAAAAAA","nonce":"AAAA","ciphertext":"AAAA","signature":"AAAA"}"#
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(EncryptedMessage.self, from: Data(json.utf8))
        }
    }
}

@Suite struct KeyWrapTests {
    @Test func wrapsAndOpens() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let key = ThreadKey.random()
        let thread = ThreadID.random()
        let wrap = fixture.owner.wrap(key, for: samRecord, in: fixture.space, thread: thread)
        #expect(wrap.sealed.count == KeyWrap.sealedByteCount)
        #expect(try wrap.open(with: sam, verifyingAgainst: fixture.roster) == key)
        #expect(try wrap.verify(against: fixture.roster) == fixture.ownerRecord)
        let decoded = try JSONDecoder().decode(KeyWrap.self, from: JSONEncoder().encode(wrap))
        #expect(decoded == wrap)
        // A member can re-wrap what they received to another member.
        let (lee, leeRecord) = try fixture.addMember(name: "Lee")
        let rewrap = sam.wrap(key, for: leeRecord, in: fixture.space, thread: thread)
        #expect(try rewrap.open(with: lee, verifyingAgainst: fixture.roster) == key)
    }

    @Test func wrongRecipientCannotOpen() throws {
        var fixture = try SpaceFixture()
        let (_, samRecord) = try fixture.addMember(name: "Sam")
        let (lee, _) = try fixture.addMember(name: "Lee")
        let wrap = fixture.owner.wrap(.random(), for: samRecord, in: fixture.space, thread: .random())
        #expect(
            errorCode { _ = try wrap.open(with: lee, verifyingAgainst: fixture.roster) } == .wrongRecipient)
        #expect(
            errorCode { _ = try wrap.open(with: fixture.owner, verifyingAgainst: fixture.roster) }
                == .wrongRecipient)
    }

    @Test func forgedSignatureIsRejected() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let w = fixture.owner.wrap(.random(), for: samRecord, in: fixture.space, thread: .random())
        var signature = w.signature.bytes
        signature[63] ^= 0x40
        let forged = try KeyWrap(
            space: w.space, thread: w.thread, recipient: w.recipient, signer: w.signer, sealed: w.sealed,
            signature: Signature(bytes: signature))
        #expect(
            errorCode { _ = try forged.open(with: sam, verifyingAgainst: fixture.roster) } == .badSignature)
        // Moving a valid wrap to another thread breaks its signature.
        let moved = try KeyWrap(
            space: w.space, thread: .random(), recipient: w.recipient, signer: w.signer, sealed: w.sealed,
            signature: w.signature)
        #expect(
            errorCode { _ = try moved.open(with: sam, verifyingAgainst: fixture.roster) } == .badSignature)
    }

    @Test func signerMustBeCurrentMember() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let (eve, eveRecord) = try fixture.addMember(name: "Eve")
        let stranger = DeviceIdentity.generate()
        let fromStranger = stranger.wrap(.random(), for: samRecord, in: fixture.space, thread: .random())
        #expect(
            errorCode { _ = try fromStranger.open(with: sam, verifyingAgainst: fixture.roster) }
                == .signerNotMember)
        let fromEve = eve.wrap(.random(), for: samRecord, in: fixture.space, thread: .random())
        #expect(try fromEve.open(with: sam, verifyingAgainst: fixture.roster).secretBytes.count == 32)
        try fixture.remove(eveRecord.id)
        #expect(
            errorCode { _ = try fromEve.open(with: sam, verifyingAgainst: fixture.roster) }
                == .signerNotMember)
    }

    @Test func removedRecipientAndOtherSpaceAreRejected() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let elsewhere = fixture.owner.wrap(.random(), for: samRecord, in: .random(), thread: .random())
        #expect(
            errorCode { _ = try elsewhere.open(with: sam, verifyingAgainst: fixture.roster) } == .wrongContext
        )
        let wrap = fixture.owner.wrap(.random(), for: samRecord, in: fixture.space, thread: .random())
        try fixture.remove(samRecord.id)
        #expect(
            errorCode { _ = try wrap.open(with: sam, verifyingAgainst: fixture.roster) } == .wrongRecipient)
    }

    @Test func tamperedSealedBytesFailToOpen() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let w = fixture.owner.wrap(.random(), for: samRecord, in: fixture.space, thread: .random())
        var sealed = w.sealed
        sealed[40] ^= 1
        let signed = KeyWrap.signedBytes(
            space: w.space, thread: w.thread, recipient: w.recipient, sealed: sealed)
        let tampered = try KeyWrap(
            space: w.space, thread: w.thread, recipient: w.recipient, signer: w.signer, sealed: sealed,
            signature: resign(fixture.owner, signed))
        #expect(
            errorCode { _ = try tampered.open(with: sam, verifyingAgainst: fixture.roster) }
                == .decryptionFailed)
        #expect(
            errorCode {
                _ = try KeyWrap(
                    space: w.space, thread: w.thread, recipient: w.recipient, signer: w.signer,
                    sealed: [1, 2],
                    signature: w.signature)
            } == .invalidLength)
    }
}

@Suite struct InboxNoteTests {
    @Test func sealsToRecipientOnly() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let (lee, _) = try fixture.addMember(name: "Lee")
        let note = try fixture.owner.note(
            Array("invite record".utf8), to: samRecord, in: fixture.space, from: fixture.ownerID)
        #expect(try note.open(with: sam, verifyingAgainst: fixture.roster) == Array("invite record".utf8))
        #expect(
            errorCode { _ = try note.open(with: lee, verifyingAgainst: fixture.roster) } == .wrongRecipient)
        let decoded = try JSONDecoder().decode(InboxNote.self, from: JSONEncoder().encode(note))
        #expect(decoded == note)
        // Claiming another sender fails the signature.
        let spoofed = try InboxNote(
            space: note.space, sender: samRecord.id, recipient: note.recipient, sealed: note.sealed,
            signature: note.signature)
        #expect(
            errorCode { _ = try spoofed.open(with: sam, verifyingAgainst: fixture.roster) } == .badSignature)
    }
}
