/// The log spelling of a protocol version's wire value: "SSLv3", "TLSv1.0" … "TLSv1.3".
///
/// The TLS spellings match `NSExceptionMinimumTLSVersion` (and ATSPolicy's `TLSVersion`), so a
/// logged version can be compared with a policy's floor as text. Anything else, such as a
/// TLS 1.3 draft (0x7f1c) or a GREASE value, is its hex wire value.
package func tlsVersionName(_ wire: UInt16) -> String {
    switch wire {
    case 0x0002: "SSLv2"
    case 0x0300: "SSLv3"
    case 0x0301: "TLSv1.0"
    case 0x0302: "TLSv1.1"
    case 0x0303: "TLSv1.2"
    case 0x0304: "TLSv1.3"
    default: TLSHex.uint16(wire)
    }
}
