import SpaceModel

/// A stored full-length invite (`key_invites`).
struct KeyInviteRow {
    let id: KeyInviteID
    let space: SpaceID
    let shape: InviteShape
    let sealed: [UInt8]
    let verifier: [UInt8]
    let inviter: MemberID?
    let inviteMember: MemberID?
    let rights: MemberRights
    let personName: String?
    let spaceName: String?
    let sealedBranding: [UInt8]?
    /// The invitee's and inviter's names, sealed under the link (``InviteNames``).
    let sealedNames: [UInt8]?
    let createdAt: Int64
    let expiresAt: Int64
    let usesLeft: Int
}

extension SpaceStore {
    func insertKeyInvite(_ row: KeyInviteRow) throws {
        try db.query(
            """
            INSERT INTO key_invites (id, space_id, shape, sealed, verifier, inviter, invite_member, rights,
                person_name, space_name, sealed_branding, created_at, expires_at, uses_left, sealed_names)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .blob(row.id.bytes), .blob(row.space.bytes), .text(row.shape.rawValue), .blob(row.sealed),
                .blob(row.verifier), row.inviter.map { .blob($0.bytes) } ?? .null,
                row.inviteMember.map { .blob($0.bytes) } ?? .null,
                .integer(Int64(bitPattern: row.rights.rawValue)), row.personName.map { .text($0) } ?? .null,
                row.spaceName.map { .text($0) } ?? .null, row.sealedBranding.map { .blob($0) } ?? .null,
                .integer(row.createdAt), .integer(row.expiresAt), .integer(Int64(row.usesLeft)),
                row.sealedNames.map { .blob($0) } ?? .null,
            ])
    }

    func keyInvite(_ id: KeyInviteID) throws -> KeyInviteRow? {
        let rows = try db.query(
            """
            SELECT space_id, shape, sealed, verifier, inviter, invite_member, rights, person_name, space_name,
                sealed_branding, created_at, expires_at, uses_left, sealed_names
            FROM key_invites WHERE id = ?
            """, [.blob(id.bytes)])
        guard let row = rows.first, let shape = InviteShape(rawValue: row[1].text ?? "") else { return nil }
        return KeyInviteRow(
            id: id, space: try SpaceID(bytes: row[0].blob ?? []), shape: shape, sealed: row[2].blob ?? [],
            verifier: row[3].blob ?? [], inviter: try row[4].blob.map { try MemberID(bytes: $0) },
            inviteMember: try row[5].blob.map { try MemberID(bytes: $0) },
            rights: MemberRights(rawValue: UInt64(bitPattern: row[6].integer ?? 0)), personName: row[7].text,
            spaceName: row[8].text, sealedBranding: row[9].blob, sealedNames: row[13].blob,
            createdAt: row[10].integer ?? 0,
            expiresAt: row[11].integer ?? 0, usesLeft: Int(row[12].integer ?? 0))
    }

    /// Counts one use; the last use also forgets the sealed payload.
    func useKeyInvite(_ id: KeyInviteID) throws {
        try db.query(
            """
            UPDATE key_invites SET uses_left = uses_left - 1,
                sealed = CASE WHEN uses_left = 1 THEN X'' ELSE sealed END
            WHERE id = ? AND uses_left > 0
            """, [.blob(id.bytes)])
    }

    /// Forgets the sealed payloads of invites expired by `now`: nobody can claim them, and a later
    /// leak of a link together with the database then opens nothing. The rows stay, so the
    /// invites still answer `invite_expired` and their signers can be retired.
    func forgetExpiredKeyInvitePayloads(now: Int64) throws {
        try db.query(
            "UPDATE key_invites SET sealed = X'' WHERE expires_at <= ? AND length(sealed) > 0",
            [.integer(now)])
    }

    /// The member and DM invites of a space whose signer may still be in the roster: their
    /// signer, inviter, expiry and uses left.
    func inviteSigners(space: SpaceID) throws -> [(
        signer: MemberID, inviter: MemberID?, expiresAt: Int64, usesLeft: Int
    )] {
        try db.query(
            """
            SELECT invite_member, inviter, expires_at, uses_left FROM key_invites
            WHERE space_id = ? AND invite_member IS NOT NULL ORDER BY created_at
            """, [.blob(space.bytes)]
        ).map { row in
            (
                try MemberID(bytes: row[0].blob ?? []), try row[1].blob.map { try MemberID(bytes: $0) },
                row[2].integer ?? 0, Int(row[3].integer ?? 0)
            )
        }
    }

    /// Whether `member` is the signer of a full-length invite (it cannot sign in).
    func isInviteMember(space: SpaceID, member: MemberID) throws -> Bool {
        try !db.query(
            "SELECT 1 FROM key_invites WHERE space_id = ? AND invite_member = ? LIMIT 1",
            [.blob(space.bytes), .blob(member.bytes)]
        ).isEmpty
    }
}
