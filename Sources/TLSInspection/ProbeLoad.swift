internal import COpenSSL
import Glibc
import POSIX

/// Why a request sent after a connection opened (and, for https, after the handshake) got no
/// complete response head.
package struct LoadFailure: Error, Sendable, Equatable, CustomStringConvertible {
    package var reason: String
    package var description: String { reason }
}

/// What loading one URL over one connection showed: the handshake for an https URL (nil for http),
/// and the response head, when the connection (and the handshake) got that far.
package struct LoadOutcome: Sendable {
    package var handshake: ProbeOutcome?
    /// The response head's bytes, through its blank line; nil when no request was sent.
    package var response: Result<[UInt8], LoadFailure>?
}

/// `atsproxyctl diagnose` loads the URL, as nscurl does: a request after the handshake, whose
/// response (a redirect, say) decides as much as the handshake. Blocking, with the probe's time
/// limit on every read and write; never on an event loop.
package enum ProbeLoad {
    /// The most of a response head read: a larger one is a failure, as it is for URLSession.
    static let maximumHead = 64 * 1024

    /// Connects, handshakes as `context` and, when the handshake completed, sends `request` and
    /// reads the response head.
    package static func https(
        host: String, port: UInt16, serverName: String?, context: TLSClientContext, hosts: HostsTable? = nil,
        timeout: Duration = .seconds(10), request: [UInt8]
    ) -> LoadOutcome {
        let connection: TCPConnection
        do {
            connection = try TCPConnection.connect(host: host, port: port, hosts: hosts, timeout: timeout)
        } catch {
            return LoadOutcome(
                handshake: ProbeOutcome(observed: nil, failure: error, peerCertificates: []), response: nil)
        }
        guard let session = BlockingHandshake(context: context, connection: connection, serverName: serverName) else {
            let failure = ProbeFailure.localResource(reason: TLSError.drainingQueue("SSL_new").description)
            return LoadOutcome(
                handshake: ProbeOutcome(observed: nil, failure: failure, peerCertificates: []), response: nil)
        }
        let handshake = session.handshake(now: Int64(time(nil)))
        guard handshake.observed != nil else { return LoadOutcome(handshake: handshake, response: nil) }
        return LoadOutcome(handshake: handshake, response: session.exchange(request))
    }

    /// Connects and sends `request` in cleartext, then reads the response head.
    package static func http(
        host: String, port: UInt16, hosts: HostsTable? = nil, timeout: Duration = .seconds(10), request: [UInt8]
    ) throws(ProbeFailure) -> Result<[UInt8], LoadFailure> {
        let connection = try TCPConnection.connect(host: host, port: port, hosts: hosts, timeout: timeout)
        return readHead(afterSending: request) { buffer, count in
            send(connection.descriptor, buffer, count, Int32(MSG_NOSIGNAL))
        } receive: { buffer, count in
            recv(connection.descriptor, buffer, count, 0)
        }
    }

    /// Writes all of `request` through `send`, then reads through `receive` until a blank line ends
    /// the response head. Each returns what its system call does (a count, 0 at the end, -1).
    static func readHead(
        afterSending request: [UInt8], send: (UnsafeRawPointer, Int) -> Int,
        receive: (UnsafeMutableRawPointer, Int) -> Int
    ) -> Result<[UInt8], LoadFailure> {
        let sent = request.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let count = send(bytes.baseAddress! + offset, bytes.count - offset)
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        guard sent else { return .failure(LoadFailure(reason: "sending the request failed: " + lastError())) }
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let blankLine: [UInt8] = [13, 10, 13, 10]
        while head.count < maximumHead {
            let count = chunk.withUnsafeMutableBytes { receive($0.baseAddress!, $0.count) }
            guard count > 0 else {
                let why = count == 0 ? "the server closed the connection" : lastError()
                return .failure(LoadFailure(reason: "\(why) before a complete response head (\(head.count) bytes)"))
            }
            // Search from just before the new bytes: the blank line may straddle two reads.
            let from = max(0, head.count - 3)
            head += chunk[0..<count]
            if let end = head[from...].firstRange(of: blankLine) { return .success(Array(head[..<end.upperBound])) }
        }
        return .failure(LoadFailure(reason: "the response head is larger than \(maximumHead / 1024) KiB"))
    }

    private static func lastError() -> String {
        let code = errno
        return Errno.wouldBlock(code) ? "timed out" : Errno.message(code)
    }
}

extension BlockingHandshake {
    /// The request over the completed handshake, and the response head.
    func exchange(_ request: [UInt8]) -> Result<[UInt8], LoadFailure> {
        ERR_clear_error()
        defer { ERR_clear_error() }
        return ProbeLoad.readHead(afterSending: request) { buffer, count in
            Int(SSL_write(ssl, buffer, Int32(clamping: count)))
        } receive: { buffer, count in
            Int(SSL_read(ssl, buffer, Int32(clamping: count)))
        }
    }
}
