import SpaceModel

// The email identity anchor, client side: ask the home server to mail a code, prove it, and
// attach or detach addresses. An address finds an account; it never opens one (the keys come
// from an enrolled device or a way back in).
extension HomeSync {
    /// The home server this device uses: its own when signed in, else `server`.
    private func emailServer(_ server: String?) throws -> String {
        if let home = try home() { return home.server }
        guard let server else { throw HomeError.notSignedIn }
        return server
    }

    /// Asks the home server to mail a sign-in code to `address`. The answer is the same whether
    /// or not an account signs in with it.
    public func requestEmailCode(server: String?, address: String) throws -> HomeWire.EmailCodeSent {
        try HomeClient(server: try emailServer(server)).emailCode(HomeWire.EmailCodeRequest(address: address))
    }

    /// Proves the code from the mail; the ticket stands for the address for a few minutes, once.
    public func proveEmail(server: String?, challenge: String, code: String) throws -> HomeWire.EmailProved {
        try HomeClient(server: try emailServer(server)).emailVerify(
            HomeWire.EmailVerifyRequest(challenge: challenge, code: code))
    }

    /// Attaches a proved address to this device's account.
    public func addEmail(ticket: String) throws {
        guard var home = try home() else { throw HomeError.notSignedIn }
        _ = try withSession(&home) { try $0.addEmail(HomeWire.EmailAttach(ticket: ticket)) }
    }

    /// Detaches `address` from this device's account; false when the account did not have it.
    public func removeEmail(_ address: String) throws -> Bool {
        guard var home = try home() else { throw HomeError.notSignedIn }
        return try withSession(&home) { try $0.removeEmail(HomeWire.EmailRemove(address: address)) }.changed
    }
}

extension HomeSync {
    static let anchorNudgeFile = "anchor-nudge"

    /// Whether to suggest signing in with an address now (after creating a space): once per
    /// state directory, only while the device is not signed in. Remembered at the first answer.
    public func takeAnchorNudge() throws(LocalStateError) -> Bool {
        try directory.locked { () throws(LocalStateError) in
            guard try home() == nil, try directory.read(Self.anchorNudgeFile) == nil else { return false }
            try directory.write(Self.anchorNudgeFile, Array("shown\n".utf8))
            return true
        }
    }

    static let wayBackOfferFile = "way-back-offer"

    /// Whether to offer a way back in now (after creating or joining a space): once per state
    /// directory, only on a signed-in device whose account has none (no recovery file, no
    /// hardware token). Remembered once the account was looked at, whatever the answer; a home
    /// server that cannot be reached is asked again next time.
    public func takeWayBackOffer() throws -> Bool {
        guard try home() != nil, try directory.read(Self.wayBackOfferFile) == nil else { return false }
        let none = try recoveryCredentials().isEmpty
        return try directory.locked { () throws(LocalStateError) in
            guard try directory.read(Self.wayBackOfferFile) == nil else { return false }
            try directory.write(Self.wayBackOfferFile, Array("shown\n".utf8))
            return none
        }
    }
}
