import Net
import SpaceModel

/// A typed client of the home API (`eleven-server --home`). Blocking, like ``SpaceClient``,
/// whose transport and error mapping it shares.
public struct HomeClient: Sendable {
    var client: SpaceClient

    /// A client for the home server at `server`; `token` is a session token, if any.
    public init(server: String, token: String? = nil) throws(SpaceClientError) {
        client = try SpaceClient(server: server, token: token)
    }

    public var server: String { client.server }

    /// Sets the session token used from now on.
    public mutating func use(session token: String?) { client.token = token }

    public func createAccount(_ body: HomeWire.CreateAccountRequest) throws(SpaceClientError)
        -> HomeWire.Session
    {
        try client.call(.post, "/api/home/account", body: body)
    }

    public func session(_ body: HomeWire.SessionRequest) throws(SpaceClientError) -> HomeWire.Session {
        try client.call(.post, "/api/home/session", body: body)
    }

    public func vault() throws(SpaceClientError) -> HomeWire.Vault {
        try client.call(.get, "/api/home/vault")
    }

    public func putVault(_ body: HomeWire.PutVault) throws(SpaceClientError) -> HomeWire.Stored {
        try client.call(.put, "/api/home/vault", body: body)
    }

    public func anchors() throws(SpaceClientError) -> HomeWire.AnchorList {
        try client.call(.get, "/api/home/anchors")
    }

    public func enrol(_ body: HomeWire.EnrolRequest) throws(SpaceClientError) -> HomeWire.Stored {
        try client.call(.post, "/api/home/anchors", body: body)
    }

    public func rotate(_ body: HomeWire.RotateRequest) throws(SpaceClientError) -> HomeWire.Stored {
        try client.call(.post, "/api/home/rotate", body: body)
    }

    public func emailCode(_ body: HomeWire.EmailCodeRequest) throws(SpaceClientError)
        -> HomeWire.EmailCodeSent
    {
        try client.call(.post, "/api/home/email-code", body: body)
    }

    public func emailVerify(_ body: HomeWire.EmailVerifyRequest) throws(SpaceClientError)
        -> HomeWire.EmailProved
    {
        try client.call(.post, "/api/home/email-verify", body: body)
    }

    public func addEmail(_ body: HomeWire.EmailAttach) throws(SpaceClientError) -> HomeWire.EmailChanged {
        try client.call(.post, "/api/home/emails", body: body)
    }

    public func removeEmail(_ body: HomeWire.EmailRemove) throws(SpaceClientError) -> HomeWire.EmailChanged {
        try client.call(.delete, "/api/home/emails", body: body)
    }

    public func requestApproval(_ body: HomeWire.ApprovalRequest) throws(SpaceClientError)
        -> HomeWire.ApprovalCreated
    {
        try client.call(.post, "/api/home/approvals", body: body)
    }

    public func pollApproval(_ id: String, _ body: HomeWire.ApprovalPoll) throws(SpaceClientError)
        -> HomeWire.Approval
    {
        try client.call(.post, "/api/home/approvals/\(id)", body: body)
    }

    public func approvals() throws(SpaceClientError) -> HomeWire.ApprovalList {
        try client.call(.get, "/api/home/approvals")
    }

    public func offerApproval(_ id: String, _ body: HomeWire.ApprovalOffer) throws(SpaceClientError)
        -> HomeWire.Approval
    {
        try client.call(.post, "/api/home/approvals/\(id)/offer", body: body)
    }

    public func answerApproval(_ id: String, _ body: HomeWire.ApprovalAnswer) throws(SpaceClientError)
        -> HomeWire.Approval
    {
        try client.call(.post, "/api/home/approvals/\(id)/answer", body: body)
    }
}
