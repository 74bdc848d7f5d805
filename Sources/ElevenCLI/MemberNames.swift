import CLISupport
import Foundation
import SpaceModel

/// How members are named on the terminal, from a verified roster: each name made safe to print
/// (``SafeText``), and told apart when two members (current or former) go by the same name: the
/// owner is marked `Paul (owner)`, anyone else gets a short, stable mark from their signing key,
/// `Paul (3f9a)`, which `eleven members` also shows beside every member.
struct MemberNames {
    private var labels: [MemberID: String] = [:]

    init(_ roster: Roster) {
        // A member re-admitted with a new identity is one person: their former identity goes by
        // their current name, not as a second member of that name.
        var successor: [MemberID: MemberID] = [:]
        for (new, old) in roster.newIdentities { successor[old] = new }
        let everyone =
            Array(roster.members.values) + roster.formerMembers.values.filter { successor[$0.id] == nil }
        var byName: [String: [MemberRecord]] = [:]
        for record in everyone { byName[Self.collisionKey(Self.plain(record)), default: []].append(record) }
        for group in byName.values {
            guard group.count > 1 else {
                labels[group[0].id] = Self.plain(group[0])
                continue
            }
            // Four hex digits tell two people apart; more when two of them happen to share those.
            let short = Set(group.map { Self.mark($0, digits: 4) }).count == group.count
            for record in group {
                let mark = record.id == roster.owner ? "owner" : Self.mark(record, digits: short ? 4 : 12)
                labels[record.id] = "\(Self.plain(record)) (\(mark))"
            }
        }
        for old in successor.keys {
            var current = old
            var seen: Set<MemberID> = [old]
            while let next = successor[current], seen.insert(next).inserted { current = next }
            labels[old] = labels[current]
        }
    }

    /// The name to print for `id` (a current or former member), or `member ID` for someone the
    /// roster does not know.
    func label(_ id: MemberID) -> String {
        labels[id] ?? "member \(id)"
    }

    /// The key mark shown beside a member in `eleven members`.
    static func mark(_ record: MemberRecord, digits: Int = 4) -> String {
        record.keys.signing.bytes.prefix((digits + 1) / 2).map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }

    /// What a name is compared by: without case, and without a trailing `(…)`, so that someone
    /// named `Paul (owner)` or `Paul (3f9a)` is told apart from Paul too.
    private static func collisionKey(_ name: String) -> String {
        var key = name.lowercased()
        if key.hasSuffix(")"), let open = key.range(of: " (", options: .backwards) {
            key = String(key[..<open.lowerBound])
        }
        return key.trimmingCharacters(in: .whitespaces)
    }

    private static func plain(_ record: MemberRecord) -> String {
        record.name.isEmpty ? "member \(record.id)" : SafeText.line(record.name)
    }
}
