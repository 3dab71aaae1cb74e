/// Parses request heads from a client connection as its bytes arrive.
///
/// Feed it whatever the socket delivered. It answers `.needMoreData` until the empty line that
/// ends the head, then `.complete` with the head and the bytes after it, and is then ready for
/// the next request on the connection. Errors are found at the first byte that shows them;
/// after one, the parser keeps returning it.
package struct RequestHeadParser: Sendable {
    private var scanner: HTTPHeadScanner<RequestLineScanner>
    private var failure: HeadError?
    /// The request line of a whole head that ``RequestHead`` refused: the scanner has started anew
    /// by then. (A head the scanner refused keeps its line in the scanner.)
    private var refusedWholeHeadLine: RequestLine?
    /// Set for the requests inside an intercepted connection: origin-form targets are taken.
    private let origin: RequestOrigin?

    /// - Parameter origin: the server the requests are sent to, when the parser reads them as that
    ///   server would (inside an intercepted TLS connection); nil for requests sent to the proxy.
    package init(limits: HeadLimits = HeadLimits(), origin: RequestOrigin? = nil) {
        scanner = HTTPHeadScanner(limits: limits)
        self.origin = origin
    }

    /// A parser that takes every byte on its own: tests compare it with the default one.
    init(limits: HeadLimits, takesPlainRuns: Bool) {
        scanner = HTTPHeadScanner(limits: limits, takesPlainRuns: takesPlainRuns)
        origin = nil
    }

    /// The method and target of the current head's request line (or the failed head's), once the
    /// line was read whole and when its target parses: what a head refused for a later fault, or
    /// for not completing in time, shows of its request. Nil before that, after a complete head,
    /// and for a fault in the line itself.
    package var refusedLine: RefusedRequestLine? {
        (refusedWholeHeadLine ?? scanner.startLineRead).flatMap { RefusedRequestLine(line: $0, origin: origin) }
    }

    /// Feed the next bytes from the client. Keeps at most `maximumHeadBytes` internally.
    package mutating func consume(_ bytes: some Collection<UInt8>) -> HeadParseResult<RequestHead> { parse(bytes) }

    // The proxy's own buffers are arrays. A generic public method is not specialised in the
    // calling module, and its byte loop, run through Collection's witness table, cost ten times
    // as much; this overload runs the loop specialised for arrays.
    package mutating func consume(_ bytes: [UInt8]) -> HeadParseResult<RequestHead> { parse(bytes) }

    private mutating func parse(_ bytes: some Collection<UInt8>) -> HeadParseResult<RequestHead> {
        if let failure { return .failed(failure) }
        switch scanner.consume(bytes) {
        case .needMoreData:
            return .needMoreData
        case .failed(let error):
            failure = error
            return .failed(error)
        case .complete(let line, let headers, let leftover):
            do {
                return .complete(try RequestHead(line: line, headers: headers, origin: origin), leftover: leftover)
            } catch {
                failure = error
                refusedWholeHeadLine = line
                return .failed(error)
            }
        }
    }
}
