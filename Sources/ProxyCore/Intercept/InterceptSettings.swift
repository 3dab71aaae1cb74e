import ATSPolicy

/// How a CONNECT's TLS is looked at.
package enum InspectMode: String, Sendable, CaseIterable {
    /// Judged by a probe of the proxy's own; the device's bytes pass through unread.
    case tunnel
    /// Terminated with a minted certificate; the proxy's own upstream handshake is judged and every
    /// request inside is logged.
    case intercept
}

/// What a device is told when intercept mode blocks its connection.
package enum BlockStyle: String, Sendable, CaseIterable {
    /// Its handshake fails with a fatal alert, as the app's own connection would on an iPhone.
    case abort
    /// Its handshake completes, and each request gets a 403 page naming the violations.
    case page
}

/// A host name pattern for `--passthrough`: an exact name (`api.example.com`) or every name under a
/// suffix (`*.example.com`, which does not match `example.com` itself). Names compare without case
/// and without a trailing dot.
package struct HostPattern: Sendable, Hashable, CustomStringConvertible {
    /// The name, or the suffix after `*.`, lowercased.
    package let name: String
    package let coversSubdomains: Bool

    package enum ParseError: Error, Equatable, CustomStringConvertible {
        case empty
        case misplacedWildcard(String)
        case notAHostName(String)

        package var description: String {
            switch self {
            case .empty: "an empty host pattern"
            case .misplacedWildcard(let text):
                "\"\(text)\": a wildcard is allowed only as the first label (*.example.com)"
            case .notAHostName(let text): "\"\(text)\" is not a host name or *.suffix pattern"
            }
        }
    }

    package init(parsing text: String) throws(ParseError) {
        var body = text.lowercased()
        if body.hasSuffix(".") { body.removeLast() }
        guard !body.isEmpty else { throw .empty }
        coversSubdomains = body.hasPrefix("*.")
        if coversSubdomains { body.removeFirst(2) }
        guard !body.contains("*") else { throw .misplacedWildcard(text) }
        guard !body.isEmpty, body.allSatisfy({ $0.isLetter || $0.isNumber || "-._:".contains($0) }) else {
            throw .notAHostName(text)
        }
        name = body
    }

    package func matches(_ host: String) -> Bool {
        var host = host.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        return coversSubdomains ? host.hasSuffix("." + name) : host == name
    }

    package var description: String { coversSubdomains ? "*.\(name)" : name }
}

/// Intercept mode's settings: part of ``ProxySettings``, so a reload applies them to new
/// connections and open ones keep theirs.
package struct InterceptSettings: Sendable {
    package var mode: InspectMode = .tunnel
    package var blockStyle: BlockStyle = .abort
    /// Hosts never intercepted (`--passthrough`): their tunnels are judged by a probe, as in tunnel mode.
    package var passthrough: [HostPattern] = []
    /// `--log-headers`: request and response headers on each request line.
    package var logHeaders = false
    /// `--log-secrets`: credentials and cookies logged as they are, not redacted.
    package var logSecrets = false
    /// How many times a device may abort the minted handshake for one host before that host is
    /// passed through (a pinning app, or a device that does not trust the CA).
    package var rejectionsBeforePassthrough = 3

    package init() {}

    /// Whether `host` is one the settings say never to intercept.
    package func passesThrough(_ host: String) -> Bool { passthrough.contains { $0.matches(host) } }
}

/// Why intercept mode relayed a connection as a tunnel: the log's `passthrough` value.
package enum PassthroughReason: String, Sendable {
    /// NSPinnedDomains pins the host: the app would reject any minted leaf.
    case pinned
    /// `--passthrough` names it.
    case passthroughPattern = "passthrough_pattern"
    /// The device's first bytes were not a TLS ClientHello.
    case notTLS = "not_tls"
    /// The ClientHello offers ALPN with no HTTP the proxy relays: neither http/1.1 nor h2. (The
    /// value's name is older than HTTP/2 relaying, and kept: log values are never renamed.)
    case noHTTP1ALPN = "no_http1_alpn"
    /// Devices rejected the minted certificate for this host too often.
    case clientRejectedBefore = "client_rejected_before"
}
