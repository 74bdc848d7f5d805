import Foundation
import Synchronization

/// A keep-alive HTTP connection of the blocking client: its transport and the bytes read past
/// the last answer (none, or it is not reused).
final class DirectHTTPConnection: @unchecked Sendable {
    let transport: DirectTransport
    /// It has served an answer before (``ClientConnection/Purpose`` explains stale reuse).
    var reused = false

    init(_ transport: DirectTransport) { self.transport = transport }
}

/// Idle connections of the blocking client. Nothing reads a parked connection: whether the
/// peer closed it is checked when it is taken (``DirectTransport/peerStillOpen``). Those that
/// outlive the idle time are closed when another is parked, or by a timer on a client loop
/// (one pending at a time, set for the oldest one's expiry), as the loop-driven pool's are: a
/// server should not see them linger until its own idle timeout.
final class DirectConnectionPool: KeepAlivePool<DirectHTTPConnection>, @unchecked Sendable {
    static let shared = DirectConnectionPool()

    private let sweepPending = Atomic<Bool>(false)

    /// Parks `connection` for the next request to `key`, or closes it when the origin has
    /// enough idle ones.
    func parkOrClose(_ connection: DirectHTTPConnection, key: String) {
        closeExpired()
        guard park(connection, key: key) else {
            connection.transport.close()
            return
        }
        scheduleSweep()
    }

    private func closeExpired() {
        for expired in removeExpired() { expired.transport.close() }
    }

    /// Sets a timer for when the oldest parked connection expires (unless one is pending).
    private func scheduleSweep() {
        guard let expiry = earliestExpiry,
            !sweepPending.exchange(true, ordering: .acquiringAndReleasing)
        else { return }
        // A little after, so that connection has expired by then.
        let delay = expiry &- min(expiry, monotonicNanos()) &+ 1_000_000
        _ = EventLoopGroup.clients.nextLoop().schedule(after: .nanoseconds(Int64(clamping: delay))) {
            [self] in
            sweepPending.store(false, ordering: .releasing)
            closeExpired()
            scheduleSweep()
        }
    }
}

/// HTTP requests on the caller's thread (``HTTPClient/send(_:url:headers:body:tls:timeout:)``):
/// the same keep-alive and retry rules as the loop-driven client (``HTTPClient``'s
/// documentation), with the socket read and written by the thread that waits for the answer.
enum DirectHTTP {
    /// Sends `request` (the whole request's bytes) to `url` and reads the answer.
    static func send(
        _ method: HTTPMethod, url: NetURL, request: [UInt8], poolKey: String?, tls: TLSClientConfiguration,
        timeout: Duration, limits: HTTPParserLimits = HTTPParserLimits(), pool: DirectConnectionPool = .shared
    ) throws(NetError) -> HTTPResponse {
        let headOnly = method == .head
        while let poolKey, let connection = pool.take(poolKey) {
            // Found dead before sending: the server never saw it; try the next one.
            guard connection.transport.peerStillOpen else {
                connection.transport.close()
                continue
            }
            switch exchange(
                connection, request: request, headOnly: headOnly, limits: limits, timeout: timeout,
                poolKey: poolKey, pool: pool)
            {
            case .success(let response): return response
            case .failure(let error, let staleReuse):
                // The server had closed it as the request went out: safe to send again only
                // when doing it twice cannot matter.
                guard staleReuse, method.isIdempotent else { throw error }
            }
            break
        }
        let transport = try DirectTransport.open(
            url, tls: tls, deadline: monotonicNanos() &+ timeout.nanoseconds, timeout: timeout)
        switch exchange(
            DirectHTTPConnection(transport), request: request, headOnly: headOnly, limits: limits,
            timeout: timeout, poolKey: poolKey, pool: pool)
        {
        case .success(let response): return response
        case .failure(let error, _): throw error
        }
    }

    private enum Outcome {
        case success(HTTPResponse)
        /// `staleReuse`: on a reused connection, before any byte of the answer came (see
        /// ``ClientConnection/Purpose``).
        case failure(NetError, staleReuse: Bool)
    }

    /// One request and its answer on `connection`; parks it afterwards when the exchange left
    /// it clean (and `poolKey` is set), else closes it.
    private static func exchange(
        _ connection: DirectHTTPConnection, request: [UInt8], headOnly: Bool, limits: HTTPParserLimits,
        timeout: Duration, poolKey: String?, pool: DirectConnectionPool
    ) -> Outcome {
        let transport = connection.transport
        let reused = connection.reused
        let deadline = monotonicNanos() &+ timeout.nanoseconds
        let timedOut = NetError(.timedOut, "No answer from \(transport.remote) within \(timeout)")
        var answer: [UInt8] = []
        func fail(_ error: NetError) -> Outcome {
            transport.close()
            return .failure(error, staleReuse: reused && answer.isEmpty && error.code != .timedOut)
        }
        do throws(NetError) {
            guard try transport.write(request, until: deadline) else { return fail(timedOut) }
            var ended = false
            while true {
                if ended && answer.isEmpty {
                    return fail(NetError(.connectionClosed, "Connection closed before a response"))
                }
                let parsed: (response: HTTPResponse, consumed: Int)?
                do throws(HTTPParseError) {
                    parsed = try HTTPResponseParser.parse(
                        answer, limits: limits, atEOF: ended, headOnly: headOnly)
                } catch {
                    return fail(NetError(.protocolError, "Malformed HTTP response: \(error.message)"))
                }
                if let (response, used) = parsed {
                    if let poolKey, !ended, used == answer.count, response.allowsReuse,
                        response.status.code >= 200
                    {
                        connection.reused = true
                        pool.parkOrClose(connection, key: poolKey)
                    } else {
                        transport.close()
                    }
                    return .success(response)
                }
                if ended { return fail(NetError(.connectionClosed, "Peer closed the connection")) }
                guard let count = try transport.read(appendingTo: &answer, until: deadline) else {
                    return fail(timedOut)
                }
                // The end of the stream ends a body delimited by the close: parse once more.
                if count == 0 { ended = true }
            }
        } catch {
            return fail(error)
        }
    }
}
