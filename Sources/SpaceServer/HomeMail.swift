import CCurl
import Foundation

/// How the home server sends sign-in codes by email (`eleven-server --home --smtp HOST:PORT`).
public struct HomeMailConfiguration: Sendable {
    /// How the connection to the mail server is protected.
    public enum Security: String, Sendable, CaseIterable {
        /// Plain SMTP (a relay on the same machine or network).
        case none
        /// SMTP upgraded with STARTTLS; refused when the server does not offer it.
        case starttls
        /// SMTP inside TLS from the first byte (SMTPS, usually port 465).
        case tls
    }

    /// `HOST:PORT` of the mail server.
    public var server: String
    /// The sender address (`From:` and the envelope).
    public var sender: String
    public var security: Security
    public var username: String?
    public var password: String?
    /// PEM certificates to trust for the mail server's TLS instead of the system's.
    public var caFile: String?
    /// Where the mailer reports what it did (never an address or a code).
    public var log = ServerLog.silent

    public init(
        server: String, sender: String, security: Security = .none, username: String? = nil,
        password: String? = nil
    ) {
        self.server = server
        self.sender = sender
        self.security = security
        self.username = username
        self.password = password
    }
}

/// Email addresses as the home server accepts them: plain ASCII `local@domain`, nothing that
/// could end a mail header or an SMTP command.
enum EmailAddress {
    static let maximumBytes = 254
    private static let localCharacters = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.!#$%&'*+/=?^_`{|}~-")
    private static let domainCharacters = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")

    /// The address as it is indexed (lowercased, surrounding spaces dropped), or nil when it is
    /// not one this server sends to.
    static func normalised(_ text: String) -> String? {
        let address = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard address.utf8.count <= maximumBytes else { return nil }
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, let local = parts.first, let domain = parts.last, !local.isEmpty,
            local.count <= 64, domain.contains("."), !domain.hasPrefix("."), !domain.hasSuffix("."),
            !domain.contains(".."), local.allSatisfy(localCharacters.contains),
            domain.allSatisfy(domainCharacters.contains)
        else { return nil }
        return address
    }
}

/// Sends sign-in codes through libcurl's SMTP client, one message at a time on a queue of its
/// own, so a slow mail server never holds the API's lock and every answer to a code request is
/// the same whatever happens to the mail. The address and the code live only in the message
/// being sent; the log says that a message went out or failed, never to whom or what.
final class HomeMailer: Sendable {
    private let configuration: HomeMailConfiguration
    private let queue = DispatchQueue(label: "eleven.home-mail")

    init(configuration: HomeMailConfiguration) {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        self.configuration = configuration
    }

    /// Queues the code `code` for `address` (already ``EmailAddress/normalised(_:)``).
    func sendCode(_ code: String, to address: String, expiresInMinutes minutes: Int) {
        let message = Self.message(
            from: configuration.sender, to: address, code: code, minutes: minutes, date: Date())
        queue.async { [configuration] in
            let started = DispatchTime.now().uptimeNanoseconds
            let failure = Self.deliver(message, to: address, configuration: configuration)
            var fields: [String: any Sendable] = [
                "ms": Double((DispatchTime.now().uptimeNanoseconds - started) / 1000) / 1000
            ]
            if let failure { fields["reason"] = failure }
            configuration.log.log(failure == nil ? "email_code_sent" : "email_code_failed", fields)
        }
    }

    /// Waits until every queued message was handed over (or failed); for tests and shutdown.
    func drain() { queue.sync {} }

    /// The RFC 5322 message: CRLF line ends, ASCII only.
    static func message(from sender: String, to address: String, code: String, minutes: Int, date: Date)
        -> [UInt8]
    {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        let lines = [
            "From: Eleven <\(sender)>",
            "To: <\(address)>",
            "Subject: Your Eleven sign-in code: \(code)",
            "Date: \(formatter.string(from: date))",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=us-ascii",
            "",
            "Your Eleven sign-in code is \(code).",
            "",
            "Type it on the device you are signing in on. It works once, for \(minutes) minutes.",
            "If you did not ask for it, ignore this message: without the code nobody can sign in",
            "with this address, and this message is all the server keeps of it.",
        ]
        return Array((lines.joined(separator: "\r\n") + "\r\n").utf8)
    }

    /// One SMTP transaction; nil when the mail server accepted the message, else a reason word.
    private static func deliver(_ message: [UInt8], to address: String, configuration: HomeMailConfiguration)
        -> String?
    {
        guard let curl = curl_easy_init() else { return "curl_init_failed" }
        defer { curl_easy_cleanup(curl) }
        let scheme = configuration.security == .tls ? "smtps" : "smtp"
        let recipients = curl_slist_append(nil, "<\(address)>")
        defer { curl_slist_free_all(recipients) }
        let body = OutgoingMail(message)
        let unmanaged = Unmanaged.passRetained(body)
        defer { unmanaged.release() }
        var status = CURLE_OK
        func set(_ result: CURLcode) { if status == CURLE_OK { status = result } }
        set(eleven_curl_set_string(curl, CURLOPT_URL, "\(scheme)://\(configuration.server)/eleven"))
        set(eleven_curl_set_string(curl, CURLOPT_MAIL_FROM, "<\(configuration.sender)>"))
        set(eleven_curl_set_list(curl, CURLOPT_MAIL_RCPT, recipients))
        set(eleven_curl_set_long(curl, CURLOPT_UPLOAD, 1))
        set(eleven_curl_set_read(curl, messageRead))
        set(eleven_curl_set_pointer(curl, CURLOPT_READDATA, unmanaged.toOpaque()))
        set(eleven_curl_set_long(curl, CURLOPT_NOSIGNAL, 1))
        set(eleven_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT, 20))
        set(eleven_curl_set_long(curl, CURLOPT_TIMEOUT, 60))
        // Only mail: the URL is built from configuration, but nothing else may be spoken.
        set(eleven_curl_set_string(curl, CURLOPT_PROTOCOLS_STR, "smtp,smtps"))
        if configuration.security == .starttls {
            set(eleven_curl_set_long(curl, CURLOPT_USE_SSL, Int(CURLUSESSL_ALL.rawValue)))
        }
        if let caFile = configuration.caFile { set(eleven_curl_set_string(curl, CURLOPT_CAINFO, caFile)) }
        if let username = configuration.username {
            set(eleven_curl_set_string(curl, CURLOPT_USERNAME, username))
            set(eleven_curl_set_string(curl, CURLOPT_PASSWORD, configuration.password ?? ""))
        }
        guard status == CURLE_OK else { return "curl_option_refused" }
        let result = curl_easy_perform(curl)
        guard result == CURLE_OK else {
            switch result {
            case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_OPERATION_TIMEDOUT:
                return "mail_server_unreachable"
            case CURLE_USE_SSL_FAILED, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION:
                return "mail_server_tls_failed"
            case CURLE_LOGIN_DENIED: return "mail_server_login_denied"
            default: return "mail_server_refused"
            }
        }
        return nil
    }
}

/// The message libcurl reads while sending, in pieces of its choosing.
private final class OutgoingMail {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }
}

private let messageRead:
    @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        buffer, size, count, context in
        guard let buffer, let context else { return 0 }
        let body = Unmanaged<OutgoingMail>.fromOpaque(context).takeUnretainedValue()
        let length = min(size * count, body.bytes.count - body.offset)
        guard length > 0 else { return 0 }
        body.bytes.withUnsafeBufferPointer { source in
            UnsafeMutableRawPointer(buffer).copyMemory(
                from: source.baseAddress! + body.offset, byteCount: length)
        }
        body.offset += length
        return length
    }
