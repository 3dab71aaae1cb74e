extension ResponseHead {
    /// How the response body ends (RFC 9112 §6.3), given the method of the request it answers.
    ///
    /// - Rule 1: responses to HEAD, and 1xx, 204 and 304 responses, have no body.
    /// - Rule 2: a 2xx answer to CONNECT has no body either: the connection becomes a tunnel.
    /// - Rule 3: Transfer-Encoding overrides Content-Length; see ``connectionMustClose``.
    /// - Rule 4: a final coding of chunked means chunked; any other means until close.
    /// - Rules 5–6: a valid Content-Length, else an invalid one is an error (502).
    /// - Rule 8: otherwise the body runs until the origin closes.
    package func bodyFraming(requestMethod: String) throws(HeadError) -> BodyFraming {
        if requestMethod == "HEAD" || (100...199).contains(status) || status == 204 || status == 304 {
            return .none
        }
        if requestMethod == "CONNECT", (200...299).contains(status) {
            return .none
        }
        if let codings = try FramingFields.transferCodings(in: headers, kind: .response) {
            return codings.last == "chunked" ? .chunked : .untilClose
        }
        if let length = try FramingFields.contentLength(in: headers, kind: .response) {
            return .contentLength(length)
        }
        return .untilClose
    }

    /// Whether the origin's connection stays open after this response (RFC 9112 §9.3).
    package var isKeepAlive: Bool {
        FramingFields.isKeepAlive(version: version, headers: headers)
    }

    /// True when the proxy must close the origin connection after this response even if its
    /// body is read to the end: it is not keep-alive, or its framing was suspect, i.e.
    /// Transfer-Encoding with Content-Length (RFC 9112 §6.3 rule 3: "might indicate an attempt
    /// to perform request smuggling or response splitting") or Transfer-Encoding in HTTP/1.0
    /// (§6.1: "MUST ... close the connection after processing the message").
    /// ``BodyFraming/untilClose`` framing implies closing as well.
    package var connectionMustClose: Bool {
        guard isKeepAlive else { return true }
        guard headers.contains("Transfer-Encoding") else { return false }
        return headers.contains("Content-Length") || (version.major == 1 && version.minor == 0)
    }
}
