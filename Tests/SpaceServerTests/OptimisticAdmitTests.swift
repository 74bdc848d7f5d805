import Foundation
import JoinProtocol
import SpaceModel
import Testing

@testable import ClientCore

/// An attendant admitting with a ``RosterCache`` signs onto the chain as it last verified it and
/// reads the chain again only when the server refuses because it moved on: the chain stays in
/// order, and what the cache holds is what the server's chain verifies to.
@Suite struct OptimisticAdmitTests {
    private func request(_ name: String) -> (DeviceIdentity, JoinRequest) {
        let identity = DeviceIdentity.generate()
        return (
            identity,
            JoinRequest(displayName: name, deviceLabel: "phone", publicKeys: JoinerKeys(identity.publicKeys))
        )
    }

    /// A space on a running server (kept running while the result is held), and an invite of
    /// five uses its owner signed.
    private func space(nameplate: String) throws -> (HTTPServerTests.Running, SpaceSession, SignedInvite) {
        let running = try HTTPServerTests.Running()
        let (session, _, _, _) = try running.space()
        let now = Int64(Date().timeIntervalSince1970)
        let invite = session.identity.signInvite(
            space: session.saved.space, inviter: session.saved.member, nameplate: nameplate, createdAt: now,
            expiresAt: now + 600, uses: 5)
        return (running, session, invite)
    }

    @Test func anAdmissionOnAStaleCacheIsSignedAgainOnTheMovedChain() throws {
        let (running, session, invite) = try space(nameplate: "7")
        let rosters = RosterCache()
        let start = try rosters.refresh(session).events.count

        // The chain moves behind the cache's back: the owner adds someone directly.
        let (_, other) = request("Ann")
        _ = try session.addMember(keys: try other.publicKeys.keys(), name: "Ann")
        #expect(rosters.verified?.events.count == start)

        let (_, bea) = request("Bea")
        let first = try session.admit(
            request: bea, invite: invite, carryInvite: true, rosters: rosters)
        // Signed first on the stale cache: the server refused that once (409), no more.
        let refusals = { running.log.lines.withLock { $0.filter { $0.contains(#""status":409"#) }.count } }
        #expect(refusals() == 1)
        // On the cache as it now stands (the server took the event on the chain it holds).
        let (_, cla) = request("Cla")
        let second = try session.admit(
            request: cla, invite: invite, carryInvite: true, rosters: rosters)

        let events = try session.client.events(session.saved.space)
        let verified = try session.verifiedRoster(events)
        #expect(events.count == start + 3)
        #expect(verified.members[first.member.id]?.name == "Bea")
        #expect(verified.members[second.member.id]?.name == "Cla")
        #expect(verified.members.values.contains { $0.name == "Ann" })
        #expect(refusals() == 1)
        let cached = try #require(rosters.verified)
        #expect(cached.events.count == events.count)
        #expect(cached.roster.head == verified.head)

        // The same joiner again (a restarted bot): found in the chain, not added twice.
        let again = try session.admit(
            request: cla, invite: invite, carryInvite: true, rosters: rosters)
        #expect(again.member.id == second.member.id)
        #expect(try session.client.events(session.saved.space).count == start + 3)
        // Someone who is a member already (added without this invite) is refused, on the chain
        // as it is now.
        #expect(throws: SpaceClientError.self) {
            try session.admit(
                request: other, invite: invite, carryInvite: true, rosters: rosters)
        }
    }

    /// Someone admitted with the invite who has since been removed, coming back with the same
    /// keys and invite (a restarted bot's retry): their earlier addition is found through the
    /// former members, whatever the cache held, and they are not answered as a member; and the
    /// grant of an admission names the event that added the joiner.
    @Test func aRemovedJoinerIsFoundAmongFormerMembersAndNotAnsweredAgain() throws {
        let (running, session, invite) = try space(nameplate: "8")
        let rosters = RosterCache()
        _ = try rosters.refresh(session)
        let (_, bea) = request("Bea")
        let first = try session.admit(request: bea, invite: invite, carryInvite: true, rosters: rosters)
        let events = try session.client.events(session.saved.space)
        let adding = try #require(events.last { $0.change.adds(first.member.id) })
        #expect(first.grant.checkpoint == ChainCheckpoint(adding))

        try session.removeMember(first.member.id)
        // The cache still shows Bea as a member: it is read again before deciding.
        #expect(rosters.latest?.members[first.member.id] != nil)
        #expect {
            try session.admit(request: bea, invite: invite, carryInvite: true, rosters: rosters)
        } throws: { error in
            (error as? SpaceClientError)?.code == "not_member"
        }
        // With the cache now current (Bea a former member only): the same.
        #expect(rosters.latest?.members[first.member.id] == nil)
        #expect {
            try session.admit(request: bea, invite: invite, carryInvite: true, rosters: rosters)
        } throws: { error in
            (error as? SpaceClientError)?.code == "not_member"
        }
        #expect(try session.client.events(session.saved.space).count == events.count + 1)
        withExtendedLifetime(running) {}  // The server runs until here.
    }
}
