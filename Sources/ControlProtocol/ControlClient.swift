import Glibc
import POSIX

/// Sends one command to a daemon's control socket and returns its one-line answer (without the
/// newline). Blocking, with a time limit: for `atsproxyctl` and tests, never for an event loop.
package enum ControlClient {
    package static func send(
        _ command: ControlCommand, to socketPath: String, timeout: Duration = .seconds(30)
    ) throws(ControlClientError) -> [UInt8] {
        guard let address = UnixSocketAddress(socketPath) else {
            throw ControlClientError(
                socketPath: socketPath, problem: .unreachable(reason: "not a usable socket path (1 to 107 bytes)"))
        }

        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw ControlClientError(socketPath: socketPath, problem: .unreachable(reason: lastError()))
        }
        defer { close(descriptor) }
        var limit = timeval(duration: timeout)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let connected = address.withSockaddr { connect(descriptor, $0, $1) }
        guard connected == 0 else {
            throw ControlClientError(socketPath: socketPath, problem: .unreachable(reason: lastError()))
        }

        let request = Array((command.rawValue + "\n").utf8)
        let sent = request.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == request.count else {
            throw ControlClientError(socketPath: socketPath, problem: .broken(reason: lastError()))
        }

        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                let timedOut = Errno.wouldBlock(errno)
                throw ControlClientError(
                    socketPath: socketPath, problem: timedOut ? .timedOut(timeout) : .broken(reason: lastError()))
            }
            answer += chunk[..<count]
            guard answer.count <= 16 * 1024 * 1024 else {
                throw ControlClientError(
                    socketPath: socketPath, problem: .broken(reason: "the answer is larger than 16 MiB"))
            }
        }
        while answer.last == UInt8(ascii: "\n") { answer.removeLast() }
        guard !answer.isEmpty else {
            throw ControlClientError(
                socketPath: socketPath, problem: .broken(reason: "the daemon closed without answering"))
        }
        return answer
    }

    private static func lastError() -> String { Errno.message(errno) }
}

/// Why a control command got no answer.
package struct ControlClientError: Error, Sendable, CustomStringConvertible {
    package enum Problem: Sendable {
        case unreachable(reason: String)
        case broken(reason: String)
        case timedOut(Duration)
    }

    package var socketPath: String
    package var problem: Problem

    package var description: String {
        switch problem {
        case .unreachable(let reason):
            "cannot reach atsproxy at \(socketPath): \(reason) (is the daemon running, and is this its --control-socket? "
                + "Give another path with --socket)"
        case .broken(let reason):
            "the control connection to \(socketPath) failed: \(reason)"
        case .timedOut(let limit):
            "atsproxy at \(socketPath) did not answer within \(limit.components.seconds) s"
        }
    }
}
