import Foundation
import JoinProtocol
import SpaceModel
import Support

/// A new device's request as an enrolled device sees it in `eleven devices`.
public struct ApprovalEntry: Sendable, Equatable {
    public let id: String
    public let createdAt: Int64
    /// Whether another device is already answering it.
    public let answering: Bool
}

// Approving a new device from an enrolled one through the home server (``DeviceApproval``):
// both devices show the same verification words; on yes the enrolled device wraps the vault key
// to the new device's key and sends the grant sealed under the words' agreement.
extension HomeSync {
    /// How often a waiting device asks the home server, in seconds.
    static let approvalPollInterval: Double = 1

    /// The new device's side, after it proved an address of an existing account: asks the
    /// account's devices, shows the words once an enrolled device answers (`words`), and on
    /// approval signs in with the grant and pulls every space. Throws `declined` on a no.
    public func requestApproval(
        server: String, ticket: String, label: String, timeout: Double,
        waiting: (String) -> Void, words: ([String]) -> Void
    ) throws -> SyncReport {
        let key = try deviceKey()
        let exchange = DeviceApproval()
        let client = try HomeClient(server: server)
        let anchor = HomeWire.approvalAnchor(key.publicKeys)
        let created = try client.requestApproval(
            HomeWire.ApprovalRequest(
                ticket: ticket, publicKeys: key.publicKeys, commitment: exchange.commitment,
                proof: key.homeProof(
                    .approval, anchor: anchor,
                    payload: HomeWire.ApprovalRequest.payload(
                        publicKeys: key.publicKeys, commitment: exchange.commitment), now: clock.seconds())))
        waiting(created.id)
        var agreement: DeviceApproval.Agreement?
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var reveal: (key: [UInt8], nonce: [UInt8], label: [UInt8])?
            if agreement == nil, let offered = try poll(client, created.id, key, anchor, nil).offer {
                let agreed = try exchange.agreeAsNewDevice(
                    device: key.publicKeys, offer: Base64URL.decode(offered) ?? [])
                agreement = agreed
                reveal = (exchange.publicKey, exchange.nonce, agreed.seal(Array(label.utf8), "label"))
                words(VerificationWords.words(for: agreed.verifier))
            }
            let state = try poll(client, created.id, key, anchor, reveal)
            switch state.state {
            case "declined":
                throw HomeError(.declined, "Your other device said no. Nothing was shared.")
            case "approved":
                guard let agreement, let sealed = state.grant.flatMap(Base64URL.decode) else {
                    throw HomeError(.invalidGrant, "The answer came before this device could check it.")
                }
                return try completeLink(grant: agreement.open(sealed, "grant"))
            default:
                Thread.sleep(forTimeInterval: Self.approvalPollInterval)
            }
        }
        throw HomeError(
            .timedOut, "None of your devices answered in time. Run `eleven devices approve` on one of them."
        )
    }

    private func poll(
        _ client: HomeClient, _ id: String, _ key: DeviceIdentity, _ anchor: AnchorID,
        _ reveal: (key: [UInt8], nonce: [UInt8], label: [UInt8])?
    ) throws -> HomeWire.Approval {
        let fields = (
            reveal: reveal.map { Base64URL.encode($0.key) }, nonce: reveal.map { Base64URL.encode($0.nonce) },
            label: reveal.map { Base64URL.encode($0.label) }
        )
        let payload = HomeWire.ApprovalPoll.payload(
            id: id, reveal: fields.reveal, nonce: fields.nonce, label: fields.label)
        do throws(SpaceClientError) {
            return try client.pollApproval(
                id,
                HomeWire.ApprovalPoll(
                    proof: key.homeProof(.approval, anchor: anchor, payload: payload, now: clock.seconds()),
                    reveal: reveal?.key, nonce: reveal?.nonce, label: reveal?.label))
        } catch {
            guard error.typedCode == .unknownApproval else { throw error }
            throw HomeError(
                .timedOut, "The request expired before one of your devices answered. Sign in again.")
        }
    }

    /// New devices waiting for approval.
    public func pendingApprovals() throws -> [ApprovalEntry] {
        guard var home = try home() else { throw HomeError.notSignedIn }
        return try withSession(&home) { try $0.approvals() }.approvals.map {
            ApprovalEntry(id: $0.id, createdAt: $0.createdAt, answering: $0.state != "waiting")
        }
    }

    /// The enrolled device's side: answers the request `id` (or the only one waiting), waits for
    /// the new device's reveal, and asks `decide` with the new device's name and the words. On
    /// yes, enrols the new device and sends it the sealed grant. Returns the name and the answer.
    public func approve(id wanted: String?, timeout: Double, decide: (String, [String]) -> Bool) throws -> (
        label: String, approved: Bool
    ) {
        guard var home = try home() else { throw HomeError.notSignedIn }
        let waiting = try withSession(&home) { try $0.approvals() }.approvals.filter {
            wanted == nil ? $0.state == "waiting" : $0.id == wanted
        }
        guard let request = waiting.first else {
            throw HomeError(
                .noRequest,
                wanted == nil
                    ? "No new device is waiting. On it, run `eleven signin --server URL --email ADDRESS`."
                    : "No device is waiting under \(wanted ?? ""); see `eleven devices`.")
        }
        guard wanted != nil || waiting.count == 1 else {
            throw HomeError(
                .ambiguousRequest, "Several devices are waiting; name one (see `eleven devices`).")
        }
        let exchange = DeviceApproval()
        _ = try withSession(&home) {
            try $0.offerApproval(request.id, HomeWire.ApprovalOffer(offer: exchange.publicKey))
        }
        let deadline = Date().addingTimeInterval(timeout)
        var revealed: HomeWire.Approval?
        while revealed == nil {
            guard Date() < deadline else {
                throw HomeError(.timedOut, "The new device did not answer in time.")
            }
            revealed = try withSession(&home) { try $0.approvals() }.approvals.first {
                $0.id == request.id && $0.reveal != nil
            }
            if revealed == nil { Thread.sleep(forTimeInterval: Self.approvalPollInterval) }
        }
        guard let revealed else { throw HomeError(.timedOut, "The new device did not answer in time.") }
        let agreement = try exchange.agreeAsApprover(
            device: revealed.publicKeys, commitment: Base64URL.decode(revealed.commitment) ?? [],
            reveal: Base64URL.decode(revealed.reveal ?? "") ?? [],
            nonce: Base64URL.decode(revealed.nonce ?? "") ?? [])
        let label = String(
            decoding: try agreement.open(Base64URL.decode(revealed.label ?? "") ?? [], "label"), as: UTF8.self
        )
        guard decide(label, VerificationWords.words(for: agreement.verifier)) else {
            _ = try withSession(&home) {
                try $0.answerApproval(request.id, HomeWire.ApprovalAnswer(grant: nil))
            }
            return (label, false)
        }
        let grant = try grantDevice(revealed.publicKeys, label: label)
        _ = try withSession(&home) {
            try $0.answerApproval(request.id, HomeWire.ApprovalAnswer(grant: agreement.seal(grant, "grant")))
        }
        return (label, true)
    }
}
