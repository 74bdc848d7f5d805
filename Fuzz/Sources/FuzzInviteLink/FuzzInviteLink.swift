import SpaceModel

/// Feeds arbitrary text to the invite-link reader (every format, short-code links included): it
/// must return or throw a precise error, never crash. A link it accepts, written again in the
/// current format, reads back to the same server, name, secret and branding key.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInviteLink(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    do {
        switch try InviteReference(parsing: text) {
        case .link(let link):
            let name = link.name ?? "x"
            guard let again = try? InviteLink(parsing: link.text(name: name)) else {
                preconditionFailure("a link written again does not read back")
            }
            precondition(again.server == link.server, "server changed")
            precondition(again.name == name, "name changed")
            precondition(again.secret == link.secret, "secret changed")
            precondition(again.brandingKey == link.brandingKey, "branding key changed")
            precondition(again.format == .current, "not written in the current format")
        case .shortCode(let short):
            precondition(!short.name.isEmpty && !short.server.isEmpty, "empty parts")
        }
    } catch {
        precondition(!error.message.isEmpty, "an error without a message")
    }
    return 0
}
