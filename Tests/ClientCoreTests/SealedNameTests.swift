import Foundation
import TestSupport
import Testing

@testable import ClientCore
@testable import SpaceModel

/// Names sealed for members (``SealedName``) against a space server that rewrites what it
/// serves: the event signs the box, so a server can neither move a name to another member nor
/// slip a name in clear beside it, and a box opens only for the member it was sealed for.
@Suite struct SealedNameTests {
    let names = (thread: ThreadID.random(), key: ThreadKey.random())

    /// Owner (Paul) adds Ann and Bob, each name sealed under the names thread. The names have a
    /// space, which base64url never does: a key or a signature cannot spell one by chance, as they
    /// spelled "Bob" now and then.
    private func sealedChain() throws -> (SpaceFixture, ann: MemberRecord, bob: MemberRecord) {
        var fixture = try SpaceFixture()
        func record(_ name: String) -> MemberRecord {
            let id = MemberID.random()
            return MemberRecord(
                id: id, keys: DeviceIdentity.generate().publicKeys, name: name,
                sealedName: SealedName.seal(
                    name, key: names.key, space: fixture.space, thread: names.thread, member: id))
        }
        let ann = record("Ann Lee")
        try fixture.append(fixture.roster.nextEvent(.memberAdded(ann), signedBy: fixture.owner))
        let bob = record("Bob Ray")
        try fixture.append(fixture.roster.nextEvent(.memberAdded(bob), signedBy: fixture.owner))
        return (fixture, ann, bob)
    }

    /// The events as a server stores and serves them (JSON), decoded again.
    private func served(_ events: [MembershipEvent]) throws -> [MembershipEvent] {
        try JSONDecoder().decode([MembershipEvent].self, from: JSONEncoder().encode(events))
    }

    private func reveal(_ roster: inout Roster, space: SpaceID) {
        let names = names
        roster.revealNames { sealed, member in
            sealed.thread == names.thread ? sealed.open(key: names.key, space: space, member: member) : nil
        }
    }

    @Test func theServedFormHoldsNoNameAndAMemberOpensEach() throws {
        let (fixture, ann, bob) = try sealedChain()
        let json = String(decoding: try JSONEncoder().encode(fixture.events), as: UTF8.self)
        #expect(!json.contains("Ann Lee") && !json.contains("Bob Ray"), "\(json)")
        var roster = try Roster.verify(
            events: served(fixture.events), ownerKey: fixture.owner.publicKeys.signing)
        #expect(roster.members[ann.id]?.name == "")
        #expect(roster.hasSealedNames)
        reveal(&roster, space: fixture.space)
        #expect(roster.members[ann.id]?.name == "Ann Lee")
        #expect(roster.members[bob.id]?.name == "Bob Ray")
        #expect(!roster.hasSealedNames)
    }

    @Test func aServerThatSwapsTwoSealedNamesBreaksTheSignatures() throws {
        let (fixture, ann, bob) = try sealedChain()
        let events = try served(fixture.events)
        func swapped(_ event: MembershipEvent, to other: MemberRecord) -> MembershipEvent {
            guard case .memberAdded(let record) = event.change else { return event }
            let moved = MemberRecord(
                id: record.id, keys: record.keys, rights: record.rights, sealedName: other.sealedName)
            return MembershipEvent(
                space: event.space, sequence: event.sequence, previous: event.previous,
                change: .memberAdded(moved),
                signer: event.signer, invite: event.invite, signature: event.signature)
        }
        let forged = [events[0], swapped(events[1], to: bob), swapped(events[2], to: ann)]
        #expect(
            errorCode { _ = try Roster.verify(events: forged, ownerKey: fixture.owner.publicKeys.signing) }
                == .badSignature)
        // Even with a signature that checked, a box opens only for the member it was sealed for.
        #expect(bob.sealedName?.open(key: names.key, space: fixture.space, member: ann.id) == nil)
        #expect(ann.sealedName?.open(key: names.key, space: fixture.space, member: ann.id) == "Ann Lee")
        #expect(ann.sealedName?.open(key: .random(), space: fixture.space, member: ann.id) == nil)
        #expect(ann.sealedName?.open(key: names.key, space: .random(), member: ann.id) == nil)
    }

    @Test func aNameInClearBesideASealedOneIsIgnored() throws {
        let (fixture, ann, _) = try sealedChain()
        let json = String(decoding: try JSONEncoder().encode(fixture.events), as: UTF8.self)
        // The server writes "Mallory" where the name in clear would go: it is not signed.
        let tampered = json.replacingOccurrences(of: "\"name\":\"\"", with: "\"name\":\"Mallory\"")
        #expect(tampered != json)
        let events = try JSONDecoder().decode([MembershipEvent].self, from: Data(tampered.utf8))
        var roster = try Roster.verify(events: events, ownerKey: fixture.owner.publicKeys.signing)
        #expect(!roster.members.values.contains { $0.name == "Mallory" })
        reveal(&roster, space: fixture.space)
        #expect(roster.members[ann.id]?.name == "Ann Lee")
        // The fast reader of event lists reads the sealed form as the decoder does.
        let list = Array("{\"events\":\(tampered)}".utf8)
        let fast = try #require(EventListReader.events(list, keysVouched: false))
        #expect(fast == events)
    }

    @Test func aMemberRenamesThemselvesAndOnlyAnAdminRenamesOthers() throws {
        var fixture = try SpaceFixture()
        let (ann, annRecord) = try fixture.addMember(name: "Ann Lee")
        let (cat, _) = try fixture.addMember(name: "Cat", rights: .admin)
        func box(_ name: String, _ id: MemberID) -> SealedName {
            SealedName.seal(name, key: names.key, space: fixture.space, thread: names.thread, member: id)
        }
        // Ann may not rename the owner; Cat (admin) may rename Ann but not the owner.
        for signer in [ann, cat] {
            #expect(
                errorCode {
                    _ = try fixture.roster.applying(
                        fixture.roster.nextEvent(
                            .memberRenamed(fixture.ownerID, box("X", fixture.ownerID)), signedBy: signer))
                } == .notAuthorised)
        }
        try fixture.append(
            fixture.roster.nextEvent(.memberRenamed(annRecord.id, box("Annie", annRecord.id)), signedBy: ann))
        var roster = try Roster.verify(
            events: served(fixture.events), ownerKey: fixture.owner.publicKeys.signing)
        reveal(&roster, space: fixture.space)
        #expect(roster.members[annRecord.id]?.name == "Annie")
        try fixture.append(
            fixture.roster.nextEvent(.memberRenamed(annRecord.id, box("Ann B", annRecord.id)), signedBy: cat))
        roster = try Roster.verify(events: served(fixture.events), ownerKey: fixture.owner.publicKeys.signing)
        reveal(&roster, space: fixture.space)
        #expect(roster.members[annRecord.id]?.name == "Ann B")
    }

    @Test func boxesOfNoNameSizeAreRefused() {
        #expect(
            errorCode { _ = try SealedName(thread: .random(), box: [UInt8](repeating: 0, count: 39)) }
                == .invalidLength)
        #expect(
            errorCode {
                _ = try SealedName(
                    thread: .random(), box: [UInt8](repeating: 0, count: SealedName.maximumBoxByteCount + 1))
            } == .invalidLength)
    }
}

/// A space from before names were sealed, against a real `eleven-server`: its names in clear still
/// read, and the next name given is sealed under a names thread made for the occasion, which the
/// new member is wrapped like every shared thread.
@Suite struct OldSpaceNamesTests {
    @Test func aSpaceFromBeforeSealedNamesReadsBothFormsAndSealsTheNext() throws {
        let server = try InviteLinkEndToEndTests.RunningServer()
        let identity = DeviceIdentity.generate()
        // Made as before: the owner's name in clear, a first thread, no names thread.
        let anonymous = try SpaceClient(server: server.url)
        let owner = MemberID.random()
        let created = try anonymous.createSpace(
            name: "Family", genesis: identity.createSpace(.random(), as: owner, ownerName: "Paul"))
        let paul = try SpaceSession(
            saved: SavedSpace(
                space: created.space, name: "Family", server: anonymous.server, member: created.owner,
                ownerSigningKey: identity.publicKeys.signing.description,
                deviceToken: created.deviceToken.token,
                adminToken: created.adminToken),
            identity: identity)
        _ = try paul.createThread(named: SpaceSession.defaultThreadName)
        let before = try paul.roster()
        let heldBefore = try paul.threadKeys(roster: before)
        let threadsBefore = try paul.client.threads(created.space)
        #expect(SpaceSession.namesThread(heldBefore, threads: threadsBefore, roster: before) == nil)

        let ann = DeviceIdentity.generate()
        let record = try paul.addMember(keys: ann.publicKeys, name: "Annabelle")
        #expect(record.sealedName != nil)
        let annSaved = try SpaceSession.join(
            server: server.url, space: created.space, member: record.id, identity: ann)
        for session in [paul, try SpaceSession(saved: annSaved, identity: ann)] {
            let roster = try session.roster()
            #expect(roster.members[owner]?.name == "Paul" && roster.members[owner]?.sealedName == nil)
            #expect(roster.members[record.id]?.name == "Annabelle")
        }
        let stored = try TestSupport.querySQL(database: server.databasePath, "SELECT body FROM events")
        #expect(stored.count == 2 && stored.allSatisfy { !$0[0].contains("Annabelle") }, "\(stored)")
        #expect(stored.contains { $0[0].contains("Paul") })
    }
}
