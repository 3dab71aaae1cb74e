/// Turns peer-chosen bytes (ALPN protocol names, a byte that refused to be TLS) into text that is
/// safe to put in a log line.
///
/// ALPN names are opaque byte strings (RFC 7301 §3.1), in practice ASCII ("h2", "http/1.1").
/// Decoding them as UTF-8 would let a hostile client write newlines or terminal escapes into the
/// proxy's log and would map distinct byte strings to the same U+FFFD text; instead printable
/// ASCII is kept and every other byte is written as `\xNN`, which is lossless.
enum TLSLogSafeText {
    static func escaping(_ bytes: some Collection<UInt8>) -> String {
        var text = ""
        text.reserveCapacity(bytes.count)
        for byte in bytes {
            if isPrintableASCII(byte), byte != UInt8(ascii: "\\") {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "\\x" + TLSHex.uint8(byte).dropFirst(2)
            }
        }
        return text
    }

    /// "0x47 ('G')" for a printable byte, "0x00" otherwise: how reasons quote a single byte.
    static func describing(_ byte: UInt8) -> String {
        guard isPrintableASCII(byte) else { return TLSHex.uint8(byte) }
        return TLSHex.uint8(byte) + " ('" + String(Unicode.Scalar(byte)) + "')"
    }

    static func isPrintableASCII(_ byte: UInt8) -> Bool {
        (0x20...0x7E).contains(byte)
    }
}
