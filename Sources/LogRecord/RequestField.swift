/// The fields of a request line (kind `request` or `tls_stream`), in the order they are written:
/// docs/request-log.md is the contract. Fields may be added (at the end), never renamed.
package enum RequestField: String, LogField {
    case ts, kind
    case connectionID = "connection_id"
    case client, host, port, sni, upstream, method, url
    case httpVersion = "http_version"
    case status
    case statusText = "status_text"
    case contentType = "content_type"
    case requestBodyBytes = "request_body_bytes"
    case responseBodyBytes = "response_body_bytes"
    case requestHeadBytes = "request_head_bytes"
    case responseHeadBytes = "response_head_bytes"
    case sendMilliseconds = "send_ms"
    case timeToFirstByteMilliseconds = "ttfb_ms"
    case durationMilliseconds = "duration_ms"
    case reused, compliant, action, rule, violations, error
    case upstreamError = "upstream_error"
    case upgrade
    case requestHeaders = "request_headers"
    case responseHeaders = "response_headers"
    /// The connection's key-exchange group, as its line's `tls.group` (``KeyExchangeGroupField``).
    case tlsGroup = "tls_group"
    /// ``Failure``'s code for `upstream_error`, when the proxy has one; null otherwise. Lines
    /// written before it existed have no such field.
    case failure
    /// The HTTP/2 stream's id on the device's connection; null for HTTP/1.x.
    case streamID = "stream_id"
    /// gRPC's status and message, from the response's trailers (or a trailers-only response);
    /// null for anything else.
    case grpcStatus = "grpc_status"
    case grpcMessage = "grpc_message"
    /// The app the request's own User-Agent names (``AppAgent``), else the connection's; null when
    /// neither was sent. Lines written before it existed have no such field.
    case app
    /// The connection's WireGuard peer (``ConnectionField/device``); null for every other client.
    case device
}

/// The members of each element of a request line's `request_headers` and `response_headers`.
package enum HeaderField: String, LogField {
    case name, value
}
