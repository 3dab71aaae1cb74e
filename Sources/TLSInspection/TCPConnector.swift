import Glibc
import POSIX

/// Why a probe could not complete, in words a user can act on.
package enum ProbeFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The name did not resolve.
    case resolve(host: String, reason: String)
    /// No address accepted the connection.
    case connect(host: String, port: UInt16, reason: String)
    /// The TLS handshake failed; the reason in OpenSSL's words, with the alert when one came.
    case handshake(reason: String)
    /// A stage took longer than the probe's time limit.
    case timeout(stage: String)
    /// The server answered the ClientHello with bytes that are not TLS records (an HTTP response,
    /// an SMTP banner): it speaks cleartext on this port.
    case notTLS(reason: String)
    /// The handshake was not complete by its deadline; the reason says how far it got
    /// ("upstream sent no TLS handshake in 10 s").
    case deadline(reason: String)
    /// The connection failed under the handshake (a reset): no verdict, and no retry as another client.
    case connectionLost(reason: String)
    /// No probe was made: the proxy's limit on TLS handshakes under way (in all, or to this
    /// upstream) was reached. Nothing was sent upstream, and nothing is known of the server.
    case probeLimit(reason: String)
    /// No probe could be made for want of something local: memory for a TLS session, a socket
    /// option. Nothing is known of the server.
    case localResource(reason: String)

    /// Whether time ran out (a gateway timeout, 504), rather than something failing (502).
    package var isTimeout: Bool {
        switch self {
        case .timeout, .deadline: true
        default: false
        }
    }

    package var description: String {
        switch self {
        case .resolve(let host, let reason): "cannot resolve \(host): \(reason)"
        case .connect(let host, let port, let reason): "cannot connect to \(host) port \(port): \(reason)"
        case .handshake(let reason): "TLS handshake failed: \(reason)"
        case .timeout(let stage): "timed out during \(stage)"
        case .notTLS(let reason): "the server does not speak TLS: \(reason)"
        case .deadline(let reason): reason
        case .connectionLost(let reason): "the connection failed during the TLS handshake: \(reason)"
        case .probeLimit(let reason), .localResource(let reason): "not probed: \(reason)"
        }
    }
}

/// A connected TCP socket for one probe: the single owner of the descriptor, closed in `deinit`.
///
/// Probes are blocking by design (with time limits on every stage): they run on probe threads,
/// never on an event loop.
final class TCPConnection {
    let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    /// Resolves `host` (from `hosts` first, then the system resolver) and connects to the first
    /// address that answers within `timeout`.
    static func connect(host: String, port: UInt16, hosts: HostsTable? = nil, timeout: Duration) throws(ProbeFailure)
        -> TCPConnection
    {
        var lastError = "no address"
        for name in hosts?.addresses(for: host) ?? [host] {
            do {
                return try connect(
                    resolving: name, displayName: host, port: port, timeout: timeout, lastError: &lastError)
            } catch {
                if case .connect = error { continue }
                throw error
            }
        }
        throw .connect(host: host, port: port, reason: lastError)
    }

    private static func connect(
        resolving name: String, displayName host: String, port: UInt16, timeout: Duration, lastError: inout String
    ) throws(ProbeFailure) -> TCPConnection {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(name, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw .resolve(host: host, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            entry = address.pointee.ai_next
            // Close-on-exec, as every socket the event loops open: a probe running in a process that
            // starts others (atsproxyctl's tests, a future hook) must not hand its connection on.
            let descriptor = socket(
                address.pointee.ai_family, address.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue),
                address.pointee.ai_protocol)
            guard descriptor >= 0 else {
                lastError = String(cString: strerror(errno))
                continue
            }
            let connection = TCPConnection(descriptor: descriptor)
            do {
                try connection.connect(
                    to: address.pointee.ai_addr, length: address.pointee.ai_addrlen, timeout: timeout)
                try connection.setBlockingTimeouts(timeout)
                return connection
            } catch let reason {
                if case .timeout = reason { throw reason }
                // The socket-level reason ("Connection refused"), not the handshake wording.
                if case .handshake(let text) = reason { lastError = text } else { lastError = reason.description }
            }
        }
        throw .connect(host: host, port: port, reason: lastError)
    }

    /// A non-blocking connect bounded by `poll`, so an unreachable host costs at most `timeout`.
    private func connect(to address: UnsafeMutablePointer<sockaddr>?, length: socklen_t, timeout: Duration)
        throws(ProbeFailure)
    {
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        if Glibc.connect(descriptor, address, length) == 0 { return }
        guard errno == EINPROGRESS else { throw .handshake(reason: String(cString: strerror(errno))) }
        var pollEntry = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        let ready = poll(&pollEntry, 1, TCPConnection.milliseconds(timeout))
        guard ready > 0 else { throw .timeout(stage: "connect") }
        var socketError: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &socketError, &size)
        guard socketError == 0 else { throw .handshake(reason: String(cString: strerror(socketError))) }
        _ = fcntl(descriptor, F_SETFL, flags)
    }

    /// Blocking reads and writes that give up after `timeout` (the handshake's limit).
    private func setBlockingTimeouts(_ timeout: Duration) throws(ProbeFailure) {
        var limit = timeval(duration: .milliseconds(TCPConnection.milliseconds(timeout)))
        let size = socklen_t(MemoryLayout<timeval>.size)
        guard setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, size) == 0,
            setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, size) == 0
        else { throw .localResource(reason: "cannot set socket time limits: \(Errno.message(errno))") }
    }

    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
