/// A body type that writes its own JSON, tried first by ``WireJSON/encode(_:)``: what it writes
/// is byte for byte what `JSONEncoder` (sorted keys, slashes as they are) writes for it. The
/// generic writer's `Codable` machinery (a container per object, a tree node per value) was
/// 2.9% of the bot's CPU on the bodies it sends for every joiner (docs/bot.md, "Session 14").
public protocol DirectJSONWritable {
    func writeJSON(into out: inout [UInt8])
}

// The bodies an attendant (the space's bot) sends and reads for every joiner: the joiner's key
// wraps (`POST …/wraps`), the note to the inviter (`POST …/inbox`), and the answers to those,
// to the admission (`POST …/members`) and to the thread list (`GET …/threads`). `WireJSONTests`
// compare each with `JSONEncoder` and `JSONDecoder`, on random and damaged bodies too.

extension SpaceWire.WrapsRequest: DirectJSONWritable {
    public func writeJSON(into out: inout [UInt8]) {
        out.reserveCapacity(out.count + 32 + wraps.count * 400 + (bundles?.count ?? 0) * 600)
        out.append(UInt8(ascii: "{"))
        if let bundles { WireJSON.writeBundles(bundles, into: &out) }
        out += #""wraps":["#.utf8
        for (index, wrap) in wraps.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            WireJSON.write(wrap, into: &out)
        }
        out += "]}".utf8
    }
}

/// A joiner's one sign-in per join (and the bot's own): keys sorted as `JSONEncoder` writes
/// them, absent optionals left out.
extension SpaceWire.SignInRequest: DirectJSONWritable {
    public func writeJSON(into out: inout [UInt8]) {
        out.reserveCapacity(out.count + 320 + (label?.utf8.count ?? 0))
        out.append(UInt8(ascii: "{"))
        if let eventAt {
            out += #""eventAt":"#.utf8
            out += String(eventAt).utf8
            out.append(UInt8(ascii: ","))
        }
        if let expiresIn {
            out += #""expiresIn":"#.utf8
            out += String(expiresIn).utf8
            out.append(UInt8(ascii: ","))
        }
        if let label {
            out += #""label":"#.utf8
            WriteNode.writeString(label, into: &out)
            out.append(UInt8(ascii: ","))
        }
        out += #""proof":{"challenge":"#.utf8
        WriteNode.writeString(Base64URL.encode(proof.challenge), into: &out)
        WireJSON.field("member", proof.member.base64URL, into: &out)
        WireJSON.field("signature", Base64URL.encode(proof.signature.bytes), into: &out)
        WireJSON.field("space", proof.space.base64URL, into: &out)
        out += "}}".utf8
    }
}

extension StrictJSONReader {
    /// The value of an object's one key (`{"key": value}`), read by `value`; nil on anything
    /// else (another key, the key missing or repeated).
    public mutating func onlyField<T>(_ keys: [[UInt8]], _ value: (inout Self) -> T?) -> T? {
        var read: T?
        var object = ObjectScan(keys: keys)
        while nextKey(&object) != nil {
            guard Self.got(&read, value(&self)) else { return nil }
        }
        return object.failed ? nil : read
    }
}

extension StrictJSONReader {
    private static let noteKeys = keys("space", "sender", "recipient", "sealed", "signature")

    /// An inbox note as its `Codable` writes it; every field checked as its decoder checks it
    /// (the server reads one from the bot per joiner).
    public mutating func inboxNote() -> InboxNote? {
        var space: SpaceID?
        var sender: MemberID?
        var recipient: MemberID?
        var sealed: [UInt8]?
        var signature: Signature?
        var object = ObjectScan(keys: Self.noteKeys)
        while let key = nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = Self.got(&space, identifier())
            case 1: read = Self.got(&sender, identifier())
            case 2: read = Self.got(&recipient, identifier())
            case 3: read = Self.got(&sealed, byteString())
            default: read = Self.got(&signature, signatureBytes())
            }
            if !read { return nil }
        }
        guard !object.failed, let space, let sender, let recipient, let sealed, let signature else {
            return nil
        }
        return try? InboxNote(
            space: space, sender: sender, recipient: recipient, sealed: sealed, signature: signature)
    }
}

extension WireJSON {
    /// An inbox note as its `Codable` writes it, keys sorted.
    public static func write(_ note: InboxNote, into out: inout [UInt8]) {
        out += #"{"recipient":"#.utf8
        WriteNode.writeString(note.recipient.base64URL, into: &out)
        field("sealed", Base64URL.encode(note.sealed), into: &out)
        field("sender", note.sender.base64URL, into: &out)
        field("signature", Base64URL.encode(note.signature.bytes), into: &out)
        field("space", note.space.base64URL, into: &out)
        out.append(UInt8(ascii: "}"))
    }
}

// The server's answers to an admission (`POST …/members`) and a sign-in (the token), written
// by hand too: the generic writer looked up its containers' generic metadata per object.

extension SpaceWire.AppendedEvents: DirectJSONWritable {
    public func writeJSON(into out: inout [UInt8]) {
        out += #"{"appended":["#.utf8
        for (index, event) in appended.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            event.writeJSON(into: &out)
        }
        out.append(UInt8(ascii: "]"))
        if let threadCount { WireJSON.field("threadCount", threadCount, into: &out) }
        if let wrapsStored { WireJSON.field("wrapsStored", wrapsStored, into: &out) }
        out.append(UInt8(ascii: "}"))
    }
}

extension SpaceWire.AppendedEvent: DirectJSONWritable {
    public func writeJSON(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let deviceToken {
            out += #""deviceToken":"#.utf8
            deviceToken.writeJSON(into: &out)
            out.append(UInt8(ascii: ","))
        }
        out += #""hash":"#.utf8
        WriteNode.writeString(hash, into: &out)
        if let messages { WireJSON.field("messages", messages, into: &out) }
        WireJSON.field("sequence", sequence, into: &out)
        if let signInChallenge { WireJSON.field("signInChallenge", signInChallenge, into: &out) }
        out.append(UInt8(ascii: "}"))
    }
}

extension SpaceWire.IssuedToken: DirectJSONWritable {
    public func writeJSON(into out: inout [UInt8]) {
        out += #"{"expiresAt":"#.utf8
        out += String(expiresAt).utf8
        WireJSON.field("id", id, into: &out)
        WireJSON.field("member", member.base64URL, into: &out)
        WireJSON.field("token", token, into: &out)
        out.append(UInt8(ascii: "}"))
    }
}

extension SpaceWire.AppendedEvents: StrictJSONReadable {
    private static let keys = StrictJSONReader.keys("appended", "wrapsStored", "threadCount")

    public static func read(_ reader: inout StrictJSONReader) -> Self? {
        var appended: [SpaceWire.AppendedEvent]?
        var stored: Int?
        var threads: Int?
        var object = StrictJSONReader.ObjectScan(keys: keys)
        while let key = reader.nextKey(&object) {
            let read =
                switch key {
                case 0: StrictJSONReader.got(&appended, reader.array { SpaceWire.AppendedEvent.read(&$0) })
                case 1: StrictJSONReader.got(&stored, reader.int())
                default: StrictJSONReader.got(&threads, reader.int())
                }
            if !read { return nil }
        }
        guard !object.failed, let appended else { return nil }
        return Self(appended: appended, wrapsStored: stored, threadCount: threads)
    }
}

extension SpaceWire.AppendedEvent: StrictJSONReadable {
    private static let keys = StrictJSONReader.keys(
        "sequence", "hash", "deviceToken", "signInChallenge", "messages")

    public static func read(_ reader: inout StrictJSONReader) -> Self? {
        var sequence: UInt64?
        var hash: String?
        var token: SpaceWire.IssuedToken?
        var challenge: String?
        var messages: Int?
        var object = StrictJSONReader.ObjectScan(keys: keys)
        while let key = reader.nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = StrictJSONReader.got(&sequence, reader.unsigned())
            case 1: read = StrictJSONReader.got(&hash, reader.string())
            // The token's fields are the sign-in answer's, without an event.
            case 2:
                read = StrictJSONReader.got(
                    &token, SpaceWire.SignedIn.read(&reader).flatMap { $0.event == nil ? $0.issued : nil })
            case 3: read = StrictJSONReader.got(&challenge, reader.string())
            default: read = StrictJSONReader.got(&messages, reader.int())
            }
            if !read { return nil }
        }
        guard !object.failed, let sequence, let hash else { return nil }
        return Self(
            sequence: sequence, hash: hash, deviceToken: token, signInChallenge: challenge, messages: messages
        )
    }
}

extension SpaceWire.StoredCount: StrictJSONReadable {
    private static let keys = StrictJSONReader.keys("stored")

    public static func read(_ reader: inout StrictJSONReader) -> Self? {
        reader.onlyField(keys) { $0.int() }.map { Self(stored: $0) }
    }
}

extension SpaceWire.ThreadList: StrictJSONReadable {
    private static let keys = StrictJSONReader.keys("threads")
    private static let threadKeys = StrictJSONReader.keys(
        "id", "createdBy", "createdAt", "metadata", "messages")

    public static func read(_ reader: inout StrictJSONReader) -> Self? {
        reader.onlyField(keys) { $0.array { thread(&$0) } }.map { Self(threads: $0) }
    }

    private static func thread(_ reader: inout StrictJSONReader) -> SpaceWire.ThreadInfo? {
        var id: ThreadID?
        var createdBy: MemberID?
        var createdAt: Int?
        var metadata: String?
        var messages: Int?
        var object = StrictJSONReader.ObjectScan(keys: threadKeys)
        while let key = reader.nextKey(&object) {
            let read: Bool
            switch key {
            case 0: read = StrictJSONReader.got(&id, reader.identifier())
            case 1: read = StrictJSONReader.got(&createdBy, reader.identifier())
            case 2: read = StrictJSONReader.got(&createdAt, reader.int())
            case 3: read = StrictJSONReader.got(&metadata, reader.string())
            default: read = StrictJSONReader.got(&messages, reader.int())
            }
            if !read { return nil }
        }
        guard !object.failed, let id, let createdBy, let createdAt else { return nil }
        return SpaceWire.ThreadInfo(
            id: id, createdBy: createdBy, createdAt: Int64(createdAt), metadata: metadata, messages: messages)
    }
}
