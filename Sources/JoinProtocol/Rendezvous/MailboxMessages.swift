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

    /// The JSON object sent in one WebSocket text frame, written by the mailbox protocol's one
    /// codec (`Mailbox`'s ``JSONWriter``, as the relay writes its frames). Members in key order,
    /// as every Eleven client has sent them.
    public var json: String {
        var members: [(String, JSONValue)]
        switch self {
        case .bind(let appID, let side, let version):
            members = [
                ("appid", .string(appID)), ("client_version", .array(version.map { .string($0) })),
                ("side", .string(side.value)), ("type", "bind"),
            ]
        case .allocate:
            members = [("type", "allocate")]
        case .claim(let nameplate):
            members = [("nameplate", .string(nameplate.value)), ("type", "claim")]
        case .release(let nameplate):
            members = [("type", "release")]
            if let nameplate { members.insert(("nameplate", .string(nameplate.value)), at: 0) }
        case .open(let mailbox):
            members = [("mailbox", .string(mailbox.value)), ("type", "open")]
        case .add(let phase, let body):
            members = [("body", .string(Hex.encode(body))), ("phase", .string(phase.value)), ("type", "add")]
        case .close(let mailbox, let mood):
            members = [("mood", .string(mood.rawValue)), ("type", "close")]
            if let mailbox { members.insert(("mailbox", .string(mailbox.value)), at: 0) }
        case .list:
            members = [("type", "list")]
        case .ping(let n):
            members = [("ping", .number(JSONNumber(n))), ("type", "ping")]
        }
        return JSONWriter.string(
            .object(JSONObject(members.map { JSONObject.Member(key: $0.0, value: $0.1) })))
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

    /// Decodes one text frame from the relay with the mailbox protocol's one codec (`Mailbox`'s
    /// ``JSONParser``, which the relay reads its frames with).
    public init(json text: String) throws(RendezvousError) {
        guard case .object(let object)? = try? JSONParser.parse(text), let type = object["type"]?.stringValue
        else {
            throw .protocolViolation("the relay sent something that is not a mailbox message")
        }
        func string(_ key: String) throws(RendezvousError) -> String {
            guard let v = object[key]?.stringValue else {
                throw .protocolViolation("the relay's '\(type)' message has no '\(key)'")
            }
            return v
        }
        switch type {
        case "welcome":
            let welcome = object["welcome"]?.objectValue ?? JSONObject()
            self = .welcome(motd: welcome["motd"]?.stringValue, error: welcome["error"]?.stringValue)
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
            var list: [Rendezvous.Nameplate] = []
            if case .array(let entries)? = object["nameplates"] {
                for entry in entries {
                    if let id = entry.objectValue?["id"]?.stringValue {
                        list.append(Rendezvous.Nameplate(id))
                    }
                }
            }
            self = .nameplates(list)
        case "pong": self = .pong(object["pong"]?.integerValue)
        case "error":
            let orig = object["orig"]?.objectValue?["type"]?.stringValue
            self = .error(object["error"]?.stringValue ?? "unspecified error", origType: orig)
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
