import Glibc
import POSIX

/// The sd_notify protocol without libsystemd: one AF_UNIX datagram of newline-separated
/// `KEY=VALUE` fields to the socket systemd names in `$NOTIFY_SOCKET` (sd_notify(3)). The variable
/// is read once, when the notifier is made; without it every call does nothing, so the daemon runs
/// the same outside systemd.
///
/// Sendable because it holds only the parsed address: each message opens, sends on and closes its
/// own socket (as libsystemd does), so threads never share a descriptor.
package struct SystemdNotifier: Sendable {
    /// Why a message did not reach systemd. The daemon reports these and carries on: losing the
    /// notify socket (systemd re-executing, a test that stopped listening) is no reason to stop
    /// proxying.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// `$NOTIFY_SOCKET` is neither an absolute path nor `@abstract` (systemd 254's `vsock:`
        /// addresses, for example), or too long for `sun_path`.
        case unsupportedAddress(String)
        /// `socket(2)` failed, with its errno.
        case socket(Int32)
        /// `sendto(2)` failed, with its errno: ENOENT or ECONNREFUSED when the socket is gone,
        /// EAGAIN when systemd did not read within `sendTimeoutSeconds`.
        case send(Int32)

        package var description: String {
            switch self {
            case .unsupportedAddress(let text): "NOTIFY_SOCKET=\(text) is not an absolute path or @abstract name"
            case .socket(let code): "socket: \(String(cString: strerror(code)))"
            case .send(let code): "sendto: \(String(cString: strerror(code)))"
            }
        }
    }

    /// One `KEY=VALUE` line of a message.
    package struct Field: Sendable, Equatable, CustomStringConvertible {
        package let key: String
        package let value: String

        /// A field; newlines in `value` become spaces, since a newline would start another field.
        package init(_ key: String, _ value: String) {
            self.key = key
            self.value = String(value.map { $0.isNewline ? " " : $0 })
        }

        package var description: String { "\(key)=\(value)" }

        package static let ready = Field("READY", "1")
        /// Send with ``monotonicNow()`` (systemd 253+ wants it), and READY=1 when the reload is done.
        package static let reloading = Field("RELOADING", "1")
        package static let stopping = Field("STOPPING", "1")
        package static func status(_ text: String) -> Field { Field("STATUS", text) }
        package static func mainPID(_ pid: pid_t = getpid()) -> Field { Field("MAINPID", "\(pid)") }
        /// CLOCK_MONOTONIC now, in microseconds: systemd ≥ 253 wants it next to RELOADING=1 for
        /// Type=notify-reload, to tell this reload from an earlier one.
        package static func monotonicNow() -> Field {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            return Field("MONOTONIC_USEC", "\(Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000)")
        }
    }

    /// How long a send may wait for systemd to make room in the socket's queue. Bounded so that a
    /// wedged manager cannot hold up the signal thread forever, generous so a busy one loses nothing.
    package static let sendTimeoutSeconds = 5

    /// The raw `sockaddr_un` bytes and their length, or why there are none.
    private let address: Result<[UInt8], Failure>?

    /// A notifier for the socket in `value` (the text of `$NOTIFY_SOCKET`); nil or empty disables it.
    package init(socket value: String?) {
        guard let value, !value.isEmpty else {
            address = nil
            return
        }
        address = Self.socketAddress(value).map(Result.success) ?? .failure(.unsupportedAddress(value))
    }

    /// A notifier for this process's `$NOTIFY_SOCKET`.
    package static func fromEnvironment() -> SystemdNotifier {
        SystemdNotifier(socket: getenv("NOTIFY_SOCKET").map { String(cString: $0) })
    }

    /// Whether a socket was named: false outside systemd, where every send is a no-op.
    package var isEnabled: Bool { address != nil }

    /// Sends the fields as one datagram; does nothing when no socket was named.
    package func notify(_ fields: [Field]) throws(Failure) {
        guard let address else { return }
        let bytes = try address.get()
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .socket(errno) }
        defer { close(descriptor) }
        var timeout = timeval(duration: .seconds(Self.sendTimeoutSeconds))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let message = Array(fields.map(\.description).joined(separator: "\n").utf8)
        let sent = message.withUnsafeBytes { payload in
            bytes.withUnsafeBytes { raw in
                sendto(
                    descriptor, payload.baseAddress, payload.count, Int32(MSG_NOSIGNAL),
                    raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
            }
        }
        guard sent >= 0 else { throw .send(errno) }
    }

    package func notify(_ fields: Field...) throws(Failure) { try notify(fields) }

    /// The address of `$NOTIFY_SOCKET`'s text: an absolute path, or `@name` in the abstract
    /// namespace (sd_notify(3) accepts both); nil for anything else.
    static func socketAddress(_ text: String) -> [UInt8]? {
        guard text.first == "/" || text.first == "@" else { return nil }
        return UnixSocketAddress(text, allowsAbstract: true)?.bytes
    }
}
