extension ResponseHead {
    /// How the response body ends (RFC 9112 §6.3), given the method of the request it answers.
    ///
    /// - Rule 1: responses to HEAD, and 1xx, 204 and 304 responses, have no body.
    /// - Rule 2: a 2xx answer to CONNECT has no body either: the connection becomes a tunnel.
    /// - Rule 3: Transfer-Encoding overrides Content-Length; see ``connectionMustClose``.
    /// - Rule 4: the final coding must be chunked: see ``checkTransferEncoding()``, which every
    ///   response with the field passes first, whatever its status or method.
    /// - Rules 5–6: a valid Content-Length, else an invalid one is an error (502).
    /// - Rule 8: otherwise the body runs until the origin closes.
    package func bodyFraming(requestMethod: String) throws(HeadError) -> BodyFraming {
        let chunked = try checkTransferEncoding()
        if requestMethod == "HEAD" || (100...199).contains(status) || status == 204 || status == 304 {
            return .none
        }
        if requestMethod == "CONNECT", (200...299).contains(status) {
            return .none
        }
        if chunked { return .chunked }
        if let length = try FramingFields.contentLength(in: headers, kind: .response) {
            return .contentLength(length)
        }
        return .untilClose
    }

    /// Refuses (502) a Transfer-Encoding the proxy cannot relay as it came without two readers
    /// finding two different ends of the body, and says whether the field is there (and sound).
    ///
    /// The field is sound only as an HTTP/1.1 list of registered transfer codings
    /// (``FramingFields/knownTransferCodings``: chunked, gzip, deflate, compress and their `x-`
    /// names; not `identity`, which RFC 7230 removed, nor content codings such as `br`) whose last
    /// is chunked, once. RFC 9112 §6.3 rule 4 lets a response whose final coding is not chunked run
    /// until the close, but a client that finds `chunked` anywhere in `chunked, identity`, or in
    /// `xchunked`, reads a chunked body there and takes what follows its last chunk for a second
    /// response: Squid refuses such responses, and so does the proxy. An HTTP/1.0 response with
    /// the field is refused too: §6.1 has its recipient "treat the message as if the framing is
    /// faulty", since an HTTP/1.0 client does not know chunked. The reason quotes the field.
    private func checkTransferEncoding() throws(HeadError) -> Bool {
        guard headers.contains("Transfer-Encoding") else { return false }
        let value = headers.values(for: "Transfer-Encoding").joined(separator: ", ")
        let quoted = "Transfer-Encoding \"\(value.count > 200 ? String(value.prefix(200)) + "…" : value)\""
        if version.major == 1, version.minor == 0 {
            throw .malformed(.response, "an HTTP/1.0 response cannot use Transfer-Encoding, and this one has \(quoted)")
        }
        let codings: [String]
        do {
            codings = try FramingFields.transferCodings(in: headers, kind: .response) ?? []
        } catch {
            throw .malformed(.response, "the response's \(quoted) cannot be read: \(error.reason)")
        }
        guard codings.last == "chunked" else {
            throw .malformed(
                .response,
                "the response's \(quoted) does not end in chunked, so a client could find another end of its body")
        }
        if let unknown = codings.first(where: { !FramingFields.knownTransferCodings.contains($0) }) {
            throw .notImplemented(.response, "the response's \(quoted) has \"\(unknown)\", not a known transfer coding")
        }
        return true
    }

    /// Whether the origin's connection stays open after this response (RFC 9112 §9.3).
    package var isKeepAlive: Bool {
        FramingFields.isKeepAlive(version: version, headers: headers)
    }

    /// True when the proxy must close the origin connection after this response even if its
    /// body is read to the end: it is not keep-alive, or its framing was suspect, i.e.
    /// Transfer-Encoding with Content-Length (RFC 9112 §6.3 rule 3: "might indicate an attempt
    /// to perform request smuggling or response splitting") or Transfer-Encoding in HTTP/1.0
    /// (§6.1: "MUST ... close the connection after processing the message"; such a response is
    /// refused by ``bodyFraming(requestMethod:)`` before its body is read).
    /// ``BodyFraming/untilClose`` framing implies closing as well.
    package var connectionMustClose: Bool {
        guard isKeepAlive else { return true }
        guard headers.contains("Transfer-Encoding") else { return false }
        return headers.contains("Content-Length") || (version.major == 1 && version.minor == 0)
    }
}
