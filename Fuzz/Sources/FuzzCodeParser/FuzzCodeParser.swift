import WordCodes

/// Feeds arbitrary bytes to the code parser as typed text. Must never crash; a code it accepts
/// must print in canonical form and parse back, unchanged and with nothing corrected.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCodeParser(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    guard let parsed = try? CodeParser.parse(text) else { return 0 }
    let canonical = parsed.code.description
    precondition(canonical.utf8.count <= CodeParser.maximumInputBytes, "canonical form too long")
    guard let again = try? CodeParser.parse(canonical) else {
        preconditionFailure("the canonical form of an accepted code does not parse")
    }
    precondition(again.code == parsed.code, "canonical form parses to another code")
    precondition(again.corrections.isEmpty, "the canonical form needed corrections")
    return 0
}
