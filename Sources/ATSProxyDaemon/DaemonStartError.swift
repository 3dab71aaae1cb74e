import EventLoop
import Glibc

/// Why the daemon could not start serving, in one line that says what to do (the command line was
/// fine: no usage text follows, and the exit status is 1, not 64).
package struct DaemonStartError: Error, Sendable, CustomStringConvertible {
    package var description: String

    /// The kernel refused `--upstream-mark` on a test socket: every upstream connection would fail.
    init(markRefused mark: UInt32, _ error: EventError) {
        description =
            "cannot start: \(error.operation) failed: \(String(cString: strerror(error.errno))). Marking the proxy's "
            + "upstream connections (--upstream-mark, on with --transparent-listen) needs CAP_NET_ADMIN: run as root, or "
            + "add AmbientCapabilities=CAP_NET_ADMIN to the unit (docs/capture.md)"
    }

    /// A proxy loop that could not start: a listening address in use or not allowed is said as such.
    init(startingLoops error: any Error) {
        guard let event = error as? EventError else {
            description = "cannot start: \(error)"
            return
        }
        // The listener's operation is "listening on ADDR:PORT".
        let what = event.operation
        switch event.errno {
        case EADDRINUSE:
            description =
                "cannot start: \(what): the address is in use (another atsproxy?). Stop what holds it "
                + "(ss -ltnp shows it), or choose another with --listen ADDR:PORT (the config key listen; "
                + "LISTEN=ADDR:PORT with make run)"
        case EACCES:
            description =
                "cannot start: \(what): not allowed (a port below 1024 needs root or CAP_NET_BIND_SERVICE); "
                + "choose a port of 1024 or above with --listen ADDR:PORT"
        case EADDRNOTAVAIL:
            description =
                "cannot start: \(what): no network interface of this machine has that address; "
                + "choose one it has (ip -brief address), or 0.0.0.0, with --listen ADDR:PORT"
        default:
            description = "cannot start: \(event)"
        }
    }
}

extension Daemon {
    /// Sets `mark` on a socket of its own, so that a daemon without the capability says so at start,
    /// not with every connection it then fails to open.
    static func checkMark(_ mark: UInt32) throws(DaemonStartError) {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard probe >= 0 else { return }
        defer { close(probe) }
        do {
            try SocketAddress.setMark(mark, on: probe)
        } catch {
            throw DaemonStartError(markRefused: mark, error)
        }
    }
}
