/// Finds the end of a chunked body (RFC 9112 §7.1) while the proxy relays it unchanged.
///
/// It keeps only counters, never the data, so relaying a body of any size takes constant memory.
/// Because the bytes are forwarded as they are, the next hop must see the same chunk boundaries
/// as the scanner, so it is strict where parsers are known to disagree: every line ends with
/// CRLF (a bare LF is refused, unlike in heads, which the proxy re-serialises), chunk extensions
/// must follow the grammar exactly, and chunk-size and trailer lines are capped at 4096 bytes.
package struct ChunkedBodyScanner: Sendable {
    /// Longest chunk-size line (with its extensions) and longest trailer field line, in bytes.
    package static let maximumLineBytes = 4096
    /// Chunk sizes are refused past 2^62, and past 16 hex digits however many are leading zeros.
    package static let maximumChunkSize: UInt64 = 1 << 62
    static let maximumSizeDigits = 16

    private enum State: Sendable {
        case sizeStart
        case size
        case whitespaceAfterSize
        case chunkExtension(ChunkExtensionState)
        case sizeLineFeed
        case data
        case dataCarriageReturn
        case dataLineFeed
        case trailerLineStart
        case trailerName
        case trailerValue
        case trailerLineFeed(endsBody: Bool)
        case finished
    }

    /// Where in `*( BWS ";" BWS name [ BWS "=" BWS value ] )` the scanner is (RFC 9112 §7.1.1).
    private enum ChunkExtensionState: Sendable {
        case beforeName
        case name
        case afterName
        case beforeValue
        case tokenValue
        case quotedValue
        case quotedPair
        case afterValue
    }

    private let kind: HTTPMessageKind
    private let refusesTrailerFields: Bool
    private var state = State.sizeStart
    private var chunkSize: UInt64 = 0
    private var sizeDigits = 0
    private var remaining: UInt64 = 0
    private var lineBytes = 0
    private var failure: HeadError?

    /// `kind` sets the status of errors: 400 for a request body, 502 for a response body.
    /// `refusesTrailerFields`: a trailer field is an error, the body may end only with an empty
    /// trailer section. The proxy relays requests so: origins that read chunked bodies loosely take
    /// a trailer line for the start of a request of their own (the HTTP Garden's server bug 39), and
    /// no client the proxy serves sends request trailers.
    package init(kind: HTTPMessageKind = .request, refusesTrailerFields: Bool = false) {
        self.kind = kind
        self.refusesTrailerFields = refusesTrailerFields
    }

    /// True once the whole body, trailers included, has been scanned.
    package var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    /// Scans the next bytes of the body. After the body ends, further calls consume nothing;
    /// after an error, they throw it again.
    package mutating func scan(_ bytes: some Collection<UInt8>) throws(HeadError) -> ChunkScan { try scanBytes(bytes) }

    /// Arrays, specialised (why: ``RequestHeadParser``'s overload for arrays).
    package mutating func scan(_ bytes: [UInt8]) throws(HeadError) -> ChunkScan { try scanBytes(bytes) }

    private mutating func scanBytes(_ bytes: some Collection<UInt8>) throws(HeadError) -> ChunkScan {
        if let failure { throw failure }
        var consumed = 0
        var payload = 0
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if case .finished = state { break }
            if case .data = state {
                // Chunk data is skipped in one step, not looked at byte by byte.
                let available = bytes.distance(from: index, to: bytes.endIndex)
                let take = Int(min(remaining, UInt64(available)))
                bytes.formIndex(&index, offsetBy: take)
                consumed += take
                payload += take
                remaining -= UInt64(take)
                if remaining == 0 { state = .dataCarriageReturn }
                continue
            }
            let byte = bytes[index]
            bytes.formIndex(after: &index)
            consumed += 1
            if let error = accept(byte) {
                failure = error
                throw error
            }
        }
        return ChunkScan(consumed: consumed, finished: isFinished, payload: payload)
    }

    private mutating func accept(_ byte: UInt8) -> HeadError? {
        switch state {
        case .sizeStart:
            guard let digit = HTTPSyntax.hexValue(byte) else {
                return fail("the chunk size is not a hexadecimal number")
            }
            lineBytes = 1
            chunkSize = UInt64(digit)
            sizeDigits = 1
            state = .size
            return nil
        case .size:
            if let error = countLineByte("chunk-size") { return error }
            if let digit = HTTPSyntax.hexValue(byte) {
                return appendSizeDigit(digit)
            }
            return afterSize(byte)
        case .whitespaceAfterSize:
            if let error = countLineByte("chunk-size") { return error }
            if HTTPSyntax.isWhitespace(byte) { return nil }
            guard byte == UInt8(ascii: ";") else {
                return fail("the chunk size is followed by whitespace and \(HTTPSyntax.describe(byte))")
            }
            state = .chunkExtension(.beforeName)
            return nil
        case .chunkExtension(let extensionState):
            if let error = countLineByte("chunk-size") { return error }
            return acceptExtensionByte(byte, in: extensionState)
        case .sizeLineFeed:
            guard byte == HTTPSyntax.lineFeed else {
                return fail("the chunk-size line has a CR that is not followed by LF")
            }
            if chunkSize == 0 {
                lineBytes = 0
                state = .trailerLineStart
            } else {
                remaining = chunkSize
                state = .data
            }
            return nil
        case .data:
            return nil  // Unreachable: scan skips data without calling accept.
        case .dataCarriageReturn:
            guard byte == HTTPSyntax.carriageReturn else { return fail("the chunk data is not followed by CRLF") }
            state = .dataLineFeed
            return nil
        case .dataLineFeed:
            guard byte == HTTPSyntax.lineFeed else { return fail("the chunk data is not followed by CRLF") }
            state = .sizeStart
            return nil
        case .trailerLineStart, .trailerName, .trailerValue:
            return acceptTrailerByte(byte)
        case .trailerLineFeed(let endsBody):
            guard byte == HTTPSyntax.lineFeed else {
                return fail("the trailer section has a CR that is not followed by LF")
            }
            lineBytes = 0
            state = endsBody ? .finished : .trailerLineStart
            return nil
        case .finished:
            return nil
        }
    }

    private mutating func appendSizeDigit(_ digit: UInt8) -> HeadError? {
        sizeDigits += 1
        // Checked before shifting, so the 64-bit value cannot overflow.
        guard sizeDigits <= Self.maximumSizeDigits, chunkSize <= Self.maximumChunkSize >> 4 else {
            return fail("the chunk size is larger than 2^62 or has more than 16 digits")
        }
        chunkSize = chunkSize << 4 | UInt64(digit)
        guard chunkSize <= Self.maximumChunkSize else { return fail("the chunk size is larger than 2^62") }
        return nil
    }

    private mutating func afterSize(_ byte: UInt8) -> HeadError? {
        switch byte {
        case HTTPSyntax.carriageReturn:
            state = .sizeLineFeed
        case UInt8(ascii: ";"):
            state = .chunkExtension(.beforeName)
        case HTTPSyntax.space, HTTPSyntax.horizontalTab:
            state = .whitespaceAfterSize
        case HTTPSyntax.lineFeed:
            return fail("the chunk-size line ends with a bare LF instead of CRLF")
        default:
            return fail("the chunk size is followed by the invalid byte \(HTTPSyntax.describe(byte))")
        }
        return nil
    }

    /// chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ), names and
    /// unquoted values being tokens (RFC 9112 §7.1.1).
    private mutating func acceptExtensionByte(_ byte: UInt8, in extensionState: ChunkExtensionState) -> HeadError? {
        let isToken = HTTPSyntax.isTokenCharacter(byte)
        let isSpace = HTTPSyntax.isWhitespace(byte)
        let next: ChunkExtensionState
        switch extensionState {
        case .beforeName:
            guard isToken || isSpace else { return extensionError(byte) }
            next = isToken ? .name : .beforeName
        case .name, .afterName:
            if isToken, extensionState == .name {
                next = .name
            } else if isSpace {
                next = .afterName
            } else if byte == UInt8(ascii: "=") {
                next = .beforeValue
            } else if byte == UInt8(ascii: ";") {
                next = .beforeName
            } else if byte == HTTPSyntax.carriageReturn {
                state = .sizeLineFeed
                return nil
            } else {
                return extensionError(byte)
            }
        case .beforeValue:
            if isSpace {
                next = .beforeValue
            } else if byte == UInt8(ascii: "\"") {
                next = .quotedValue
            } else if isToken {
                next = .tokenValue
            } else {
                return extensionError(byte)
            }
        case .tokenValue, .afterValue:
            if isToken, extensionState == .tokenValue {
                next = .tokenValue
            } else if isSpace {
                next = .afterValue
            } else if byte == UInt8(ascii: ";") {
                next = .beforeName
            } else if byte == HTTPSyntax.carriageReturn {
                state = .sizeLineFeed
                return nil
            } else {
                return extensionError(byte)
            }
        case .quotedValue:
            // qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text (RFC 9110 §5.6.4)
            if byte == UInt8(ascii: "\"") {
                next = .afterValue
            } else if byte == UInt8(ascii: "\\") {
                next = .quotedPair
            } else if HTTPSyntax.isFieldValueCharacter(byte) {
                next = .quotedValue
            } else {
                return extensionError(byte)
            }
        case .quotedPair:
            guard HTTPSyntax.isFieldValueCharacter(byte) else { return extensionError(byte) }
            next = .quotedValue
        }
        state = .chunkExtension(next)
        return nil
    }

    private func extensionError(_ byte: UInt8) -> HeadError {
        fail("the chunk extension has the unexpected byte \(HTTPSyntax.describe(byte))")
    }

    /// trailer-section = *( field-line CRLF ), then CRLF (RFC 9112 §7.1.2). Field lines are
    /// checked like header lines, without obs-fold.
    private mutating func acceptTrailerByte(_ byte: UInt8) -> HeadError? {
        if let error = countLineByte("trailer") { return error }
        switch state {
        case .trailerLineStart:
            if byte == HTTPSyntax.carriageReturn {
                state = .trailerLineFeed(endsBody: true)
            } else if refusesTrailerFields {
                return fail(
                    "the \(kind.noun)'s chunked body ends with trailer fields, which atsproxy does not forward: "
                        + "an origin can take a trailer line for a request of its own")
            } else if HTTPSyntax.isTokenCharacter(byte) {
                state = .trailerName
            } else if HTTPSyntax.isWhitespace(byte) {
                return fail("a trailer line starts with whitespace (obsolete line folding is not accepted)")
            } else {
                return fail("the trailer section has the unexpected byte \(HTTPSyntax.describe(byte))")
            }
        case .trailerName:
            if byte == HTTPSyntax.colon {
                state = .trailerValue
            } else if !HTTPSyntax.isTokenCharacter(byte) {
                return fail("a trailer field name has the invalid byte \(HTTPSyntax.describe(byte))")
            }
        default:  // .trailerValue
            if byte == HTTPSyntax.carriageReturn {
                state = .trailerLineFeed(endsBody: false)
            } else if !HTTPSyntax.isFieldValueCharacter(byte) {
                return fail("a trailer field value has the control byte \(HTTPSyntax.describe(byte))")
            }
        }
        return nil
    }

    private mutating func countLineByte(_ line: String) -> HeadError? {
        lineBytes += 1
        guard lineBytes <= Self.maximumLineBytes else {
            return fail("a \(line) line is longer than \(Self.maximumLineBytes) bytes")
        }
        return nil
    }

    private func fail(_ reason: String) -> HeadError {
        .malformed(kind, reason)
    }
}
