/// Whether a stream's first bytes are HTTP. For a tunnel's first bytes, whether they begin with an
/// HTTP/1 request line in any target form (`GET /path HTTP/1.1`), by the same scanner as the head
/// parser: the head parser itself expects what a proxy is sent (absolute form or CONNECT), while a
/// device talking to a cleartext server through a tunnel sends origin form. For intercepted TLS,
/// whether they begin as an HTTP request does, however malformed the rest (``start(of:)``).
package enum RequestLineDetection {
    package static func startsWithRequestLine(_ bytes: some Collection<UInt8>) -> Bool {
        var scanner = RequestLineScanner()
        for byte in bytes {
            if byte == HTTPSyntax.carriageReturn || byte == HTTPSyntax.lineFeed {
                if case .success = scanner.finish() { return true }
                return false
            }
            if scanner.accept(byte) != nil { return false }
        }
        return false
    }

    /// What the first bytes inside an intercepted TLS session show, when ALPN did not say.
    package enum Start: Sendable, Equatable {
        /// HTTP: every head from here on is parsed, and refused as plain mode refuses it.
        case http
        /// Positive evidence of another protocol: a byte no HTTP request can begin with.
        case otherProtocol
        /// A prefix of HTTP's first bytes (a lone CR, a run of token bytes): more are needed.
        case undecided
    }

    /// Classifies the first bytes of a device's plaintext inside an intercepted TLS session that
    /// negotiated no ALPN (with `http/1.1` there is nothing to decide: it is HTTP).
    ///
    /// They are HTTP when they begin with an empty line (LF, or CR LF: RFC 9112 §2.2 lets a server
    /// skip it) or with a token (RFC 9110 §5.6.2 tchar, one or more) followed by SP or HTAB: a
    /// method and its separator. Only that much is judged. Whatever follows is the head parser's to
    /// refuse with 400, 501 or 505, as in plain mode, since a lenient origin would take a request
    /// the strict scanner refuses (`GET  /`, a 33-byte method, `HTTP/1.2`) as a request; relaying it
    /// unread would let any request skip the log and the framing checks. Anything else, as soon as a
    /// byte shows it (a NUL, a byte over 0x7F, a TLS record, leading whitespace, a token ended by
    /// CR or LF as in `PING\r\n`), is another protocol.
    package static func start(of bytes: some Collection<UInt8>) -> Start {
        var index = bytes.startIndex
        guard index != bytes.endIndex else { return .undecided }
        switch bytes[index] {
        case HTTPSyntax.lineFeed:
            return .http
        case HTTPSyntax.carriageReturn:
            bytes.formIndex(after: &index)
            guard index != bytes.endIndex else { return .undecided }
            return bytes[index] == HTTPSyntax.lineFeed ? .http : .otherProtocol
        default:
            break
        }
        var tokenLength = 0
        while index != bytes.endIndex {
            let byte = bytes[index]
            if HTTPSyntax.isTokenCharacter(byte) {
                tokenLength += 1
            } else {
                let separates = byte == HTTPSyntax.space || byte == HTTPSyntax.horizontalTab
                return separates && tokenLength > 0 ? .http : .otherProtocol
            }
            bytes.formIndex(after: &index)
        }
        return .undecided
    }
}
