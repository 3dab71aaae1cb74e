/// Reads a message head (start line, field lines, empty line) as its bytes arrive.
///
/// It is shared by the request and response parsers; only the start line differs. Each byte is
/// looked at once, whatever the split of the input, and judged as it arrives, so garbage fails
/// at once instead of after the size limit. Bytes that need a decision are taken one at a time;
/// runs of bytes that need none (``HTTPPlainBytes``) are checked in one loop and stored at once. It stores only what becomes the parsed head, which
/// is never more than the bytes of the head, and those are capped by ``HeadLimits``.
struct HTTPHeadScanner<Scanner: StartLineScanner>: Sendable {
    enum Outcome {
        case needMoreData
        case complete(Scanner.StartLine, HTTPHeaders, leftover: [UInt8])
        case failed(HeadError)
    }

    private enum Phase {
        case startLine
        case fieldLineStart
        case fieldName
        case fieldValue
    }

    private enum ByteOutcome {
        case accepted
        case headComplete
        case failed(HeadError)
    }

    private let limits: HeadLimits
    /// Off only in tests, which check that taking runs of plain bytes changes nothing.
    private let takesPlainRuns: Bool
    private var phase = Phase.startLine
    private var startLineScanner = Scanner()
    private var startLine: Scanner.StartLine?
    private var headBytes = 0
    private var awaitingLineFeed = false
    private var fields: [HTTPField] = []
    private var fieldLineCount = 0
    /// The current field line's name, then its value: one buffer, reused from line to line, so
    /// a field costs no allocation until it is stored.
    private var fieldBytes: [UInt8] = []
    /// Where the name ends in `fieldBytes` (and the value starts) once the colon arrived.
    private var nameLength = 0
    private var failure: HeadError?

    private var kind: HTTPMessageKind { Scanner.kind }

    /// The start line, once it was read whole (until the head completes: the scanner then starts
    /// anew); nil before. A failed head's keeps what it had.
    var startLineRead: Scanner.StartLine? { startLine }

    init(limits: HeadLimits, takesPlainRuns: Bool = true) {
        self.limits = limits
        self.takesPlainRuns = takesPlainRuns
    }

    mutating func consume(_ bytes: some Collection<UInt8>) -> Outcome {
        if let failure { return .failed(failure) }
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if takesPlainRuns, let plainBytes {
                let room = limits.maximumHeadBytes - headBytes
                let runEnd = Self.endOfRun(of: plainBytes, in: bytes, from: index, atMost: room)
                if runEnd != index {
                    storePlainRun(bytes[index..<runEnd])
                    index = runEnd
                    continue
                }
            }
            let byte = bytes[index]
            bytes.formIndex(after: &index)
            switch accept(byte) {
            case .accepted:
                continue
            case .failed(let error):
                failure = error
                return .failed(error)
            case .headComplete:
                guard let startLine else {
                    // Unreachable: the field phase starts only after the start line parsed.
                    let error = HeadError.malformed(kind, "the \(kind.noun) head has no start line")
                    failure = error
                    return .failed(error)
                }
                let headers = HTTPHeaders(fields: fields)
                // Ready for the next head on the same connection (keep-alive, pipelining).
                self = HTTPHeadScanner(limits: limits, takesPlainRuns: takesPlainRuns)
                return .complete(startLine, headers, leftover: Array(bytes[index...]))
            }
        }
        return .needMoreData
    }

    /// The bytes that `accept` would, in the current phase, only count and store.
    private var plainBytes: HTTPPlainBytes? {
        guard !awaitingLineFeed else { return nil }
        switch phase {
        case .startLine: return startLineScanner.plainBytes
        case .fieldLineStart: return nil
        case .fieldName: return .token
        // Leading whitespace is skipped, not stored, so a run starts with the value's first byte.
        case .fieldValue: return fieldBytes.count > nameLength ? .fieldValue : nil
        }
    }

    /// Where the run of `plainBytes` that starts at `start` ends. `room` is what is left under
    /// the head size limit: the run stops there, so that the byte over the limit is refused just
    /// as it is when it comes alone. (Static, because a method call copied the whole scanner.)
    private static func endOfRun<Bytes: Collection<UInt8>>(
        of plainBytes: HTTPPlainBytes,
        in bytes: Bytes,
        from start: Bytes.Index,
        atMost room: Int
    ) -> Bytes.Index {
        var room = room
        var end = start
        while room > 0, end != bytes.endIndex, plainBytes.contains(bytes[end]) {
            bytes.formIndex(after: &end)
            room -= 1
        }
        return end
    }

    /// What `accept` does to each byte of a plain run, done to the run at once.
    private mutating func storePlainRun(_ run: some Collection<UInt8>) {
        headBytes += run.count
        if case .startLine = phase {
            startLineScanner.storePlainRun(run)
        } else {
            fieldBytes.append(contentsOf: run)
        }
    }

    private mutating func accept(_ byte: UInt8) -> ByteOutcome {
        headBytes += 1
        guard headBytes <= limits.maximumHeadBytes else {
            let prefix = kind == .request ? "request header fields too large: " : ""
            return .failed(
                .tooLarge(kind, "\(prefix)the \(kind.noun) head is larger than \(limits.maximumHeadBytes) bytes"))
        }
        // Lines end with CRLF or a bare LF (RFC 9112 §2.2). A CR anywhere else is a bare CR,
        // which §2.2 lets a recipient reject; accepting it would let two parsers disagree.
        if awaitingLineFeed {
            guard byte == HTTPSyntax.lineFeed else {
                return .failed(.malformed(kind, "the \(kind.noun) head contains a CR that is not followed by LF"))
            }
            awaitingLineFeed = false
            return endOfLine()
        }
        if byte == HTTPSyntax.carriageReturn {
            awaitingLineFeed = true
            return .accepted
        }
        if byte == HTTPSyntax.lineFeed {
            return endOfLine()
        }
        switch phase {
        case .startLine:
            if let error = startLineScanner.accept(byte) { return .failed(error) }
            return .accepted
        case .fieldLineStart:
            return startFieldLine(byte)
        case .fieldName:
            return acceptNameByte(byte)
        case .fieldValue:
            // OWS before the value is not part of it (RFC 9110 §5.5).
            if fieldBytes.count == nameLength, HTTPSyntax.isWhitespace(byte) { return .accepted }
            guard HTTPSyntax.isFieldValueCharacter(byte) else {
                return fieldError("contains the control byte \(HTTPSyntax.describe(byte))")
            }
            fieldBytes.append(byte)
            return .accepted
        }
    }

    private mutating func startFieldLine(_ byte: UInt8) -> ByteOutcome {
        if HTTPSyntax.isWhitespace(byte) {
            // obs-fold (RFC 9112 §5.2), or whitespace before the first field (§2.2): both may be
            // rejected, and a proxy that unfolds would forward something the sender did not mean.
            fieldLineCount += 1
            return fieldError("starts with whitespace (obsolete line folding is not accepted)")
        }
        fieldLineCount += 1
        guard fieldLineCount <= limits.maximumHeaderLines else {
            let prefix = kind == .request ? "request header fields too large: " : ""
            return .failed(
                .tooLarge(kind, "\(prefix)the \(kind.noun) has more than \(limits.maximumHeaderLines) header lines"))
        }
        if byte == HTTPSyntax.colon { return fieldError("has an empty field name") }
        fieldBytes.removeAll(keepingCapacity: true)
        fieldBytes.reserveCapacity(HTTPSyntax.lineBufferCapacity)
        phase = .fieldName
        return acceptNameByte(byte)
    }

    private mutating func acceptNameByte(_ byte: UInt8) -> ByteOutcome {
        if HTTPSyntax.isTokenCharacter(byte) {
            fieldBytes.append(byte)
            return .accepted
        }
        if byte == HTTPSyntax.colon {
            nameLength = fieldBytes.count
            phase = .fieldValue
            return .accepted
        }
        if HTTPSyntax.isWhitespace(byte) {
            // RFC 9112 §5.1: "A server MUST reject, with a response status code of 400 (Bad
            // Request), any received request message that contains whitespace between a header
            // field name and colon"; a proxy MUST remove it from responses, and refusing is simpler.
            return fieldError("has whitespace between the field name and the colon")
        }
        return fieldError("has the invalid byte \(HTTPSyntax.describe(byte)) in its field name")
    }

    private mutating func endOfLine() -> ByteOutcome {
        switch phase {
        case .startLine:
            // Empty lines before the start line are skipped (RFC 9112 §2.2); they still count
            // against the head size limit, which bounds how many there can be.
            if startLineScanner.isEmpty { return .accepted }
            switch startLineScanner.finish() {
            case .success(let line):
                startLine = line
                phase = .fieldLineStart
                return .accepted
            case .failure(let error):
                return .failed(error)
            }
        case .fieldLineStart:
            return .headComplete
        case .fieldName:
            return fieldError("has no colon")
        case .fieldValue:
            // Trailing OWS is not part of the value either.
            var valueEnd = fieldBytes.endIndex
            while valueEnd > nameLength, HTTPSyntax.isWhitespace(fieldBytes[valueEnd - 1]) { valueEnd -= 1 }
            let name = String(decoding: fieldBytes[..<nameLength], as: UTF8.self)
            fields.append(HTTPField(name: name, valueBytes: Array(fieldBytes[nameLength..<valueEnd])))
            phase = .fieldLineStart
            return .accepted
        }
    }

    private func fieldError(_ problem: String) -> ByteOutcome {
        .failed(.malformed(kind, "header line \(fieldLineCount) \(problem)"))
    }
}
