import Mailbox

/// ``StorageOp``s as JSON text, for the change feed several relay nodes share (PostgreSQL's
/// `relay_changes`): each node writes the ops it committed, the others read and apply them.
///
/// One op is an array whose first element names it: `["np", app, name, mailbox]`,
/// `["nps", app, name, side, claimed, added]`, `["npd", app, name]`,
/// `["mb", app, id, forNameplate, updated]`, `["mbt", app, id, updated]`,
/// `["mbs", app, id, side, opened, added, mood|null]`,
/// `["msg", app, id, side, phase, body, serverRX, messageID]`, `["mbd", app, id]`.
/// Strings go through ``JSONWriter`` (control characters escaped), times as shortest doubles.
enum StorageOpCoding {
    static func encode(_ ops: [StorageOp]) -> String {
        JSONWriter.string(.array(ops.map(value)))
    }

    /// The ops, or nil when `text` is not a list this encoder wrote.
    static func decode(_ text: String) -> [StorageOp]? {
        guard case .array(let items)? = try? JSONParser.parse(text) else { return nil }
        var ops: [StorageOp] = []
        ops.reserveCapacity(items.count)
        for item in items {
            guard case .array(let fields) = item, let op = op(fields) else { return nil }
            ops.append(op)
        }
        return ops
    }

    private static func time(_ instant: RelayInstant) -> JSONValue {
        .number(JSONNumber(instant.secondsSince1970))
    }

    private static func value(_ op: StorageOp) -> JSONValue {
        switch op {
        case .putNameplate(let key, let mailbox):
            return .array([
                "np", .string(key.app.value), .string(key.name.value), .string(mailbox.value),
            ])
        case .putNameplateSide(let key, let side, let record):
            return .array([
                "nps", .string(key.app.value), .string(key.name.value), .string(side.value),
                .bool(record.claimed), time(record.added),
            ])
        case .deleteNameplate(let key):
            return .array(["npd", .string(key.app.value), .string(key.name.value)])
        case .putMailbox(let key, let forNameplate, let updated):
            return .array([
                "mb", .string(key.app.value), .string(key.id.value), .bool(forNameplate), time(updated),
            ])
        case .touchMailbox(let key, let updated):
            return .array(["mbt", .string(key.app.value), .string(key.id.value), time(updated)])
        case .putMailboxSide(let key, let side, let record):
            return .array([
                "mbs", .string(key.app.value), .string(key.id.value), .string(side.value),
                .bool(record.opened), time(record.added), record.mood.map(JSONValue.string) ?? .null,
            ])
        case .appendMessage(let key, let message):
            return .array([
                "msg", .string(key.app.value), .string(key.id.value), .string(message.side.value),
                .string(message.phase.value), .string(message.body), time(message.serverRX),
                message.messageID,
            ])
        case .deleteMailbox(let key):
            return .array(["mbd", .string(key.app.value), .string(key.id.value)])
        }
    }

    private static func op(_ f: [JSONValue]) -> StorageOp? {
        func string(_ i: Int) -> String? { i < f.count ? f[i].stringValue : nil }
        func bool(_ i: Int) -> Bool? {
            guard i < f.count, case .bool(let b) = f[i] else { return nil }
            return b
        }
        func instant(_ i: Int) -> RelayInstant? {
            guard i < f.count, case .number(let n) = f[i], let seconds = n.doubleValue else { return nil }
            return RelayInstant(secondsSince1970: seconds)
        }
        guard let kind = string(0), let app = string(1).map({ AppID($0) }), let second = string(2) else {
            return nil
        }
        let nameplate = NameplateKey(app: app, name: Nameplate(second))
        let mailbox = MailboxKey(app: app, id: MailboxID(second))
        switch (kind, f.count) {
        case ("np", 4):
            return string(3).map { .putNameplate(nameplate, mailbox: MailboxID($0)) }
        case ("nps", 6):
            guard let side = string(3), let claimed = bool(4), let added = instant(5) else { return nil }
            return .putNameplateSide(
                nameplate, Side(side), NameplateSideRecord(claimed: claimed, added: added))
        case ("npd", 3):
            return .deleteNameplate(nameplate)
        case ("mb", 5):
            guard let forNameplate = bool(3), let updated = instant(4) else { return nil }
            return .putMailbox(mailbox, forNameplate: forNameplate, updated: updated)
        case ("mbt", 4):
            return instant(3).map { .touchMailbox(mailbox, updated: $0) }
        case ("mbs", 7):
            guard let side = string(3), let opened = bool(4), let added = instant(5) else { return nil }
            return .putMailboxSide(
                mailbox, Side(side), MailboxSideRecord(opened: opened, added: added, mood: string(6)))
        case ("msg", 8):
            guard let side = string(3), let phase = string(4), let body = string(5), let rx = instant(6)
            else { return nil }
            return .appendMessage(
                mailbox,
                StoredMessage(
                    side: Side(side), phase: Phase(phase), body: body, serverRX: rx, messageID: f[7]))
        case ("mbd", 3):
            return .deleteMailbox(mailbox)
        default:
            return nil
        }
    }
}
