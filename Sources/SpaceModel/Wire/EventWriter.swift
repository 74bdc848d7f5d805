// The stored text of a membership event, written field by field: the server writes one per
// appended event, and through `Codable` (a container per object, a tree node per value, a
// witness call per field) it was about 3% of the space server's CPU (docs/bot.md, session 16).
// The bytes are those `SpaceWire.EventList.encoder` writes (keys sorted by their UTF-8 bytes,
// `JSONEncoder`'s escapes, slashes as they are): `EventWriterTests` compare the two on every kind
// of event with random fields.
extension WireJSON {
    /// `event` as ``SpaceWire/EventList/encoder`` writes it.
    static func write(_ event: MembershipEvent, into out: inout [UInt8]) {
        out.reserveCapacity(out.count + 1024)
        out.append(UInt8(ascii: "{"))
        // The keys before "previous" are the optional ones, each followed by a comma.
        if let invite = event.invite {
            out += #""invite":"#.utf8
            write(invite, into: &out)
            out.append(UInt8(ascii: ","))
        }
        switch event.change {
        case .spaceCreated(let member), .memberAdded(let member):
            out += #""member":"#.utf8
            write(member, into: &out)
            out.append(UInt8(ascii: ","))
        case .memberRemoved(let id), .rightsChanged(let id, _), .memberRenamed(let id, _):
            memberID(id, into: &out)
        case .memberRekeyed(let old, let member):
            out += #""member":"#.utf8
            write(member, into: &out)
            out.append(UInt8(ascii: ","))
            memberID(old, into: &out)
        }
        out += #""previous":"#.utf8
        WriteNode.writeString(Base64URL.encode(event.previous.bytes), into: &out)
        switch event.change {
        case .rightsChanged(_, let rights):
            out += #","rights":"#.utf8
            write(rights, into: &out)
        case .memberRenamed(_, let sealed):
            out += #","sealedName":"#.utf8
            write(sealed, into: &out)
        default: break
        }
        out += #","sequence":"#.utf8
        out += String(event.sequence).utf8
        field("signature", Base64URL.encode(event.signature.bytes), into: &out)
        field("signer", event.signer.base64URL, into: &out)
        field("space", event.space.base64URL, into: &out)
        field("type", event.change.tag, into: &out)
        out += #","version":"#.utf8
        out += String(MembershipEvent.jsonVersion).utf8
        out.append(UInt8(ascii: "}"))
    }

    private static func memberID(_ id: MemberID, into out: inout [UInt8]) {
        out += #""memberID":"#.utf8
        WriteNode.writeString(id.base64URL, into: &out)
        out.append(UInt8(ascii: ","))
    }

    static func write(_ member: MemberRecord, into out: inout [UInt8]) {
        out += #"{"id":"#.utf8
        WriteNode.writeString(member.id.base64URL, into: &out)
        out += #","keys":{"encryption":"#.utf8
        WriteNode.writeString(Base64URL.encode(member.keys.encryption.bytes), into: &out)
        field("signing", Base64URL.encode(member.keys.signing.bytes), into: &out)
        out.append(UInt8(ascii: "}"))
        field("name", member.nameInClear, into: &out)
        out += #","rights":"#.utf8
        write(member.rights, into: &out)
        if let sealed = member.sealedName {
            out += #","sealedName":"#.utf8
            write(sealed, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    static func write(_ rights: MemberRights, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (index, name) in rights.names.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            WriteNode.writeString(name, into: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    static func write(_ sealed: SealedName, into out: inout [UInt8]) {
        out += #"{"box":"#.utf8
        WriteNode.writeString(Base64URL.encode(sealed.box), into: &out)
        field("thread", sealed.thread.base64URL, into: &out)
        out.append(UInt8(ascii: "}"))
    }

    static func write(_ invite: SignedInvite, into out: inout [UInt8]) {
        out += #"{"created_at":"#.utf8
        out += String(invite.createdAt).utf8
        out += #","expires_at":"#.utf8
        out += String(invite.expiresAt).utf8
        field("inviter", invite.inviter.base64URL, into: &out)
        field("inviter_key", invite.inviterKey, into: &out)
        field("nameplate", invite.nameplate, into: &out)
        field("signature", invite.signature, into: &out)
        field("space", invite.space.base64URL, into: &out)
        out += #","uses":"#.utf8
        out += String(invite.uses).utf8
        out += #","v":"#.utf8
        out += String(invite.v).utf8
        out.append(UInt8(ascii: "}"))
    }
}
