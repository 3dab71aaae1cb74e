import EventLoop
import ProxyWire

/// Tracks one message body as the proxy relays it unchanged, so it knows where the body ends and
/// the next message begins.
struct BodyTransfer {
    private enum State {
        case remaining(UInt64)
        case chunked(ChunkedBodyScanner)
        case untilClose
        case done
    }

    private var state: State
    /// The body's own bytes found so far: what ``bodyBytes(bufferedIn:)`` returned, less a chunked
    /// body's framing (its size lines, CRLFs and trailers).
    private(set) var payloadBytes: Int64 = 0

    init(_ framing: BodyFraming, kind: HTTPMessageKind) {
        switch framing {
        case .none: state = .done
        case .contentLength(let length): state = length == 0 ? .done : .remaining(length)
        case .chunked:
            // A request's trailer fields are refused, a response's relayed (ChunkedBodyScanner).
            state = .chunked(ChunkedBodyScanner(kind: kind, refusesTrailerFields: kind == .request))
        case .untilClose: state = .untilClose
        }
    }

    var isFinished: Bool {
        if case .done = state { return true }
        return false
    }

    var runsUntilClose: Bool {
        if case .untilClose = state { return true }
        return false
    }

    /// How many of the bytes buffered in `source` belong to the body; the body is finished when
    /// ``isFinished`` turns true. A chunked body is scanned (copied, not kept) to find its end.
    mutating func bodyBytes(bufferedIn source: any ByteStream) throws(HeadError) -> Int {
        let available = source.availableBytes
        switch state {
        case .done:
            return 0
        case .untilClose:
            payloadBytes += Int64(available)
            return available
        case .remaining(let remaining):
            let count = Int(min(remaining, UInt64(available)))
            state = UInt64(count) == remaining ? .done : .remaining(remaining - UInt64(count))
            payloadBytes += Int64(count)
            return count
        case .chunked(var scanner):
            state = .done  // Lets the scanner be mutated without a copy of its state.
            let scan = try scanner.scan(source.peek(maximum: 256 * 1024))
            state = scan.finished ? .done : .chunked(scanner)
            payloadBytes += Int64(scan.payload)
            return scan.consumed
        }
    }
}
