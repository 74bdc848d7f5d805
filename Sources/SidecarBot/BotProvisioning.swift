import ClientCore
import Foundation
import JoinProtocol
import SpaceModel
import WordCodes

/// Making the bot a member: it joins its space with a short code like any person, through the
/// same joiner code as `eleven join`.
public enum BotProvisioning {
    /// Joins with `code` (attended by a member) as `name`; saves the space in `store`.
    public static func join(
        store: BotStore, code text: String, relay: String, name: String, timeout: Duration = .seconds(300)
    ) throws(BotError) -> SavedSpace {
        if let existing = try store.space() {
            throw BotError(
                .usage, code: .alreadyJoined,
                "The bot is already a member of \(existing.name); one bot serves one space.")
        }
        let parsed: ParsedCode
        do {
            parsed = try CodeParser.parse(text)
        } catch {
            throw BotError(.usage, reporting: error.code, error.message)
        }
        let identity = try store.identity()
        let request = JoinRequest(
            displayName: name, deviceLabel: "eleven-bot", publicKeys: JoinerKeys(identity.publicKeys))
        let grantBytes: [UInt8]
        do {
            grantBytes = try JoinRunner.join(
                relayURL: relay, nameplate: parsed.code.nameplate, words: parsed.code.secretWords,
                request: request, timeout: timeout, firstAnswer: .seconds(15)
            ) { _ in }
        } catch {
            throw BotError(.unavailable, reporting: error.code, error.description)
        }
        do {
            let grant = try JoinGrant(decoding: grantBytes)
            let (saved, _) = try grant.open(
                identity: identity, deviceLabel: "eleven-bot", now: Int64(Date().timeIntervalSince1970),
                nameplate: parsed.code.nameplate.value)
            try store.saveSpace(saved)
            return saved
        } catch let error as BotError {
            throw error
        } catch let error as JoinGrantError {
            throw BotError(.unavailable, reporting: error.code.rawValue, error.message)
        } catch let error as SpaceClientError {
            throw BotError(.unavailable, reporting: error.code, error.message)
        } catch {
            throw BotError(.unavailable, code: .joinFailed, "\(error)")
        }
    }
}

/// What `eleven-bot status` shows: the space, open invites, recent joins and refusals, counters.
public struct BotStatus: Sendable {
    public struct OpenInvite: Sendable {
        public let nameplate: String?
        public let state: String
        public let usesLeft: Int
        public let expiresAt: Int64
    }

    public let member: String
    public let publicKeys: String
    public let space: SavedSpace?
    public let openInvites: [OpenInvite]
    public let invitesByState: [String: Int]
    public let counters: [String: Int]
    public let recent: [BotLogEntry]

    public init(store: BotStore) throws(BotError) {
        let identity = try store.identity()
        publicKeys = identity.publicKeys.text
        space = try store.space()
        member = space?.member.base64URL ?? ""
        openInvites = try store.openInvites().map {
            OpenInvite(
                nameplate: $0.nameplate, state: $0.state.rawValue, usesLeft: $0.usesLeft,
                expiresAt: $0.expiresAt)
        }
        invitesByState = try store.inviteCounts()
        counters = try store.logCounts()
        recent = try store.recentLog()
    }

    /// The JSON form (no secrets: no words, keys or tokens).
    public var json: [String: Any] {
        var object: [String: Any] = [
            "publicKeys": publicKeys,
            "openInvites": openInvites.map { invite -> [String: Any] in
                [
                    "nameplate": invite.nameplate ?? "", "state": invite.state, "usesLeft": invite.usesLeft,
                    "expiresAt": invite.expiresAt,
                ]
            },
            "invites": invitesByState, "counters": counters,
            "recent": recent.map {
                ["at": $0.at, "kind": $0.kind, "nameplate": $0.nameplate ?? "", "detail": $0.detail]
            },
        ]
        if let space {
            object["space"] = ["id": space.space.base64URL, "name": space.name, "server": space.server]
            object["member"] = member
        }
        return object
    }
}
