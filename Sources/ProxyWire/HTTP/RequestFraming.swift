extension RequestHead {
    /// How the request body ends (RFC 9112 §6.3 rules 3–7, read for a request).
    ///
    /// Anything ambiguous is refused with 400, since the proxy could not know where the next
    /// request starts: Transfer-Encoding together with Content-Length (rule 3 allows reading it
    /// as chunked, but says it "ought to be handled as an error"), Transfer-Encoding in HTTP/1.0
    /// (§6.1), a final coding other than chunked (rule 4), and invalid Content-Length (rule 5).
    /// A transfer coding not registered with IANA is 501 (§6.1: "A server that receives a
    /// request message with a transfer coding it does not understand SHOULD respond with 501"),
    /// and so is a registered one other than chunked (nginx's rule): the next hop may not apply it.
    ///
    /// CONNECT has no content (RFC 9110 §9.3.6): the bytes after its head are the tunnel. One
    /// that declares a body anyway is refused rather than guessed at.
    package func bodyFraming() throws(HeadError) -> BodyFraming {
        if method == "CONNECT" {
            let length = try FramingFields.contentLength(in: headers, kind: .request)
            guard !headers.contains("Transfer-Encoding"), length ?? 0 == 0 else {
                throw .malformed(.request, "a CONNECT request cannot have a body")
            }
            return .none
        }
        if let codings = try FramingFields.transferCodings(in: headers, kind: .request) {
            if version.major == 1, version.minor == 0 {
                throw .malformed(.request, "an HTTP/1.0 request cannot use Transfer-Encoding")
            }
            if headers.contains("Content-Length") {
                throw .malformed(.request, "the request has both Transfer-Encoding and Content-Length")
            }
            guard codings.last == "chunked" else {
                throw .malformed(
                    .request, "the request's Transfer-Encoding does not end with chunked, so its length is unknown")
            }
            if let unknown = codings.first(where: { !FramingFields.knownTransferCodings.contains($0) }) {
                throw .notImplemented(.request, "the transfer coding \"\(unknown)\" is not supported")
            }
            // Only chunked alone is forwarded, as nginx does: an origin that does not apply
            // "gzip, chunked" as a list reads no body, and the chunks become a request of their
            // own (the smuggling corpus's own-te-gzip-chunked).
            if let other = codings.first(where: { $0 != "chunked" }) {
                throw .notImplemented(
                    .request, "the transfer coding \"\(other)\" is not forwarded on requests: only chunked alone is")
            }
            return .chunked
        }
        if let length = try FramingFields.contentLength(in: headers, kind: .request) {
            return .contentLength(length)
        }
        // Rule 7: a request with neither has no body.
        return .none
    }

    /// Whether the client's connection stays open after this exchange (RFC 9112 §9.3).
    package var isKeepAlive: Bool {
        FramingFields.isKeepAlive(version: version, headers: headers)
    }
}
