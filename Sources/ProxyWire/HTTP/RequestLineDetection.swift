/// Whether bytes begin with an HTTP/1 request line in any target form (`GET /path HTTP/1.1`), by
/// the same scanner as the head parser. For a tunnel's first bytes: the head parser itself expects
/// what a proxy is sent (absolute form or CONNECT), while a device talking to a cleartext server
/// through a tunnel sends origin form.
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

    /// What the first bytes of a stream show so far.
    package enum Start: Sendable, Equatable {
        /// A whole request line.
        case requestLine
        /// A byte no request line can have where it is: the stream speaks something else.
        case notRequestLine
        /// A request line may still follow: more bytes are needed.
        case undecided
    }

    /// Classifies the first bytes of a stream: for intercepted TLS, whose plaintext may be HTTP or
    /// some other protocol the device speaks over TLS.
    package static func start(of bytes: some Collection<UInt8>) -> Start {
        var scanner = RequestLineScanner()
        for byte in bytes {
            if byte == HTTPSyntax.carriageReturn || byte == HTTPSyntax.lineFeed {
                if case .success = scanner.finish() { return .requestLine }
                return .notRequestLine
            }
            if scanner.accept(byte) != nil { return .notRequestLine }
        }
        return .undecided
    }
}
