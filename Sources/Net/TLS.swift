import COpenSSL
import Foundation

/// Certificate and key files for a TLS server (PEM).
public struct TLSServerConfiguration: Sendable {
    /// The leaf certificate followed by any intermediates.
    public var certificateChainFile: String
    /// The private key of the leaf certificate.
    public var privateKeyFile: String
    public init(certificateChainFile: String, privateKeyFile: String) {
        self.certificateChainFile = certificateChainFile
        self.privateKeyFile = privateKeyFile
    }
}

/// How a TLS client checks the server.
public struct TLSClientConfiguration: Sendable {
    /// A PEM file of trusted CAs used instead of the system store (pinning, tests).
    public var caFile: String?
    /// Verify the certificate chain and host name (never turn off outside tests).
    public var verifyPeer = true
    public init(caFile: String? = nil) { self.caFile = caFile }
}

private func tlsErrorString() -> String {
    var messages: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, 256)
        messages.append(
            String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return messages.isEmpty ? "unknown TLS error" : messages.joined(separator: "; ")
}

/// An `SSL_CTX`, immutable once built (reload builds a new one).
final class TLSContext: @unchecked Sendable {
    let ctx: OpaquePointer
    let isServer: Bool

    private init(ctx: OpaquePointer, isServer: Bool) {
        self.ctx = ctx
        self.isServer = isServer
    }

    deinit { SSL_CTX_free(ctx) }

    private static func common(_ ctx: OpaquePointer) {
        _ = shim_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)
        _ = shim_SSL_CTX_set_mode(
            ctx,
            Int(
                SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS
            ))
        // SSL_OP_NO_RENEGOTIATION (a macro Swift cannot import): bit 30.
        _ = SSL_CTX_set_options(ctx, UInt64(1) << 30)
    }

    static func server(_ config: TLSServerConfiguration) throws(NetError) -> TLSContext {
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else {
            throw NetError(.tlsError, "Cannot create a TLS context: \(tlsErrorString())")
        }
        let context = TLSContext(ctx: ctx, isServer: true)
        common(ctx)
        guard SSL_CTX_use_certificate_chain_file(ctx, config.certificateChainFile) == 1 else {
            throw NetError(
                .tlsError, "Cannot load certificate chain \(config.certificateChainFile): \(tlsErrorString())"
            )
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, config.privateKeyFile, SSL_FILETYPE_PEM) == 1 else {
            throw NetError(.tlsError, "Cannot load private key \(config.privateKeyFile): \(tlsErrorString())")
        }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            throw NetError(.tlsError, "Private key does not match the certificate: \(tlsErrorString())")
        }
        return context
    }

    static func client(_ config: TLSClientConfiguration) throws(NetError) -> TLSContext {
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            throw NetError(.tlsError, "Cannot create a TLS context: \(tlsErrorString())")
        }
        let context = TLSContext(ctx: ctx, isServer: false)
        common(ctx)
        if config.verifyPeer {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
            if let caFile = config.caFile {
                guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else {
                    throw NetError(.tlsError, "Cannot load CA file \(caFile): \(tlsErrorString())")
                }
            } else {
                guard SSL_CTX_set_default_verify_paths(ctx) == 1 else {
                    throw NetError(.tlsError, "Cannot load the system CA store: \(tlsErrorString())")
                }
            }
        } else {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        }
        return context
    }
}

/// One non-blocking TLS session over a socket (`SSL_set_fd`); WANT_READ/WANT_WRITE are
/// reported to the connection, which waits on the loop.
final class TLSStream {
    enum Outcome {
        case done(Int)
        case wantRead
        case wantWrite
        case eof
        case failed(String)
    }

    let ssl: OpaquePointer
    private(set) var handshakeComplete = false

    init(context: TLSContext, fd: Int32, hostName: String?) throws(NetError) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.ctx) else {
            throw NetError(.tlsError, "Cannot create a TLS session: \(tlsErrorString())")
        }
        self.ssl = ssl
        SSL_set_fd(ssl, fd)
        if context.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let hostName {
                if IPAddress(hostName) != nil {
                    let param = SSL_get0_param(ssl)
                    _ = X509_VERIFY_PARAM_set1_ip_asc(param, hostName)
                } else {
                    _ = shim_SSL_set_tlsext_host_name(ssl, hostName)
                    _ = SSL_set1_host(ssl, hostName)
                }
            }
        }
    }

    deinit { SSL_free(ssl) }

    private func outcome(_ rc: Int32) -> Outcome {
        let err = SSL_get_error(ssl, rc)
        switch err {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .eof
        case SSL_ERROR_SYSCALL:
            let queued = tlsErrorString()
            return ERR_peek_error() == 0 && errno == 0 ? .eof : .failed("TLS I/O error: \(queued)")
        default:
            var message = tlsErrorString()
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                let reason = X509_verify_cert_error_string(verify).map { String(cString: $0) } ?? "?"
                message = "certificate verification failed: \(reason)"
            }
            return .failed(message)
        }
    }

    func handshake() -> Outcome {
        ERR_clear_error()
        errno = 0
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            handshakeComplete = true
            return .done(0)
        }
        return outcome(rc)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Outcome {
        ERR_clear_error()
        errno = 0
        let rc = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if rc > 0 { return .done(Int(rc)) }
        return outcome(rc)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        if bytes.isEmpty { return .done(0) }
        ERR_clear_error()
        errno = 0
        let rc = SSL_write(ssl, bytes.baseAddress, Int32(min(bytes.count, Int(Int32.max))))
        if rc > 0 { return .done(Int(rc)) }
        return outcome(rc)
    }

    /// Sends close_notify (best effort, non-blocking).
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
    }

    var protocolVersion: String {
        String(cString: SSL_get_version(ssl))
    }
}
