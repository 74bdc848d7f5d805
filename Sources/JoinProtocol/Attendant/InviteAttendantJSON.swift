import Mailbox

extension InviteAttendant {
    /// The machine as its synthesized `Codable` writes it (``StateJSONWriter``), without
    /// Foundation's encoder: the bot saves it at nearly every step of every join.
    public func writeJSON(into out: inout StateJSONWriter) {
        writeJSON(into: &out, seenSides: nil)
    }

    /// ``writeJSON(into:)`` with ``seenSides`` as ``seenSidesJSON()`` wrote them for these very
    /// sides: an owner that writes the machine at every step keeps them (they change only when
    /// a joiner speaks, and are most of the machine's bytes on an invite of many uses).
    public func writeJSON(into out: inout StateJSONWriter, seenSides encoded: [UInt8]?) {
        out.object { out in
            out.object("policy") { out in
                out.integer("uses", policy.uses)
                out.integer("maxFailures", policy.maxFailures)
                out.integer("expiresAt", policy.expiresAt)
            }
            out.object("state") { state.writeJSON(into: &$0) }
            out.integer("taken", taken)
            out.integer("failures", failures)
            if let encoded {
                out.raw("seenSides", encoded)
            } else if let sides = seenSidesJSON() {
                out.raw("seenSides", sides)
            }
        }
    }

    /// The JSON of ``seenSides`` (nil when there are none to write).
    public func seenSidesJSON() -> [UInt8]? {
        guard let seenSides else { return nil }
        var out = StateJSONWriter(capacity: 2 + 24 * seenSides.count)
        out.array { out in
            for side in seenSides {
                out.element()
                out.wrapped(side.value)
            }
        }
        return out.bytes
    }
}

extension InviteAttendant.State {
    /// The members of the synthesized `Codable` form: `{"case":{"label":…}}`, `_0` for an
    /// unlabelled value, optionals left out when nil.
    func writeJSON(into out: inout StateJSONWriter) {
        switch self {
        case .allocating:
            out.object("allocating") { _ in }
        case .preparing(let nameplate, let use):
            out.object("preparing") { out in
                out.wrapped("nameplate", nameplate.value)
                out.integer("use", use)
            }
        case .attending(let nameplate, let use, let connection, let attempt):
            out.object("attending") { out in
                Self.writeUse(nameplate, use, connection, into: &out)
                out.bool("attempt", attempt)
            }
        case .admitting(let nameplate, let use, let connection, let joinerKeys):
            out.object("admitting") { out in
                Self.writeUse(nameplate, use, connection, into: &out)
                out.string("joinerKeys", joinerKeys.text)
            }
        case .ended(let ending, let nameplate):
            out.object("ended") { out in
                out.string("_0", ending.rawValue)
                if let nameplate { out.wrapped("nameplate", nameplate.value) }
            }
        }
    }

    /// The members an attended use's states share.
    private static func writeUse(
        _ nameplate: Rendezvous.Nameplate, _ use: Int, _ connection: RendezvousMachine,
        into out: inout StateJSONWriter
    ) {
        out.wrapped("nameplate", nameplate.value)
        out.integer("use", use)
        out.key("connection")
        connection.writeJSON(into: &out)
    }
}
