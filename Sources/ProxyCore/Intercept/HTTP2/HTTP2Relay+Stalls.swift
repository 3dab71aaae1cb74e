import EventLoop
import HTTP2
import LogRecord

/// A connection whose bodies stop moving while bytes wait: one peer sent them, and the other holds
/// its windows shut (or reads nothing) yet keeps the connection busy, with PINGs or new streams, so
/// the idle timeout never comes. It would hold those bytes (up to the windows the proxy announced)
/// for as long as it lasted. Once no body byte has been framed for either peer for the idle
/// timeout, with bytes waiting, the connection ends as an idle one does: GOAWAY to both, then the
/// close, `closed_idle`, its line saying who took nothing. A stream held shut while others move is
/// the peer's right (that is what per-stream windows are for) and is left alone.
extension HTTP2Relay {
    /// Checks every half idle timeout: a stall is found between one and one and a half idle timeouts
    /// after the last body byte moved.
    func watchStalls() {
        bodyMovement = BodyMovement(now: clock.monotonicMilliseconds)
        stallWatch = owner.environment.makeTimer { [unowned self] in checkStalls() }
        stallWatch?.schedule(after: settings.idleTimeout / 2)
    }

    private func checkStalls() {
        // Ending: nothing is framed while the peers are owed their last bytes, and the reason the
        // connection is ending stands.
        guard !ended, !ending else { return }
        let limit = settings.idleTimeout
        let forDevice = streams.values.reduce(0) { $0 + $1.responseBytesHeld }
        let forOrigin = streams.values.reduce(0) { $0 + $1.requestBytesHeld }
        let still = bodyMovement.stillFor(now: clock.monotonicMilliseconds)
        guard forDevice + forOrigin > 0, still >= limit.milliseconds else {
            stallWatch?.schedule(after: limit / 2)
            return
        }
        let waiting = [(forDevice, "the device"), (forOrigin, "the origin")].filter { $0.0 > 0 }
            .map { "\($0.0) bytes for \($0.1)" }.joined(separator: " and ")
        tunnel.findings.fail(
            FailureReason(
                .closedIdle,
                "closed: stalled for \(limit.components.seconds) s, no body byte moved while \(waiting) waited "
                    + "(the connection was kept busy)"))
        goAwayBoth()
        endAfterFlush()
    }
}

/// Whether a connection's bodies move: an increment for each movement (no clock read per frame),
/// and, asked now and then, how long the count has stood still.
struct BodyMovement {
    private var count = 0
    private var seen = 0
    private var stillSince: Int64

    init(now: Int64) { stillSince = now }

    /// Body bytes were framed for a peer, or a peer's socket took a slice of what it was owed.
    mutating func note() { count &+= 1 }

    /// How long nothing has moved as of `now`, counted from the first asking that saw no change:
    /// up to one asking's interval less than the truth.
    mutating func stillFor(now: Int64) -> Int64 {
        if count != seen {
            seen = count
            stillSince = now
        }
        return now - stillSince
    }
}
