import Foundation
import Mailbox

/// The mailbox protocol's identifiers, as the client's machines name them. Each is defined once,
/// in `Mailbox`, for the relay and the clients alike.
public enum Rendezvous {
    public typealias Side = Mailbox.Side
    public typealias Nameplate = Mailbox.Nameplate
    public typealias MailboxID = Mailbox.MailboxID
    public typealias Phase = Mailbox.Phase
    public typealias Mood = Mailbox.Mood
}

/// A command from client to relay.
public enum ClientMessage: Equatable, Sendable {
    case bind(appID: String, side: Rendezvous.Side, clientVersion: [String])
    case allocate
    case claim(Rendezvous.Nameplate)
    case release(Rendezvous.Nameplate?)
    case open(Rendezvous.MailboxID)
    case add(phase: Rendezvous.Phase, body: [UInt8])
    case close(Rendezvous.MailboxID?, mood: Rendezvous.Mood)
    case list
    case ping(Int)

    /// The JSON object sent in one WebSocket text frame.
    public var json: String {
        var object: [String: JSONText]
        switch self {
        case .bind(let appID, let side, let version):
            object = [
                "type": .string("bind"), "appid": .string(appID), "side": .string(side.value),
                "client_version": .strings(version),
            ]
        case .allocate:
            object = ["type": .string("allocate")]
        case .claim(let nameplate):
            object = ["type": .string("claim"), "nameplate": .string(nameplate.value)]
        case .release(let nameplate):
            object = ["type": .string("release")]
            if let nameplate { object["nameplate"] = .string(nameplate.value) }
        case .open(let mailbox):
            object = ["type": .string("open"), "mailbox": .string(mailbox.value)]
        case .add(let phase, let body):
            object = [
                "type": .string("add"), "phase": .string(phase.value), "body": .string(Hex.encode(body)),
            ]
        case .close(let mailbox, let mood):
            object = ["type": .string("close"), "mood": .string(mood.rawValue)]
            if let mailbox { object["mailbox"] = .string(mailbox.value) }
        case .list:
            object = ["type": .string("list")]
        case .ping(let n):
            object = ["type": .string("ping"), "ping": .int(n)]
        }
        return String(decoding: JSONText.object(object), as: UTF8.self)
    }
}

/// A message from relay to client. Unknown types decode as `.unknown` and are ignored.
public enum ServerMessage: Equatable, Sendable {
    case welcome(motd: String?, error: String?)
    case ack
    case allocated(Rendezvous.Nameplate)
    case claimed(Rendezvous.MailboxID)
    case released
    case message(side: Rendezvous.Side, phase: Rendezvous.Phase, body: [UInt8])
    case closed
    case nameplates([Rendezvous.Nameplate])
    case pong(Int?)
    case error(String, origType: String?)
    case unknown(String)

    /// Decodes one text frame from the relay.
    public init(json text: String) throws(RendezvousError) {
        guard let data = text.data(using: .utf8),
            let any = try? JSONSerialization.jsonObject(with: data),
            let object = any as? [String: Any], let type = object["type"] as? String
        else {
            throw .protocolViolation("the relay sent something that is not a mailbox message")
        }
        func string(_ key: String) throws(RendezvousError) -> String {
            guard let v = object[key] as? String else {
                throw .protocolViolation("the relay's '\(type)' message has no '\(key)'")
            }
            return v
        }
        switch type {
        case "welcome":
            let welcome = object["welcome"] as? [String: Any] ?? [:]
            self = .welcome(motd: welcome["motd"] as? String, error: welcome["error"] as? String)
        case "ack": self = .ack
        case "allocated": self = .allocated(Rendezvous.Nameplate(try string("nameplate")))
        case "claimed": self = .claimed(Rendezvous.MailboxID(try string("mailbox")))
        case "released": self = .released
        case "closed": self = .closed
        case "message":
            guard let body = Hex.decode(try string("body")) else {
                throw .protocolViolation("a mailbox message body is not hex")
            }
            self = .message(
                side: Rendezvous.Side(try string("side")), phase: Rendezvous.Phase(try string("phase")),
                body: body)
        case "nameplates":
            let list = object["nameplates"] as? [[String: Any]] ?? []
            self = .nameplates(list.compactMap { ($0["id"] as? String).map { Rendezvous.Nameplate($0) } })
        case "pong": self = .pong(object["pong"] as? Int)
        case "error":
            let orig = (object["orig"] as? [String: Any])?["type"] as? String
            self = .error(object["error"] as? String ?? "unspecified error", origType: orig)
        default: self = .unknown(type)
        }
    }
}

/// Lowercase hexadecimal, as the mailbox protocol carries bodies.
public enum Hex {
    public static func encode<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes hex (either case); `nil` for odd length or a non-hex character.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
