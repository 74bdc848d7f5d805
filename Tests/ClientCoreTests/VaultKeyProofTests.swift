import PAKE
import SpaceModel
import Testing

@testable import ClientCore

/// The rule a device applies to every vault key and copy the home server serves
/// (`HomeSync.authenticate`), without sockets: what it accepts, what it calls a rollback, what it
/// calls an unauthenticated key.
@Suite struct VaultKeyProofTests {
    private static func document(proving key: VaultKey?, account: AccountKey, sequence: UInt64?)
        -> VaultDocument
    {
        var document = VaultDocument()
        document.accountKey = account.base64URL
        document.keyProof = key.map { Base64URL.encode($0.proof(accountKey: account).unredactedBytes()) }
        document.sequence = sequence
        return document
    }

    private static func code(_ body: () throws(HomeError) -> VaultPin) -> String? {
        do {
            _ = try body()
            return nil
        } catch {
            return error.code.rawValue
        }
    }

    @Test func theProofBindsAccountGenerationAndKey() {
        let account = AccountKey.random()
        let key = VaultKey.random(generation: 3)
        let proof = key.proof(accountKey: account)
        #expect(proof == key.proof(accountKey: account))
        #expect(proof != key.proof(accountKey: .random()))
        #expect(proof != VaultKey.random(generation: 3).proof(accountKey: account))
        let sameBytesNextGeneration = try! VaultKey(base64URL: key.base64URL, generation: 4)
        #expect(proof != sameBytesNextGeneration.proof(accountKey: account))
        #expect(!"\(proof)".contains(Base64URL.encode(proof.unredactedBytes())))
    }

    @Test func aProvenKeyIsAcceptedAndPinned() throws {
        let account = AccountKey.random()
        let key = VaultKey.random(generation: 2)
        let pin = try HomeSync.authenticate(
            key, Self.document(proving: key, account: account, sequence: 7), accountKey: account, pin: nil)
        #expect(pin.generation == 2)
        #expect(pin.sequence == 7)
        // A rotation a device made (next generation, proven) moves the pin up.
        let next = VaultKey.random(generation: 3)
        let moved = try HomeSync.authenticate(
            next, Self.document(proving: next, account: account, sequence: 8), accountKey: account, pin: pin)
        #expect(moved.generation == 3)
    }

    @Test func unprovenChangedAndForeignKeysAreRefused() throws {
        let account = AccountKey.random()
        let key = VaultKey.random(generation: 2)
        let pin = try HomeSync.authenticate(
            key, Self.document(proving: key, account: account, sequence: 1), accountKey: account, pin: nil)
        let server = VaultKey.random(generation: 2)
        // No proof and no account key (the server cannot write one).
        #expect(
            Self.code { () throws(HomeError) in
                try HomeSync.authenticate(server, VaultDocument(), accountKey: account, pin: nil)
            } == "vault_key_unauthenticated")
        // A proof copied from the genuine vault does not prove another key.
        var copied = Self.document(proving: key, account: account, sequence: 1)
        copied.accountKey = nil
        #expect(
            Self.code { () throws(HomeError) in
                try HomeSync.authenticate(server, copied, accountKey: account, pin: pin)
            } == "vault_key_unauthenticated")
        // Another account's proven key.
        let other = AccountKey.random()
        #expect(
            Self.code { () throws(HomeError) in
                try HomeSync.authenticate(
                    server, Self.document(proving: server, account: other, sequence: 5), accountKey: account,
                    pin: pin)
            } == "vault_key_unauthenticated")
        // A higher generation without a proof.
        let bumped = VaultKey.random(generation: 9)
        #expect(
            Self.code { () throws(HomeError) in
                try HomeSync.authenticate(
                    bumped, Self.document(proving: nil, account: account, sequence: 5), accountKey: account,
                    pin: pin)
            } == "vault_key_unauthenticated")
    }

    @Test func olderGenerationsAndSequencesAreRollbacks() throws {
        let account = AccountKey.random()
        let old = VaultKey.random(generation: 1)
        let current = VaultKey.random(generation: 2)
        let pin = try HomeSync.authenticate(
            current, Self.document(proving: current, account: account, sequence: 4), accountKey: account,
            pin: nil)
        #expect(
            Self.code { () throws(HomeError) in
                try HomeSync.authenticate(
                    old, Self.document(proving: old, account: account, sequence: 9), accountKey: account,
                    pin: pin)
            } == "vault_rolled_back")
        #expect(
            Self.code { () throws(HomeError) in
                try HomeSync.authenticate(
                    current, Self.document(proving: current, account: account, sequence: 3),
                    accountKey: account,
                    pin: pin)
            } == "vault_rolled_back")
    }

    @Test func anUnprovenVaultIsAcceptedOnlyOnceAndOnlyWithTheAccountKey() throws {
        let account = AccountKey.random()
        let key = VaultKey.random(generation: 1)
        let legacy = Self.document(proving: nil, account: account, sequence: nil)
        // Nothing pinned: accepted because it names the account key.
        let pin = try HomeSync.authenticate(key, legacy, accountKey: account, pin: nil)
        #expect(pin.sequence == 0)
        // Pinned to this very key (a newly linked device): accepted.
        _ = try HomeSync.authenticate(key, legacy, accountKey: account, pin: pin)
        // Another key at the same generation, even naming the account key: refused.
        #expect(
            Self.code { () throws(HomeError) in
                try HomeSync.authenticate(
                    VaultKey.random(generation: 1), legacy, accountKey: account, pin: pin)
            } == "vault_key_unauthenticated")
        // Once a proven copy was seen, the unproven one is a rollback.
        let proven = VaultPin(generation: pin.generation, keyProof: pin.keyProof, sequence: 1)
        #expect(
            Self.code { () throws(HomeError) in
                try HomeSync.authenticate(key, legacy, accountKey: account, pin: proven)
            } == "vault_rolled_back")
    }
}
