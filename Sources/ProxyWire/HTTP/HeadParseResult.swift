/// What one call to a head parser's `consume` produced.
package enum HeadParseResult<Head: Sendable>: Sendable {
    /// The head is not complete yet; the parser keeps what it has seen.
    case needMoreData
    /// The head ended inside the bytes just given. `leftover` holds the bytes after its empty line
    /// (the start of the body, or of a pipelined message), exactly as given.
    case complete(Head, leftover: [UInt8])
    /// The head is invalid; the connection cannot continue. The parser keeps returning this.
    case failed(HeadError)
}

extension HeadParseResult: Equatable where Head: Equatable {}
