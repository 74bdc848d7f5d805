import Foundation
import PAKE
import SpaceModel

/// The pepper of the email blind index: 32 random bytes made once, kept in a file of its own
/// beside the database (mode 0600), so a copy of the database alone cannot be searched with a
/// dictionary of addresses.
enum HomePepper {
    static let byteCount = 32

    static func path(besides database: String) -> String { database + ".pepper" }

    /// Reads the pepper, making it first when there is none. A file of the wrong size is refused
    /// rather than replaced: a new pepper would orphan every address already attached.
    static func load(besides database: String) throws -> SecretBytes {
        let path = path(besides: database)
        let made = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if made >= 0 {
            var bytes = SpaceService.randomBytes(byteCount)
            defer { wipe(&bytes) }
            let written = write(made, bytes, bytes.count)
            let synced = fsync(made)
            close(made)
            guard written == bytes.count, synced == 0 else {
                unlink(path)
                throw HomePepperError(message: "could not write \(path)")
            }
        } else if errno != EEXIST {
            throw HomePepperError(message: "could not create \(path): \(String(cString: strerror(errno)))")
        }
        guard let data = FileManager.default.contents(atPath: path), data.count == byteCount else {
            throw HomePepperError(
                message: "\(path) is not a \(byteCount)-byte pepper; restore it from a backup")
        }
        return SecretBytes(Array(data))
    }
}

struct HomePepperError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

private func wipe(_ bytes: inout [UInt8]) {
    for i in bytes.indices { bytes[i] = 0 }
}

// `POST /api/home/email-code`, `POST /api/home/email-verify`, `POST|DELETE /api/home/emails`:
// the email identity anchor. An address says "this account is mine" and never decrypts
// anything. The server keeps only its blind index HMAC(pepper, lowercase(address)); it mails a
// code to what was typed and forgets the address. Until the code is proved every answer is the
// same whether or not an account has the address.
extension SpaceService {
    func emailIndex(_ address: String) throws(APIError) -> [UInt8] {
        guard let pepper = homePepper else { throw Self.emailUnavailable }
        var encoder = CanonicalEncoder(domain: Domain.homeEmailIndex)
        encoder.append(address)
        return HMACSHA256.authenticationCode(for: encoder.bytes, key: pepper)
    }

    static let emailUnavailable = APIError(
        503, .emailUnavailable, "This home server does not send sign-in codes by email.")

    private func address(_ text: String) throws(APIError) -> String {
        guard let address = EmailAddress.normalised(text) else {
            throw APIError.badRequest(
                .invalidAddress, "That is not an email address this server can send to (name@example.com).")
        }
        return address
    }

    private static func apiError(_ refusal: EmailCodes.Refusal) -> APIError {
        switch refusal {
        case .tooMany(let retryAfter):
            let minutes = max(1, (retryAfter + 59) / 60)
            return APIError(
                429, .tooManyAttempts,
                "Too many codes or wrong tries for this address or from here; try again in \(minutes) minutes."
            )
        case .wrongCode(let left):
            return APIError(
                400, .codeInvalid,
                left > 0
                    ? "That code is not right; \(left) more tries with it."
                    : "That code is not right. Ask for a new one.",
                triesLeft: left)
        case .expired:
            return APIError.badRequest(.codeExpired, "That code has expired. Ask for a new one.")
        case .busy:
            return APIError(503, .busy, "Too many sign-ins are in progress; try again in a few minutes.")
        }
    }

    /// The source a limit counts: the peer's host, without its port.
    private static func source(_ request: APIRequest) -> String {
        let address = request.remoteAddress
        guard let colon = address.lastIndex(of: ":"), !address.hasSuffix("]") else { return address }
        return String(address[..<colon])
    }

    func emailCode(_ request: APIRequest) throws -> APIResponse {
        let body = try decode(HomeWire.EmailCodeRequest.self, from: request)
        guard let mailer = homeMailer else { throw Self.emailUnavailable }
        let address = try address(body.address)
        let index = try emailIndex(address)
        let started: (challenge: [UInt8], code: String)
        do {
            started = try emailCodes.start(index: index, source: Self.source(request), now: now) {
                Self.randomBytes(32)
            }
        } catch {
            throw Self.apiError(error)
        }
        // Sent whether or not an account has the address: the answer and its timing are the same.
        mailer.sendCode(
            started.code, to: address, expiresInMinutes: Int(EmailCodes.codeLifetime / 60))
        return .json(
            HomeWire.EmailCodeSent(
                challenge: Base64URL.encode(started.challenge), expiresAt: now + EmailCodes.codeLifetime),
            status: 202)
    }

    func emailVerify(_ request: APIRequest) throws -> APIResponse {
        let body = try decode(HomeWire.EmailVerifyRequest.self, from: request)
        guard homeMailer != nil else { throw Self.emailUnavailable }
        let challenge = Base64URL.decode(body.challenge) ?? []
        let ticket: [UInt8]
        do {
            ticket = try emailCodes.verify(
                challenge: challenge, code: body.code, source: Self.source(request), now: now
            ) { Self.randomBytes(32) }
        } catch {
            throw Self.apiError(error)
        }
        // Proved: now the answer may say whether the address has an account.
        let index = emailCodes.tickets[ticket]?.index ?? []
        let account = try store.homeEmailAccount(index: index)
        return .json(
            HomeWire.EmailProved(
                ticket: Base64URL.encode(ticket), expiresAt: now + EmailCodes.ticketLifetime,
                hasAccount: account != nil))
    }

    /// The blind index a ticket stands for (spent), or 401 `email_not_proved`.
    func redeemEmailTicket(_ text: String) throws(APIError) -> [UInt8] {
        guard let raw = Base64URL.decode(text), let index = emailCodes.redeem(raw, now: now) else {
            throw APIError.unauthorised(
                .emailNotProved, "Prove the address with the code sent to it first (or again: it expired)."
            )
        }
        return index
    }

    func addEmail(_ request: APIRequest, _ session: (account: HomeAccountRow, anchor: HomeAnchorRow)) throws
        -> APIResponse
    {
        let body = try decode(HomeWire.EmailAttach.self, from: request)
        let index = try redeemEmailTicket(body.ticket)
        try attachEmail(index, account: session.account.id)
        return .json(HomeWire.EmailChanged(changed: true))
    }

    /// Attaches a proved address to `account`; 409 `email_in_use` when another account has it.
    func attachEmail(_ index: [UInt8], account: [UInt8]) throws {
        switch try store.homeEmailAccount(index: index) {
        case account?: return
        case .some:
            throw APIError.conflict(
                .emailInUse,
                "Another account signs in with that address. Sign in there, or remove it from that account first."
            )
        case nil:
            guard try store.homeEmailCount(account: account) < Self.maximumEmails else {
                throw APIError.conflict(
                    .tooManyAddresses,
                    "This account has \(Self.maximumEmails) addresses; remove one first.")
            }
            try store.insertHomeEmail(index: index, account: account, now: now)
        }
    }

    /// Most addresses one account may have.
    static let maximumEmails = 20

    func removeEmail(_ request: APIRequest, _ session: (account: HomeAccountRow, anchor: HomeAnchorRow))
        throws
        -> APIResponse
    {
        let body = try decode(HomeWire.EmailRemove.self, from: request)
        let index = try emailIndex(try address(body.address))
        let removed = try store.deleteHomeEmail(index: index, account: session.account.id)
        return .json(HomeWire.EmailChanged(changed: removed))
    }
}
