import ClientCore

/// Feeds arbitrary bytes to the invite-link reader. Must never crash; a full-length link it
/// accepts must re-mint (current format) to text that reads back as the same invite.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInviteLinks(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    guard case .link(let link) = try? InviteReference(parsing: text) else { return 0 }
    let minted = link.text()
    guard case .link(let back) = try? InviteReference(parsing: minted) else {
        preconditionFailure("a re-minted link does not parse")
    }
    precondition(back.server == link.server, "server changed in a round trip")
    precondition(back.secret == link.secret, "secret changed in a round trip")
    precondition(back.brandingKey == link.brandingKey, "branding key changed in a round trip")
    precondition(back.name == (link.name ?? "invite"), "name changed in a round trip")
    return 0
}
