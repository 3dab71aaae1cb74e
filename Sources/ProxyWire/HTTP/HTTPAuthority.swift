/// authority = host [ ":" port ] without userinfo, as in CONNECT targets, absolute URLs and
/// the Host field (RFC 9112 §3.2.3, RFC 9110 §4.2.1 and §7.2).
struct HTTPAuthority: Sendable, Equatable {
    /// Lowercased; IPv6 without brackets.
    var host: String
    var port: UInt16?

    /// The host as it is written in an authority: IPv6 goes back into brackets, and a zone id
    /// is written `%25zone` (RFC 6874 §2).
    static func written(host: String, port: UInt16?) -> String {
        var text = host
        if host.utf8.contains(HTTPSyntax.colon) {
            text = "[" + host.replacingPercentSign(with: "%25") + "]"
        }
        if let port { text += ":\(port)" }
        return text
    }

    /// Parses `bytes`; `portRequired` is true for CONNECT, whose target has no default port.
    /// Failures are sentences that complete "the request target …".
    static func parse(_ bytes: ArraySlice<UInt8>, portRequired: Bool) -> Result<HTTPAuthority, AuthorityProblem> {
        // RFC 9110 §4.2.4: a sender MUST NOT generate userinfo in http(s) URIs, and a proxy that
        // forwarded it would leak credentials to logs; it is refused outright.
        if bytes.contains(UInt8(ascii: "@")) { return .failure(.userinfo) }
        let hostEnd: ArraySlice<UInt8>.Index
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return .failure(.host(.unclosedBracket)) }
            hostEnd = close + 1
        } else {
            hostEnd = bytes.firstIndex(of: HTTPSyntax.colon) ?? bytes.endIndex
        }
        let hostBytes = bytes[bytes.startIndex..<hostEnd]
        var portBytes: ArraySlice<UInt8>?
        if hostEnd < bytes.endIndex {
            guard bytes[hostEnd] == HTTPSyntax.colon else { return .failure(.junkAfterHost) }
            portBytes = bytes[(hostEnd + 1)...]
            if let portBytes, portBytes.contains(HTTPSyntax.colon), bytes.first != UInt8(ascii: "[") {
                return .failure(.unbracketedIPv6)
            }
        }
        let host: String
        switch HTTPHostSyntax.normalizedHost(hostBytes) {
        case .success(let normalized): host = normalized
        case .failure(let problem): return .failure(.host(problem))
        }
        // An empty port after the colon means no port (RFC 3986 §3.2.3 and §6.2.3).
        guard let portBytes, !portBytes.isEmpty else {
            return portRequired ? .failure(.missingPort) : .success(HTTPAuthority(host: host, port: nil))
        }
        guard let port = parsePort(portBytes) else { return .failure(.invalidPort) }
        return .success(HTTPAuthority(host: host, port: port))
    }

    /// 1 to 5 digits with a value of 1–65535: port 0 cannot be connected to.
    private static func parsePort(_ bytes: ArraySlice<UInt8>) -> UInt16? {
        guard (1...5).contains(bytes.count), bytes.allSatisfy(HTTPSyntax.isDigit) else { return nil }
        let value = bytes.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard (1...65_535).contains(value) else { return nil }
        return UInt16(value)
    }

    enum AuthorityProblem: Error, Equatable {
        case userinfo
        case host(HTTPHostSyntax.HostProblem)
        case junkAfterHost
        case unbracketedIPv6
        case missingPort
        case invalidPort

        var sentence: String {
            switch self {
            case .userinfo: "has user@ credentials in it, which a proxy request must not carry"
            case .host(let problem): problem.sentence
            case .junkAfterHost: "has characters after the IPv6 address that are not a :port"
            case .unbracketedIPv6: "has an IPv6 address that is not in brackets"
            case .missingPort: "has no port: CONNECT needs host:port"
            case .invalidPort: "has a port that is not a number from 1 to 65535"
            }
        }
    }
}

extension String {
    fileprivate func replacingPercentSign(with replacement: String) -> String {
        var result = ""
        for character in self {
            if character == "%" { result += replacement } else { result.append(character) }
        }
        return result
    }
}
