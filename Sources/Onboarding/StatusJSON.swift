import ATSPolicy
import ProxyWire
import TextFormats

/// `/status.json`: whether this request came through the proxy, for scripts and tests, as HTTP
/// Toolkit's amiusing check does: `{"proxied":true,"secure":true,"client":"192.168.1.31"}`.
/// `secure` is whether the request came over TLS (through the proxy, that the CA is trusted).
enum StatusJSON {
    static func text(for request: LocalRequest) -> String {
        let (proxied, secure): (Bool, Bool) =
            switch request.arrival {
            case .proxied(let secure): (true, secure)
            case .direct(let secure): (false, secure)
            case .web: (false, false)
            }
        return JSONValue.object([
            ("proxied", .bool(proxied)), ("secure", .bool(secure)), ("client", .string(request.client)),
        ]).serialized
            + "\n"
    }
}
