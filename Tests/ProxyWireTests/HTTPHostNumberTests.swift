import ProxyWire
import Testing

/// Host names whose last label is a number are IPv4 addresses in disguise and pass only as a
/// dotted quad. The edges of that rule: trailing dots, an empty label, "0x" with and without
/// digits, and parts out of range.
@Suite("Numeric host names")
struct HTTPHostNumberTests {
    static let cases: [(host: String, accepted: String?)] = [
        ("1.2.3.4", "1.2.3.4"), ("0.0.0.0", "0.0.0.0"), ("255.255.255.255", "255.255.255.255"),
        ("1.2.3.4.", nil), ("01.2.3.4", nil), ("1.2.3.256", nil), ("1.2.3", nil), ("1.2.3.4.5", nil), ("1..3.4", nil),
        ("a.1", nil), ("a.1.", nil), ("a.0x", nil), ("a.0X1F", nil), ("a.0x1f.", nil),
        ("a.0xg", "a.0xg"), ("a.1x", "a.1x"), ("Example.COM", "example.com"), ("a.", "a."), ("a..", "a.."),
        ("1a", "1a"),
    ]

    @Test("CONNECT accepts a numeric last label only in a dotted quad", arguments: cases)
    func connectTarget(_ host: String, _ accepted: String?) {
        let result = HTTPTestSupport.parseRequest("CONNECT \(host):443 HTTP/1.1\r\n\r\n")
        if let accepted {
            guard case .complete(let head, _) = result else {
                Issue.record("\(host) was refused: \(result)")
                return
            }
            #expect(head.target == .authority(host: accepted, port: 443))
        } else {
            let reason = HTTPTestSupport.failure(result)?.reason ?? ""
            #expect(reason.contains("dotted quad"), "\(host): \(result)")
        }
    }

    @Test("the Host field follows the same rule", arguments: cases)
    func hostField(_ host: String, _ accepted: String?) {
        let result = HTTPTestSupport.parseRequest("CONNECT example.com:443 HTTP/1.1\r\nHost: \(host)\r\n\r\n")
        if accepted != nil {
            #expect(HTTPTestSupport.failure(result) == nil, "\(host): \(result)")
        } else {
            #expect(HTTPTestSupport.failure(result)?.reason.contains("dotted quad") == true, "\(host): \(result)")
        }
    }
}
