import Net

/// Feeds arbitrary bytes to the HTTP request and response parsers: they must return or throw,
/// never crash, and never claim to consume more than they were given. Every prefix of an
/// accepted request must not be accepted with a different length.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    var limits = HTTPParserLimits()
    limits.maxBodyBytes = 4096
    limits.maxHeaderBytes = 2048
    limits.maxHeaderCount = 20
    limits.maxRequestLineBytes = 512
    if let (request, consumed) = try? HTTPRequestParser.parse(bytes, limits: limits) {
        precondition(consumed > 0 && consumed <= count, "consumed out of range")
        precondition(request.body.count <= limits.maxBodyBytes, "body over the limit")
        precondition(request.headers.fields.count <= limits.maxHeaderCount, "too many headers")
        // Re-parsing exactly the consumed bytes gives the same request.
        let again = try? HTTPRequestParser.parse(
            UnsafeRawBufferPointer(rebasing: bytes[0..<consumed]), limits: limits)
        precondition(again?.consumed == consumed, "not stable under truncation")
        _ = request.queryParameters
        _ = request.keepAlive
    }
    for atEOF in [false, true] {
        if let (_, consumed) = try? HTTPResponseParser.parse(bytes, limits: limits, atEOF: atEOF) {
            precondition(consumed <= count, "response consumed out of range")
        }
    }
    return 0
}
