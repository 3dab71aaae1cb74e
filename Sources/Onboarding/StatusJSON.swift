import ProxyWire

/// `/status.json`: whether this request came through the proxy, for scripts and tests, as HTTP
/// Toolkit's amiusing check does: `{"proxied":true,"secure":true,"client":"192.168.1.31"}`.
/// `secure` is whether the request came over TLS (through the proxy, that the CA is trusted).
enum StatusJSON {
    static func text(for request: LocalRequest) -> String {
        let (proxied, secure): (Bool, Bool) = switch request.arrival {
        case .proxied(let secure): (true, secure)
        case .direct(let secure): (false, secure)
        case .web: (false, false)
        }
        return "{\"proxied\":\(proxied),\"secure\":\(secure),\"client\":\(string(request.client))}\n"
    }

    /// A JSON string: quotes, backslashes and controls escaped (RFC 8259 §7).
    static func string(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
