import ProxyWire

/// The proxy auto-config (PAC) script `/proxy.pac` serves: iOS's Wi-Fi → Configure Proxy →
/// Automatic runs its `FindProxyForURL(url, host)` for every load.
///
/// Decisions, in order:
/// 1. `host` is lowercased, loses one trailing dot (iOS 10.2+ passes "example.com.") and IPv6
///    brackets.
/// 2. ``OnboardingHost/name`` goes to the proxy always, so the onboarding pages load whatever the filter.
/// 3. Loopback ("localhost", "*.localhost", 127.0.0.0/8, ::1) goes DIRECT: it is the phone's own,
///    which the proxy cannot reach; so does the proxy's own host (its pages are served to it directly).
/// 4. Apple's own services (``AppleServices``) go DIRECT, so the phone stays usable.
/// 5. With host patterns, only the hosts they match go to the proxy, the rest DIRECT; without,
///    every host goes to the proxy (IP literals, dotless and `.local` names included: ATS judges
///    those too).
///
/// The answer for a proxied host is `PROXY host:port` alone, with no `; DIRECT` fallback: when the
/// proxy is down, loads fail where the developer sees them instead of going around the proxy and
/// skipping its ATS check.
///
/// The script is self-contained (no `dnsDomainIs`, `shExpMatch` or `isInNet`), so it never makes a
/// DNS lookup and any JavaScript engine can run it, and every value in it is a string literal.
struct ProxyAutoConfig {
    /// The proxy's address as the device reached it ("192.168.1.20:8080", "[fd00::1]:8080").
    let proxy: String
    /// The only hosts sent to the proxy; empty for every host.
    let onlyHosts: [PACHostPattern]

    var script: String {
        let proxyHost = ListenerAddress(proxy).host.lowercased()
        let apple = AppleServices.domains.map { "    \(Self.literal($0.domain)), // \($0.why)" }.joined(separator: "\n")
        let exact = onlyHosts.filter { !$0.includesSubdomains }.map { Self.literal($0.host) }.joined(separator: ", ")
        let domains = onlyHosts.filter(\.includesSubdomains).map { Self.literal($0.host) }.joined(separator: ", ")
        let choice: String
        if onlyHosts.isEmpty {
            choice = """
                    // No host list: every other host goes to the proxy.
                    return atsproxy;
                """
        } else {
            choice = """
                    // Only the listed hosts go to the proxy (*.domain includes the domain itself).
                    var exact = [\(exact)];
                    var domains = [\(domains)];
                    for (var j = 0; j < exact.length; j++) if (host == exact[j]) return atsproxy;
                    for (var k = 0; k < domains.length; k++) if (atsproxyWithin(host, domains[k])) return atsproxy;
                    return "DIRECT";
                """
        }
        return """
            // atsproxy's proxy auto-config for \(Self.comment(proxy)).
            // A proxied host gets "PROXY host:port" with no "; DIRECT" fallback: when atsproxy is down,
            // loads fail visibly instead of going around the proxy and skipping its ATS check.
            var atsproxy = \(Self.literal("PROXY " + proxy));
            var atsproxyHost = \(Self.literal(proxyHost));

            // Apple's own services go DIRECT: they refuse HTTPS interception (support.apple.com/101555),
            // and the phone must stay usable while proxied. Each covers its subdomains.
            var atsproxyApple = [
            \(apple)
            ];

            // Whether host is domain or a name under it.
            function atsproxyWithin(host, domain) {
                if (host == domain) return true;
                var tail = "." + domain;
                return host.length > tail.length && host.substring(host.length - tail.length) == tail;
            }

            function FindProxyForURL(url, host) {
                host = String(host).toLowerCase();
                // iOS 10.2+ passes absolute names with a trailing dot ("example.com.").
                if (host.charAt(host.length - 1) == ".") host = host.substring(0, host.length - 1);
                if (host.charAt(0) == "[" && host.charAt(host.length - 1) == "]") host = host.substring(1, host.length - 1);
                // The onboarding pages are answered by the proxy itself.
                if (host == \(Self.literal(OnboardingHost.name))) return atsproxy;
                // The phone's own loopback, which the proxy cannot reach, and the proxy itself.
                if (atsproxyWithin(host, "localhost") || /^127\\.[0-9]+\\.[0-9]+\\.[0-9]+$/.test(host)
                    || host == "::1" || host == "0:0:0:0:0:0:0:1" || host == atsproxyHost) return "DIRECT";
                for (var i = 0; i < atsproxyApple.length; i++) if (atsproxyWithin(host, atsproxyApple[i])) return "DIRECT";
            \(choice)
            }

            """
    }

    /// A JavaScript string literal: quotes, backslashes, controls and everything past ASCII escaped,
    /// so no value can end the string or the script.
    static func literal(_ text: String) -> String {
        var out = "\""
        for unit in text.utf16 {
            switch unit {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x20..<0x7F where unit != 0x3C: out.append(Character(Unicode.Scalar(unit)!))
            default:
                let hex = String(unit, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return out + "\""
    }

    /// Text fit for a `//` comment: one line, printable ASCII only.
    static func comment(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" })
    }
}
