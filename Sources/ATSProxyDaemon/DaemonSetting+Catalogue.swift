import ATSPolicy
import ATSPolicyArguments
import ProxyCore

/// The table of settings: each key's flag and value, whether a reload may change it, its rule, its
/// default and its help. Everything else about a setting (the flag's declaration, the parser, the
/// reload's check, `--help`, the docs, the shipped file) reads this or is checked against it.
extension ConfigKey {
    package var setting: DaemonSetting {
        typealias D = DaemonConfiguration.Defaults
        switch self {
        // MARK: Listeners and clients
        case .listen:
            return DaemonSetting(
                self, "ADDR:PORT", .text, repeatable: true, .needsRestart, default: .value(D.listen),
                example: "127.0.0.1:9080", "Address to accept clients on, ADDR:PORT")
        case .transparentListen:
            return DaemonSetting(
                self, "ADDR:PORT", .text, repeatable: true, .needsRestart, default: .none, example: "0.0.0.0:8443",
                "Address to accept connections a firewall redirected to the proxy (transparent mode)",
                discussion:
                    "nftables REDIRECT or TPROXY rules send the devices' TCP here; each connection is judged for the "
                    + "server it dialled, named by its SNI or Host. The proxy's own connections are then marked "
                    + "(--upstream-mark) for the rules to exempt. See docs/capture.md.")
        case .upstreamMark:
            return DaemonSetting(
                self, "N", .integer(1...0xFFFF_FFFF, unit: nil), .needsRestart,
                default: .described("\(D.upstreamMark) (0x4154) with --transparent-listen, none without"),
                example: "16724",
                "Firewall mark (SO_MARK) of the proxy's upstream connections, which redirect rules exempt",
                discussion: "Needs CAP_NET_ADMIN: the daemon refuses to start when the kernel refuses the mark.")
        case .wireguardListen:
            return DaemonSetting(
                self, "ADDR:PORT", .text, .needsRestart, default: .none, example: "0.0.0.0:51820",
                "UDP address of a WireGuard tunnel for phones; their TCP to ports 80 and 443 is judged (docs/capture.md)",
                discussion:
                    "Runs the kernel's WireGuard or Debian's wireguard-go on --wireguard-interface, with the devices "
                    + "atsproxyctl wireguard add-device made in --wireguard-dir; UDP 443 is refused (QUIC falls back "
                    + "to TCP) and DNS is answered. Needs CAP_NET_ADMIN and CAP_NET_BIND_SERVICE.")
        case .wireguardDir:
            return DaemonSetting(
                self, "DIR", .path, .needsRestart, default: .value(D.wireguardDir), example: "/tmp/atsproxy-wireguard",
                "The WireGuard state directory: the proxy's key and one .conf per device, each 0600")
        case .wireguardInterface:
            return DaemonSetting(
                self, "NAME", .text, .needsRestart, default: .value(D.wireguardInterface), example: "atsproxy-wg1",
                "The network interface --wireguard-listen makes (and removes when it stops)")
        case .clientClass:
            return DaemonSetting(
                self, "CLASS", .choice(Self.words(ClientClass.self)), repeatable: true, .applies,
                default: .value(D.clientClass.rawValue), example: "webkit",
                "Which API the clients use: \(Self.list(ClientClass.self))",
                discussion: "Give one for every listener, or one per --listen in the same order.")
        case .allowClient:
            return DaemonSetting(
                self, "CIDR", .text, repeatable: true, .applies, default: .described("loopback only"),
                example: "192.168.1.0/24", "A CIDR range of clients allowed to connect")
        case .allowDestination:
            return DaemonSetting(
                self, "CIDR", .text, repeatable: true, .applies, default: .none, example: "127.0.0.0/8",
                "A CIDR range of local addresses every client may reach",
                discussion:
                    "By default only loopback clients may reach loopback, link-local, unspecified and multicast "
                    + "addresses; the proxy's own listener is refused for everyone.")
        case .threads:
            return DaemonSetting(
                self, "N", .integer(1...256, unit: nil), .needsRestart, default: .described("the number of cores"),
                example: "2", "Event-loop threads")

        // MARK: What connections are judged by
        case .policy:
            return DaemonSetting(
                self, "FILE", .path, .applies, default: .described("the ATS defaults"),
                example: "/etc/atsproxy/ats-defaults.plist",
                "The policy: an app Info.plist or an NSAppTransportSecurity plist")
        case .mode:
            return DaemonSetting(
                self, "enforce|report", .choice(Self.words(EnforcementMode.self)), .applies,
                default: .value(D.mode.rawValue), example: "report",
                "enforce (block non-compliant connections) or report (log them only)")
        case .osProfile:
            return DaemonSetting(
                self, "PROFILE", .choice(Self.words(OSProfile.self)), .applies, default: .value(D.osProfile.rawValue),
                example: "ios26", "iOS behaviour to model: \(Self.list(OSProfile.self))")
        case .cipherProfile:
            return DaemonSetting(
                self, "PROFILE", .choice(Self.words(CipherProfile.self)), .applies,
                default: .value(D.cipherProfile.rawValue), example: "documented",
                "TLS 1.2 suites of the ATS client: \(Self.list(CipherProfile.self))")
        case .verdictTTL:
            return DaemonSetting(
                self, "SECONDS", .integer(0...31_536_000, unit: "seconds"), .applies,
                default: .value("\(D.verdictTTLSeconds)"), example: "60", "Seconds a probe result is reused")
        case .verdictCacheSize:
            // Each entry is a few KB at most (the probe's certificate facts): a million is gigabytes.
            return DaemonSetting(
                self, "N", .integer(1...1_000_000, unit: "entries"), .applies, default: .value("\(D.verdictCacheSize)"),
                example: "500", "The most probe results kept; the least recently used go first")

        // MARK: Trust and names
        case .caFile:
            return DaemonSetting(
                self, "FILE", .path, repeatable: true, .needsRestart, default: .none,
                example: "/etc/atsproxy/lab-root.pem",
                "Extra trust anchors (PEM or DER), treated as user-installed roots")
        case .appAnchor:
            return DaemonSetting(
                self, "FILE", .path, repeatable: true, .needsRestart, default: .none,
                example: "/etc/atsproxy/app-pinned-root.pem",
                "Anchors the app sets itself with SecTrustSetAnchorCertificates (PEM or DER): a root, an intermediate or the leaf"
            )
        case .systemAnchor:
            return DaemonSetting(
                self, "FILE", .path, repeatable: true, .needsRestart, default: .none,
                example: "/etc/atsproxy/rehearsal-root.pem",
                "Certificates trusted as system roots, as if in the OS store (PEM or DER)")
        case .systemRoots:
            return DaemonSetting(
                self, "on|off", .choice(Self.words(OnOff.self)), .needsRestart,
                default: .value(D.systemRoots ? "on" : "off"), example: "off",
                "Trust the OS store as Apple's system roots: on or off")
        case .tunnelStart:
            return DaemonSetting(
                self, "verdict|connect", .choice(Self.words(TunnelStart.self)), .applies,
                default: .value(D.tunnelStart.rawValue), example: "verdict",
                "When a tunnel-mode CONNECT to a host with no verdict yet gets its 200: verdict (after it: a block is a 403, one round trip more than direct) or connect (when the server's connection opens: no round trip more, and a block on the first connection fails the device's handshake)"
            )
        case .aiaFetch:
            return DaemonSetting(
                self, "on|off", .choice(Self.words(OnOff.self)), .applies,
                default: .value(D.fetchesIntermediates ? "on" : "off"), example: "off",
                "Fetch an intermediate a server leaves out from its CA Issuers URL (http, under the destination rules), as iOS does: on or off"
            )
        // The list is loaded into the probes' trust store at start, as the anchors are.
        case .ctLogList:
            return DaemonSetting(
                self, "FILE", .path, .needsRestart, default: .none, example: "/etc/atsproxy/ct_log_list.json",
                "Apple's CT log list (JSON): verify SCT signatures, log states and operators instead of counting SCTs")
        case .hostsFile:
            return DaemonSetting(
                self, "FILE", .path, .applies, default: .none, example: "/etc/atsproxy/hosts",
                "Names to addresses in /etc/hosts format, consulted before /etc/hosts and DNS")

        // MARK: Output and control
        case .logFile:
            return DaemonSetting(
                self, "PATH", .path, .needsRestart, default: .described("standard output"),
                example: "/var/log/atsproxy/atsproxy.log", "Where the JSON log is appended")
        case .controlSocket:
            return DaemonSetting(
                self, "PATH", .path, .needsRestart, default: .value(D.controlSocket),
                example: "/run/atsproxy/other.sock", "The Unix socket atsproxyctl talks to")

        // MARK: Time limits
        case .shutdownTimeout:
            // 0: stop at once, without waiting for tunnels.
            return DaemonSetting(
                self, "SECONDS", .integer(0...86_400, unit: "seconds"), .applies,
                default: .value("\(D.shutdownTimeoutSeconds)"), example: "5",
                "Seconds a graceful stop lets open tunnels drain")
        case .headTimeout:
            return DaemonSetting(
                self, "SECONDS", Self.timeLimit, .applies, default: .value("\(D.headTimeoutSeconds)"), example: "5",
                "Seconds a client has to finish its request head after its first byte")
        case .connectTimeout:
            return DaemonSetting(
                self, "SECONDS", Self.timeLimit, .applies, default: .value("\(D.connectTimeoutSeconds)"), example: "5",
                "Seconds a connection to an upstream server may take to open")
        case .handshakeTimeout:
            return DaemonSetting(
                self, "SECONDS", Self.timeLimit, .applies, default: .value("\(D.handshakeTimeoutSeconds)"),
                example: "5",
                "Seconds the TLS handshake that judges a CONNECT may take in all, from its first byte")
        case .idleTimeout:
            return DaemonSetting(
                self, "SECONDS", Self.timeLimit, .applies, default: .value("\(D.idleTimeoutSeconds)"), example: "60",
                "Seconds a tunnel, exchange or keep-alive client may go with no byte moving either way")

        // MARK: Intercept mode
        case .inspect:
            return DaemonSetting(
                self, "tunnel|intercept", .choice(Self.words(InspectMode.self)), .applies,
                default: .value(D.inspect.rawValue), example: "intercept",
                "tunnel (judge a probe's handshake, relay the device's bytes unread) or intercept (terminate the device's TLS with a certificate from --ca-dir, judge the proxy's own upstream handshake, log every request)"
            )
        case .blockStyle:
            return DaemonSetting(
                self, "abort|page", .choice(Self.words(BlockStyle.self)), .applies,
                default: .value(D.blockStyle.rawValue), example: "page",
                "Intercept mode, enforce: abort (fail the device's handshake, as the app's connection would fail) or page (a 403 page naming the violations)"
            )
        case .passthrough:
            return DaemonSetting(
                self, "PATTERN", .text, repeatable: true, .applies, default: .none, example: "*.apple.com",
                "A host never intercepted, api.example.com or *.example.com",
                discussion:
                    "Its tunnel is judged by a probe, as in tunnel mode. Hosts the policy pins (NSPinnedDomains) are never intercepted either."
            )
        case .logHeaders:
            return DaemonSetting(
                self, "on|off", .choice(Self.words(OnOff.self)), .applies,
                default: .value(D.logHeaders ? "on" : "off"), example: "on",
                "Intercept mode: log request and response headers on each request line: on or off")
        case .logSecrets:
            return DaemonSetting(
                self, "on|off", .choice(Self.words(OnOff.self)), .applies,
                default: .value(D.logSecrets ? "on" : "off"), example: "on",
                "With --log-headers: log Authorization, Cookie and Set-Cookie values instead of [redacted]: on or off")
        // A new CA would need every loop's minted leaves dropped.
        case .caDir:
            return DaemonSetting(
                self, "DIR", .path, .needsRestart, default: .value(D.caDir), example: "/tmp/atsproxy-ca",
                "The directory of ca.pem and ca.key that intercept mode mints certificates with (atsproxyctl ca init makes them)"
            )

        // MARK: The web listener
        case .webListen:
            return DaemonSetting(
                self, "ADDR:PORT", .text, .needsRestart, default: .value(D.webListen), example: "127.0.0.1:9081",
                "Where the live view and /metrics are served: ADDR:PORT, or off",
                discussion:
                    "Beyond loopback, --web-token is required. When the default address is taken, the proxy starts without it and says so."
            )
        case .webToken:
            return DaemonSetting(
                self, "TOKEN", .text, .applies, default: .none, example: "0123456789abcdef0123456789abcdef",
                "A secret web clients beyond loopback must present: open http://HOST:PORT/?token=TOKEN once (a cookie keeps it), or send Authorization: Bearer TOKEN",
                discussion:
                    "A flag's value is visible to every local user in ps: prefer web-token-file, or this key in a config file only root reads."
            )
        // Read on every reload too: a new token in the file takes effect without a restart.
        case .webTokenFile:
            return DaemonSetting(
                self, "FILE", .path, .applies, default: .none, example: "/etc/atsproxy/web-token",
                "A file holding the web token (its first line; surrounding spaces and newlines ignored), read at start and on every reload",
                discussion: "Kept out of ps and of the config file; give web-token or web-token-file, not both.")
        case .pacHosts:
            return DaemonSetting(
                self, "PATTERN", .text, repeatable: true, .applies,
                default: .described("every host but Apple's own services"), example: "*.example.com",
                "A host the PAC file (/proxy.pac) sends to the proxy, api.example.com or *.example.com")
        }
    }

    /// The range of every time limit but the shutdown's. The upper bound catches milliseconds written
    /// as seconds, and keeps the conversions to milliseconds and timer values far from overflow.
    private static let timeLimit = DaemonSetting.Kind.integer(1...86_400, unit: "seconds")

    private static func words<Value: CaseIterable & RawRepresentable>(_: Value.Type) -> [String]
    where Value.RawValue == String { Value.allCases.map(\.rawValue) }

    /// `a, b or c`, for a summary.
    private static func list<Value: CaseIterable & RawRepresentable>(_ type: Value.Type) -> String
    where Value.RawValue == String {
        let all = words(type)
        return all.count < 2 ? all.joined() : all.dropLast().joined(separator: ", ") + " or " + (all.last ?? "")
    }
}
