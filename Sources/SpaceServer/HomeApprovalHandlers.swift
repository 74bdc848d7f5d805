import Foundation
import PAKE
import SpaceModel

/// A new device waiting for approval (``DeviceApproval``). Memory only: it lives minutes, and
/// holds public keys, a commitment and sealed bytes the server cannot open.
struct PendingApproval {
    let id: String
    let account: [UInt8]
    let keys: MemberPublicKeys
    let commitment: [UInt8]
    let createdAt: Int64
    let expiresAt: Int64
    var offer: [UInt8]?
    var reveal: [UInt8]?
    var nonce: [UInt8]?
    var label: [UInt8]?
    var grant: [UInt8]?
    var declined = false

    var state: String {
        if declined { return "declined" }
        if grant != nil { return "approved" }
        return offer == nil ? "waiting" : "offered"
    }

    var wire: HomeWire.Approval {
        HomeWire.Approval(
            id: id, publicKeys: keys, commitment: Base64URL.encode(commitment), createdAt: createdAt,
            state: state,
            offer: offer.map(Base64URL.encode), reveal: reveal.map(Base64URL.encode),
            nonce: nonce.map(Base64URL.encode), label: label.map(Base64URL.encode),
            grant: grant.map(Base64URL.encode))
    }
}

// `/api/home/approvals[/ID[/offer|answer]]`: a new device that proved an address of an account
// asks its enrolled devices to let it in. The server passes the messages along and learns
// nothing it can read: public keys, a commitment, an ephemeral key each way, sealed bytes.
extension SpaceService {
    /// How long a request waits for an answer, in seconds.
    static let approvalLifetime: Int64 = 900
    /// Requests waiting per account, and in all.
    static let maximumApprovalsPerAccount = 5
    static let maximumApprovals = 10_000
    /// Largest sealed label or grant, in bytes.
    static let maximumApprovalBytes = 4096

    func routeApprovals(_ request: APIRequest, _ rest: [Substring], method: String) throws -> APIResponse {
        homeApprovals = homeApprovals.filter { $0.value.expiresAt > now }
        switch (rest.count, method) {
        case (0, "POST"): return try requestApproval(request)
        case (0, "GET"): return try listApprovals(homeAuthenticate(request))
        case (1, "POST"): return try pollApproval(request, id: String(rest[0]))
        case (2, "POST") where rest[1] == "offer" || rest[1] == "answer":
            let session = try homeAuthenticate(request)
            guard var approval = homeApprovals[String(rest[0])], approval.account == session.account.id else {
                throw Self.unknownApproval
            }
            if rest[1] == "offer" {
                try offer(request, &approval)
            } else {
                try answer(request, &approval)
            }
            homeApprovals[approval.id] = approval
            return .json(approval.wire)
        case (0, _), (1, _), (2, _):
            throw APIError(405, .methodNotAllowed, "Use POST (or GET for the list) for this endpoint.")
        default:
            throw Self.unknownRoute
        }
    }

    static let unknownApproval = APIError.notFound(
        .unknownApproval, "There is no such request waiting (it may have expired).")

    private func requestApproval(_ request: APIRequest) throws -> APIResponse {
        let body = try decode(HomeWire.ApprovalRequest.self, from: request)
        let commitment = try bytes(body.commitment, field: "commitment")
        guard commitment.count == 32 else {
            throw APIError.badRequest(.invalidField, "Field commitment must be 32 bytes.")
        }
        guard body.proof.anchor == HomeWire.approvalAnchor(body.publicKeys) else {
            throw APIError.badRequest(.invalidField, "The proof must be signed by the asking device.")
        }
        try checkProof(
            body.proof, .approval,
            payload: HomeWire.ApprovalRequest.payload(publicKeys: body.publicKeys, commitment: commitment),
            signingKey: body.publicKeys.signing)
        // Only a device that proved an address of the account may ask its devices.
        let index = try redeemEmailTicket(body.ticket)
        guard let account = try store.homeEmailAccount(index: index) else {
            throw APIError.notFound(
                .noAccount, "No account signs in with that address; sign in to make one.")
        }
        guard homeApprovals.count < Self.maximumApprovals,
            homeApprovals.values.filter({ $0.account == account }).count < Self.maximumApprovalsPerAccount
        else {
            throw APIError(
                429, .tooManyRequests,
                "Too many devices are waiting for approval; try again in a few minutes.")
        }
        let id = Base64URL.encode(Self.randomBytes(16))
        homeApprovals[id] = PendingApproval(
            id: id, account: account, keys: body.publicKeys, commitment: commitment, createdAt: now,
            expiresAt: now + Self.approvalLifetime)
        return .json(HomeWire.ApprovalCreated(id: id, expiresAt: now + Self.approvalLifetime), status: 201)
    }

    private func listApprovals(_ session: (account: HomeAccountRow, anchor: HomeAnchorRow)) -> APIResponse {
        let waiting = homeApprovals.values.filter {
            $0.account == session.account.id && $0.state != "declined"
        }
        .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        return .json(HomeWire.ApprovalList(approvals: waiting.map(\.wire)))
    }

    /// The new device's own call, signed with the key it asked with.
    private func pollApproval(_ request: APIRequest, id: String) throws -> APIResponse {
        let body = try decode(HomeWire.ApprovalPoll.self, from: request)
        guard var approval = homeApprovals[id] else { throw Self.unknownApproval }
        try checkProof(
            body.proof, .approval,
            payload: HomeWire.ApprovalPoll.payload(
                id: id, reveal: body.reveal, nonce: body.nonce, label: body.label),
            signingKey: approval.keys.signing)
        guard body.proof.anchor == HomeWire.approvalAnchor(approval.keys) else { throw Self.unknownApproval }
        if let reveal = body.reveal {
            guard approval.offer != nil, approval.reveal == nil else {
                throw APIError.conflict(.notOffered, "Reveal once, after an enrolled device answered.")
            }
            let key = try bytes(reveal, field: "reveal")
            let nonce = try bytes(body.nonce ?? "", field: "nonce")
            let label = try bytes(body.label ?? "", field: "label")
            guard key.count == 32, nonce.count == DeviceApproval.nonceByteCount,
                label.count <= Self.maximumApprovalBytes
            else {
                throw APIError.badRequest(.invalidField, "The reveal, nonce or label has the wrong size.")
            }
            approval.reveal = key
            approval.nonce = nonce
            approval.label = label
            homeApprovals[id] = approval
        }
        // An answered request is told to the device once, then forgotten.
        if approval.declined || approval.grant != nil { homeApprovals[id] = nil }
        return .json(approval.wire)
    }

    private func offer(_ request: APIRequest, _ approval: inout PendingApproval) throws {
        let body = try decode(HomeWire.ApprovalOffer.self, from: request)
        let offer = try bytes(body.offer, field: "offer")
        guard offer.count == 32 else {
            throw APIError.badRequest(.invalidField, "Field offer must be 32 bytes.")
        }
        guard approval.offer == nil else {
            throw APIError.conflict(.alreadyOffered, "Another of your devices is answering this request.")
        }
        approval.offer = offer
    }

    private func answer(_ request: APIRequest, _ approval: inout PendingApproval) throws {
        let body = try decode(HomeWire.ApprovalAnswer.self, from: request)
        guard approval.grant == nil, !approval.declined else {
            throw APIError.conflict(.alreadyAnswered, "This request was already answered.")
        }
        guard let text = body.grant else {
            approval.declined = true
            return
        }
        let grant = try bytes(text, field: "grant")
        guard approval.reveal != nil, grant.count <= Self.maximumApprovalBytes else {
            throw APIError.badRequest(
                .invalidField, "A grant comes after the reveal and is at most 4096 bytes.")
        }
        approval.grant = grant
    }
}
