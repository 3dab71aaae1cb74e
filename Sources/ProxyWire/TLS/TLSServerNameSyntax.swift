/// Whether a server_name's host_name is a host name a TLS client may send (RFC 6066 §3): ASCII
/// letters, digits, '-' and '.' (and '_', which real hosts use although DNS host names may not),
/// at most 253 bytes in labels of 1 to 63 bytes, with no trailing dot. An internationalized name
/// arrives as its punycode A-labels (`xn--…`), which is how Apple's and OpenSSL's clients send it.
///
/// What is not a host name cannot be judged by any rule: the proxy refuses to pass it on, and
/// rejecting it also keeps control characters and non-ASCII out of the log.
enum TLSServerNameSyntax {
    /// The longest DNS name in text form, without a trailing dot (RFC 1035 §2.3.4's 255 octets on the wire).
    static let maximumLength = 253
    static let maximumLabelLength = 63
    /// How much of a refused name a reason quotes.
    static let quotedLength = 64

    /// Nil for a host name; else the reason, quoting the name: `the SNI "a b" is not a host name: …`.
    static func problem(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard let fault = fault(bytes) else { return nil }
        var quoted = TLSLogSafeText.escaping(bytes.prefix(quotedLength))
        if bytes.count > quotedLength { quoted += "…" }
        return "the SNI \"\(quoted)\" is not a host name: \(fault)"
    }

    private static func fault(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard bytes.count <= maximumLength else {
            return "it is \(bytes.count) bytes long, more than a DNS name's \(maximumLength)"
        }
        if let bad = bytes.first(where: { !isHostNameByte($0) }) {
            let idn = bad >= 0x80 ? " (an internationalized name is sent as punycode, xn--…)" : ""
            return "it contains \(TLSLogSafeText.describing(bad)), which is not a letter, digit, '-', '_' or '.'" + idn
        }
        if bytes.last == UInt8(ascii: ".") { return "it ends with a dot, which RFC 6066 §3 forbids" }
        for label in bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            if label.isEmpty { return "it has an empty label" }
            if label.count > maximumLabelLength {
                return "a label is \(label.count) bytes long, more than \(maximumLabelLength)"
            }
        }
        return nil
    }

    private static func isHostNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }
}
