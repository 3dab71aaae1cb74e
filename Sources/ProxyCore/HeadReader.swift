import EventLoop
import ProxyWire

/// Reads one request head at a time from a stream's buffered input: the one loop the proxy's
/// listener (``ClientSession``), intercept mode's exchanges (``InterceptedExchanges``) and the
/// proxy's own pages (``SiteConnection``) share.
///
/// A head must be complete within `limit` of its first byte, however its bytes trickle in: the
/// reader says how much of that is left after each read, so the caller's read limit cannot restart
/// with every byte. It takes from the stream exactly the head's bytes; what follows (a body, a
/// pipelined request, a tunnel's first bytes) stays buffered. A value: its owner keeps it in its
/// state.
struct HeadReader {
    /// What one ``read(from:now:)`` came to.
    enum Step {
        /// The head is not complete. `left`: what remains of its deadline (nil: no byte yet).
        case needMore(left: Duration?)
        /// Its deadline passed before it was complete.
        case timedOut
        /// The bytes are no request head: the connection cannot continue (``refusedLine`` says
        /// what its request line had shown, when the fault came after the line).
        case failed(HeadError)
        /// A head, with how many bytes it took; the reader is ready for the next.
        case complete(RequestHead, bytes: Int64)
    }

    private let origin: RequestOrigin?
    private let limit: Duration
    private var parser: RequestHeadParser
    /// When the head's first byte was read (``MonotonicClock`` milliseconds); nil before it.
    private(set) var startedAt: Int64?
    /// The head's bytes taken so far.
    private(set) var bytes: Int64 = 0

    /// - Parameters:
    ///   - origin: the server requests are read for (origin-form targets are taken), nil for
    ///     requests to the proxy (``RequestHeadParser``).
    ///   - limit: how long a head may take from its first byte.
    init(origin: RequestOrigin?, limit: Duration) {
        self.origin = origin
        self.limit = limit
        parser = RequestHeadParser(origin: origin)
    }

    /// Whether a byte of the current head has been read.
    var hasStarted: Bool { startedAt != nil }

    /// The method and target of the current (or failed) head's request line, once read whole: what
    /// the line of a head refused or timed out names.
    var refusedLine: RefusedRequestLine? { parser.refusedLine }

    /// Forgets the head begun (and what the parser kept of it): ready for a new one.
    mutating func reset() {
        parser = RequestHeadParser(origin: origin)
        startedAt = nil
        bytes = 0
    }

    /// Feeds what `stream` has buffered to the parser, up to the end of one head.
    mutating func read(from stream: any ByteStream, now: () -> Int64 = MonotonicClock.nowMilliseconds) -> Step {
        while stream.availableBytes > 0 {
            let chunk = stream.peek(maximum: 16 * 1024)
            if startedAt == nil { startedAt = now() }
            switch parser.consume(chunk) {
            case .needMoreData:
                stream.discardInput(chunk.count)
                bytes += Int64(chunk.count)
            case .failed(let error):
                return .failed(error)
            case .complete(let head, let leftover):
                let used = chunk.count - leftover.count
                stream.discardInput(used)
                let total = bytes + Int64(used)
                reset()
                return .complete(head, bytes: total)
            }
        }
        guard let startedAt else { return .needMore(left: nil) }
        let left = limit.milliseconds - (now() - startedAt)
        return left > 0 ? .needMore(left: .milliseconds(left)) : .timedOut
    }
}
