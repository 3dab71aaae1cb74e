import ATSPolicy

/// The one place a connection's verdict becomes an action: every path (a CONNECT before its 200, a
/// ClientHello held after it, intercept mode's own upstream handshake, cleartext in a tunnel, a
/// plain http:// request) asks ``decide(_:mode:at:blockStyle:)`` what to do with a verdict, and
/// only carries the answer out. Pure: no clock, no stream, no session.
enum ConnectionJudge {
    /// Where the connection is when its verdict comes: what a block can still say to the device.
    enum Point: Equatable {
        /// Before a CONNECT's 200, or a plain http:// request: an HTTP response.
        case beforeTunnel
        /// After the 200, the device's ClientHello held and nothing of it sent upstream: only TLS
        /// can answer. `pageAvailable`: intercept mode holds the hello, so the proxy could complete
        /// the handshake with its own leaf and answer each request with the 403 page.
        case deviceHandshake(pageAvailable: Bool)
        /// Cleartext through a tunnel: an HTTP request can be answered, other bytes only cut off.
        case cleartextInTunnel(isHTTPRequest: Bool)
    }

    /// What to do.
    enum Decision: Equatable {
        /// Compliant: carry on.
        case allow
        /// Not compliant, and report mode: carry on, logged as not compliant.
        case report
        /// Blocked: the proxy's 403 with Apple's error and the violations.
        case respond403
        /// Blocked: a fatal `handshake_failure` alert to the device's hello, as an iPhone app's own
        /// connection would fail.
        case alert
        /// Blocked: the device's handshake completes with the proxy's leaf; each request gets the
        /// 403 page (intercept mode's `--block-style page`).
        case page
        /// Blocked: the connection is closed (bytes that are no HTTP request cannot be answered).
        case cutOff

        /// Whether the connection goes on (compliant, or reported).
        var proceeds: Bool { self == .allow || self == .report }
    }

    /// The action for `verdict` under `mode`, at `point`, with intercept mode's `blockStyle`.
    static func decide(_ verdict: Verdict, mode: EnforcementMode, at point: Point, blockStyle: BlockStyle) -> Decision {
        if verdict.isCompliant { return .allow }
        if mode == .report { return .report }
        switch point {
        case .beforeTunnel: return .respond403
        case .deviceHandshake(let pageAvailable): return pageAvailable && blockStyle == .page ? .page : .alert
        case .cleartextInTunnel(let isHTTPRequest): return isHTTPRequest ? .respond403 : .cutOff
        }
    }
}
