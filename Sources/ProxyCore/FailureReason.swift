import LogRecord
import TLSInspection

/// Why a connection failed or was closed, as its line logs it: the code (`failure`) and the
/// sentence for people (`upstream_error`), which travel together so that neither is set alone.
package struct FailureReason: Sendable, Equatable {
    package var failure: Failure
    package var text: String

    package init(_ failure: Failure, _ text: String) {
        self.failure = failure
        self.text = text
    }

    /// A probe's or a dial's failure, its description as the sentence (`timedOut`: the dial's
    /// connect timeout ran out, whatever the last address's error was).
    init(_ probe: ProbeFailure, timedOut: Bool = false, prefix: String = "") {
        self.init(timedOut ? .upstreamTimeout : Self.code(of: probe), prefix + probe.description)
    }

    private static func code(of probe: ProbeFailure) -> Failure {
        switch probe {
        case .resolve: .dns
        case .connect: .connectFailed
        case .handshake: .handshake
        case .timeout, .deadline: .upstreamTimeout
        case .notTLS: .serverNotTLS
        case .connectionLost: .connectionLost
        case .probeLimit: .probeLimit
        case .localResource: .proxyResource
        }
    }
}
