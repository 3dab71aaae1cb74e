/// The field changes every forwarded message gets, requests and responses alike.
enum ForwardedFields {
    /// Hop-by-hop fields removed, framing fields made unambiguous, and this proxy added to Via.
    static func prepare(_ headers: HTTPHeaders, receivedVersion: HTTPVersion, via: String) -> HTTPHeaders {
        var fields = HopByHopFields.removing(from: headers)
        normalizeContentLength(&fields)
        appendVia(to: &fields, receivedVersion: receivedVersion, via: via)
        return fields
    }

    /// With Transfer-Encoding present, Content-Length is dropped (RFC 9112 §6.3 rule 3: a proxy
    /// that forwards such a message "MUST first remove the received Content-Length field").
    /// Repeated or listed identical values ("5, 5", rule 5) become one line, so the next hop
    /// cannot read them differently. An invalid Content-Length is left alone: ``bodyFraming``
    /// refuses such messages before they are forwarded.
    private static func normalizeContentLength(_ fields: inout HTTPHeaders) {
        guard fields.contains("Content-Length") else { return }
        if fields.contains("Transfer-Encoding") {
            fields.removeAll("Content-Length")
            return
        }
        guard let length = try? FramingFields.contentLength(in: fields, kind: .request) else { return }
        fields.replaceOrAdd(name: "Content-Length", value: String(length))
    }

    /// Via = #( received-protocol RWS received-by ) (RFC 9110 §7.6.3). The received-protocol is
    /// the version of the message as the proxy received it, so "1.0" for an HTTP/1.0 client.
    /// An existing Via gets this hop appended to its last line, keeping the order of hops.
    private static func appendVia(to fields: inout HTTPHeaders, receivedVersion: HTTPVersion, via: String) {
        let hop = "\(receivedVersion.viaProtocol) \(via)"
        if let last = fields.fields.lastIndex(where: { $0.hasName("Via") }) {
            // Appended as bytes, so whatever encoding the earlier hops used is kept.
            let separator = fields[last].valueBytes.isEmpty ? "" : ", "
            fields[last].valueBytes.append(contentsOf: (separator + hop).utf8)
        } else {
            fields.add(name: "Via", value: hop)
        }
    }
}
