/// Reads the two fields that frame a body, Transfer-Encoding and Content-Length, strictly:
/// the proxy relays bodies without re-framing them, so the next hop must find the same end of
/// the message as the proxy did, or a second request could be smuggled inside the first.
enum FramingFields {
    /// Transfer codings registered with IANA (RFC 9110 §18.7, RFC 9112 §7). "identity" was
    /// removed by RFC 7230 and is unknown.
    static let knownTransferCodings: Set<String> = ["chunked", "compress", "deflate", "gzip", "x-compress", "x-gzip"]

    /// The coding names of every Transfer-Encoding line in order, lowercased; nil when there is
    /// no Transfer-Encoding field.
    static func transferCodings(in headers: HTTPHeaders, kind: HTTPMessageKind) throws(HeadError) -> [String]? {
        let lines = headers.fields.filter { $0.hasName("Transfer-Encoding") }
        guard !lines.isEmpty else { return nil }
        var codings: [String] = []
        for line in lines {
            for element in HTTPSyntax.listElements(line.valueBytes) {
                let nameEnd = element.firstIndex(of: UInt8(ascii: ";")) ?? element.endIndex
                let name = HTTPSyntax.trimmingWhitespace(element[..<nameEnd])
                guard !name.isEmpty, name.allSatisfy(HTTPSyntax.isTokenCharacter) else {
                    throw .malformed(kind, "the Transfer-Encoding header is not a list of transfer codings")
                }
                let coding = String(decoding: name.map(HTTPSyntax.lowercased), as: UTF8.self)
                // chunked has no parameters (RFC 9112 §7.1); "chunked;x" would be read as
                // chunked by some parsers and as something else by others.
                if coding == "chunked", nameEnd != element.endIndex {
                    throw .malformed(kind, "the Transfer-Encoding header gives parameters to chunked")
                }
                codings.append(coding)
            }
        }
        // RFC 9112 §6.1: "A sender MUST NOT apply the chunked transfer coding more than once".
        if codings.filter({ $0 == "chunked" }).count > 1 {
            throw .malformed(kind, "the Transfer-Encoding header applies chunked more than once")
        }
        return codings
    }

    /// The body length from every Content-Length line; nil when there is none.
    ///
    /// RFC 9112 §6.3 rule 5: an invalid Content-Length is an unrecoverable error, "unless the
    /// field value can be successfully parsed as a comma-separated list, all values in the list
    /// are valid, and all values in the list are the same", so "5, 5" and two lines of 5 mean 5.
    /// Empty list elements are not tolerated here.
    static func contentLength(in headers: HTTPHeaders, kind: HTTPMessageKind) throws(HeadError) -> UInt64? {
        let lines = headers.fields.filter { $0.hasName("Content-Length") }
        guard !lines.isEmpty else { return nil }
        var length: UInt64?
        for line in lines {
            for element in HTTPSyntax.listElements(line.valueBytes) {
                guard let value = parseDecimal(element) else {
                    throw .malformed(kind, "the Content-Length header is not a decimal number")
                }
                if let length, length != value {
                    throw .malformed(kind, "the \(kind.noun) has Content-Length values that differ")
                }
                length = value
            }
        }
        return length
    }

    /// 1*DIGIT that fits in 64 bits.
    private static func parseDecimal(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard !digits.isEmpty else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            guard HTTPSyntax.isDigit(digit) else { return nil }
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = shifted.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !overflow, !carry else { return nil }
            value = sum
        }
        return value
    }

    /// RFC 9112 §9.3: HTTP/1.1 connections persist unless "close" is a connection option;
    /// HTTP/1.0 ones only with "keep-alive" (RFC 9112 appendix C.2.2). Options are
    /// case-insensitive tokens (RFC 9110 §7.6.1).
    static func isKeepAlive(version: HTTPVersion, headers: HTTPHeaders) -> Bool {
        let options = connectionOptions(headers)
        if options.contains("close") { return false }
        if version.major == 1, version.minor == 0 { return options.contains("keep-alive") }
        return true
    }

    /// The Connection field's options, lowercased.
    static func connectionOptions(_ headers: HTTPHeaders) -> Set<String> {
        Set(headers.listValues(for: "Connection").map { HTTPSyntax.lowercased($0) })
    }
}
