import EventLoop
import Glibc
import TLSInspection

/// Why a request sent over an open connection (and, for https, a completed handshake) got no
/// complete response head.
package struct LoadFailure: Error, Sendable, Equatable, CustomStringConvertible {
    package var reason: String
    package var description: String { reason }

    package init(reason: String) { self.reason = reason }
}

/// One request and its response head, on the loop, over a connection a probe opened: in
/// cleartext, or over the TLS session of a completed ``HandshakeProbe``. What `atsproxyctl
/// diagnose` loads after a verdict, as nscurl loads the URL: the response (a redirect, say)
/// decides as much as the handshake.
///
/// Each read and write must progress within `limit`. The run owns the connection and closes it
/// when it ends; the completion runs once, from the loop, unless the run is cancelled first.
final class ResponseHeadRun {
    /// The most of a response head read: a larger one is a failure, as it is for URLSession.
    static let maximumHead = 64 * 1024

    private let connection: SocketStream
    private let tls: TLSStream?
    private let limit: Duration
    private var head: [UInt8] = []
    private var completion: ((Result<[UInt8], LoadFailure>) -> Void)?

    /// - Parameter tls: the session over `connection`, for an https load; nil for cleartext.
    init(connection: SocketStream, tls: TLSStream?, limit: Duration) {
        self.connection = connection
        self.tls = tls
        self.limit = limit
    }

    /// Sends `request` and reads until the blank line that ends the response head.
    func start(request: [UInt8], completion: @escaping (Result<[UInt8], LoadFailure>) -> Void) {
        self.completion = completion
        connection.setTimeouts(read: limit, write: limit)
        connection.onReadable = { [unowned self] _ in readAvailable() }
        connection.onEvent = { [unowned self] _, event in
            switch event {
            // The end is in the input now: a TLS session reads it as the server's close.
            case .endOfStream: readAvailable()
            case .error, .timeout: fail(event.description)
            case .connected: break
            }
        }
        if let tls {
            var failure: TLSStreamError?
            request.withUnsafeBytes { bytes in
                do throws(TLSStreamError) { try tls.write(bytes) } catch { failure = error }
            }
            if let failure { return fail("sending the request failed: \(failure.reason)", counting: false) }
        } else {
            connection.write(request)
        }
        connection.setReading(true)
        readAvailable()
    }

    func cancel() {
        completion = nil
        connection.close()
    }

    private func readAvailable() {
        guard completion != nil else { return }
        var ended = false
        if let tls {
            var chunk = [UInt8](repeating: 0, count: 16 * 1024)
            reading: while true {
                var read = TLSStream.PlaintextRead.needsBytes
                var failure: TLSStreamError?
                chunk.withUnsafeMutableBytes { buffer in
                    do throws(TLSStreamError) { read = try tls.read(into: buffer) } catch { failure = error }
                }
                if let failure { return fail(failure.reason) }
                switch read {
                case .bytes(let count): if append(chunk[0..<count]) { return }
                case .needsBytes: break reading
                case .ended:
                    ended = true
                    break reading
                }
            }
        } else {
            if append(connection.read(maximum: Self.maximumHead)[...]) { return }
            ended = connection.inputEnded
        }
        if ended { fail("the server closed the connection") }
    }

    /// Adds `bytes` to the head; true once the run has finished (the head is whole, or too large).
    private func append(_ bytes: ArraySlice<UInt8>) -> Bool {
        // Search from just before the new bytes: the blank line may straddle two reads.
        let from = max(0, head.count - 3)
        head += bytes
        if let end = head[from...].firstRange(of: [13, 10, 13, 10] as [UInt8]) {
            finish(.success(Array(head[..<end.upperBound])))
            return true
        }
        guard head.count < Self.maximumHead else {
            fail("the response head is larger than \(Self.maximumHead / 1024) KiB", counting: false)
            return true
        }
        return false
    }

    /// Fails with `why`, saying how much of a head had come when `counting`.
    private func fail(_ why: String, counting: Bool = true) {
        finish(
            .failure(
                LoadFailure(reason: counting ? "\(why) before a complete response head (\(head.count) bytes)" : why)))
    }

    private func finish(_ result: Result<[UInt8], LoadFailure>) {
        let completion = self.completion
        self.completion = nil
        connection.close()
        completion?(result)
    }
}
