/// Parses response heads from an origin connection as its bytes arrive.
///
/// Works like ``RequestHeadParser``. After an interim (1xx) response it is ready for the final
/// one. Every error carries status 502, the answer the proxy owes its client.
package struct ResponseHeadParser: Sendable {
    private var scanner: HTTPHeadScanner<StatusLineScanner>

    package init(limits: HeadLimits = HeadLimits()) {
        scanner = HTTPHeadScanner(limits: limits)
    }

    /// A parser that takes every byte on its own: tests compare it with the default one.
    init(limits: HeadLimits, takesPlainRuns: Bool) {
        scanner = HTTPHeadScanner(limits: limits, takesPlainRuns: takesPlainRuns)
    }

    /// Feed the next bytes from the origin. Keeps at most `maximumHeadBytes` internally.
    package mutating func consume(_ bytes: some Collection<UInt8>) -> HeadParseResult<ResponseHead> { parse(bytes) }

    /// Arrays, specialised (why: ``RequestHeadParser``'s overload for arrays).
    package mutating func consume(_ bytes: [UInt8]) -> HeadParseResult<ResponseHead> { parse(bytes) }

    private mutating func parse(_ bytes: some Collection<UInt8>) -> HeadParseResult<ResponseHead> {
        switch scanner.consume(bytes) {
        case .needMoreData:
            return .needMoreData
        case .failed(let error):
            return .failed(error)
        case .complete(let line, let headers, let leftover):
            let head = ResponseHead(version: line.version, status: line.status, reason: line.reason, headers: headers)
            return .complete(head, leftover: leftover)
        }
    }
}
