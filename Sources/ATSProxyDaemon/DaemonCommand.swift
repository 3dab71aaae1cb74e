import ATSPolicy
import ATSPolicyArguments
import ArgumentParser
import ProxyCore

extension EnforcementMode: ExpressibleByArgument {}
extension InspectMode: ExpressibleByArgument {}
extension BlockStyle: ExpressibleByArgument {}

/// `atsproxy`: the proxy daemon, in the foreground (systemd style), logging one JSON line per
/// connection to stdout or a file.
///
/// Every setting is optional here, so that a flag left out can fall back to the config file;
/// ``resolveConfiguration()`` merges the flags, the file and the defaults in one place.
package struct DaemonCommand: ParsableCommand, Sendable {
    package static let configuration = CommandConfiguration(
        commandName: "atsproxy",
        abstract: "An HTTPS proxy that judges every connection by App Transport Security, as an iPhone app would.",
        discussion: """
            Point a device, emulator or simulator at the proxy (HTTP proxy, CONNECT for https). Each connection \
            is judged against the policy (an app Info.plist or its NSAppTransportSecurity dictionary); in \
            enforce mode non-compliant ones get 403 with the violations, in report mode they pass and are logged.

            Every flag but --config and --check-config is also a key of the config file (key = value lines, \
            see config/atsproxy.conf). A flag overrides the file's value; a repeatable flag replaces all of \
            the file's lines for that key.

            Examples:
              atsproxy --policy MyApp/Info.plist
              atsproxy --listen 0.0.0.0:8080 --allow-client 192.168.1.0/24 --mode report
              atsproxy --config /etc/atsproxy/atsproxy.conf --check-config
              curl -x http://127.0.0.1:8080 https://example.com/
            """)

    typealias Defaults = DaemonConfiguration.Defaults

    @Option(help: "Read settings from this file of key = value lines; flags override it (default: no file).")
    var config: String?

    @Flag(
        name: .customLong("check-config"),
        help: "Check the config file, the flags and the files they name, print a summary and exit; binds nothing.")
    var checkConfig = false

    @Option(help: "Address to accept clients on, ADDR:PORT (repeatable; default \(Defaults.listen)).")
    var listen: [String] = []

    @Option(help: "The policy: an app Info.plist or an NSAppTransportSecurity plist (default: the ATS defaults).")
    var policy: String?

    @Option(
        help: "enforce (block non-compliant connections) or report (log them only) (default \(Defaults.mode.rawValue))."
    )
    var mode: EnforcementMode?

    @Option(
        name: .customLong("ca-file"),
        help: "Extra trust anchors (PEM or DER), treated as user-installed roots (repeatable).")
    var caFiles: [String] = []

    @Option(
        name: .customLong("app-anchor"),
        help:
            "Anchors the app sets itself with SecTrustSetAnchorCertificates (PEM or DER; repeatable): a root, an intermediate or the leaf."
    )
    var appAnchorFiles: [String] = []

    @Option(
        name: .customLong("system-anchor"),
        help: "Certificates trusted as system roots, as if in the OS store (PEM or DER; repeatable).")
    var systemAnchorFiles: [String] = []

    @Option(
        name: .customLong("system-roots"), help: "Trust the OS store as Apple's system roots: on or off (default on).")
    var systemRoots: OnOff?

    @Option(name: .customLong("log-file"), help: "Append the JSON log here instead of standard output.")
    var logFile: String?

    @Option(
        name: .customLong("os-profile"),
        help:
            "iOS behaviour to model: ios9, ios10, ios17, ios26, apple-system (default \(Defaults.osProfile.rawValue)).")
    var osProfile: OSProfile?

    @Option(
        name: .customLong("cipher-profile"),
        help: "TLS 1.2 suites of the ATS client: current or documented (default \(Defaults.cipherProfile.rawValue)).")
    var cipherProfile: CipherProfile?

    @Option(
        name: .customLong("client-class"),
        help: ArgumentHelp(
            "Which API the clients use: urlsession, webkit or media (default \(Defaults.clientClass.rawValue)).",
            discussion: "Give one for every listener, or one per --listen in the same order."))
    var clientClasses: [ClientClass] = []

    @Option(
        name: .customLong("hosts-file"),
        help: "Names to addresses in /etc/hosts format, consulted before /etc/hosts and DNS.")
    var hostsFile: String?

    @Option(
        name: .customLong("allow-client"),
        help: "A CIDR range of clients allowed to connect (repeatable; default loopback).")
    var allowClients: [String] = []

    @Option(
        name: .customLong("allow-destination"),
        help: ArgumentHelp(
            "A CIDR range of local addresses every client may reach (repeatable).",
            discussion: "By default only loopback clients may reach loopback, link-local, unspecified and multicast "
                + "addresses; the proxy's own listener is refused for everyone."))
    var allowDestinations: [String] = []

    @Option(
        name: .customLong("verdict-ttl"),
        help: "Seconds a probe result is reused (default \(Defaults.verdictTTLSeconds)).")
    var verdictTTL: Int?

    @Option(
        name: .customLong("verdict-cache-size"),
        help: "The most probe results kept; the least recently used go first (default \(Defaults.verdictCacheSize)).")
    var verdictCacheSize: Int?

    @Option(help: "Event-loop threads (default: the number of cores).")
    var threads: Int?

    @Option(
        name: .customLong("control-socket"),
        help: "The Unix socket atsproxyctl talks to (default \(Defaults.controlSocket)).")
    var controlSocket: String?

    @Option(
        name: .customLong("shutdown-timeout"),
        help: "Seconds a graceful stop lets open tunnels drain (default \(Defaults.shutdownTimeoutSeconds)).")
    var shutdownTimeout: Int?

    @Option(
        name: .customLong("head-timeout"),
        help:
            "Seconds a client has to finish its request head after its first byte (default \(Defaults.headTimeoutSeconds))."
    )
    var headTimeout: Int?

    @Option(
        name: .customLong("connect-timeout"),
        help: "Seconds a connection to an upstream server may take to open (default \(Defaults.connectTimeoutSeconds))."
    )
    var connectTimeout: Int?

    @Option(
        name: .customLong("handshake-timeout"),
        help:
            "Seconds the TLS handshake that judges a CONNECT may take in all, from its first byte (default \(Defaults.handshakeTimeoutSeconds))."
    )
    var handshakeTimeout: Int?

    @Option(
        name: .customLong("idle-timeout"),
        help:
            "Seconds a tunnel, exchange or keep-alive client may go with no byte moving either way (default \(Defaults.idleTimeoutSeconds))."
    )
    var idleTimeout: Int?

    @Option(
        help:
            "tunnel (judge a probe's handshake, relay the device's bytes unread) or intercept (terminate the device's TLS with a certificate from --ca-dir, judge the proxy's own upstream handshake, log every request) (default \(Defaults.inspect.rawValue))."
    )
    var inspect: InspectMode?

    @Option(
        name: .customLong("block-style"),
        help:
            "Intercept mode, enforce: abort (fail the device's handshake, as the app's connection would fail) or page (a 403 page naming the violations) (default \(Defaults.blockStyle.rawValue))."
    )
    var blockStyle: BlockStyle?

    @Option(
        help: ArgumentHelp(
            "A host never intercepted, api.example.com or *.example.com (repeatable).",
            discussion:
                "Its tunnel is judged by a probe, as in tunnel mode. Hosts the policy pins (NSPinnedDomains) are never intercepted either."
        ))
    var passthrough: [String] = []

    @Option(
        name: .customLong("ct-log-list"),
        help:
            "Apple's CT log list (JSON): verify SCT signatures, log states and operators instead of counting SCTs."
    )
    var ctLogList: String?

    @Option(
        name: .customLong("aia-fetch"),
        help:
            "Fetch an intermediate a server leaves out from its CA Issuers URL (http, under the destination rules), as iOS does: on or off (default on)."
    )
    var aiaFetch: OnOff?

    @Option(
        name: .customLong("log-headers"),
        help: "Intercept mode: log request and response headers on each request line: on or off (default off).")
    var logHeaders: OnOff?

    @Option(
        name: .customLong("log-secrets"),
        help:
            "With --log-headers: log Authorization, Cookie and Set-Cookie values instead of [redacted]: on or off (default off)."
    )
    var logSecrets: OnOff?

    @Option(
        name: .customLong("ca-dir"),
        help:
            "The directory of ca.pem and ca.key that intercept mode mints certificates with (atsproxyctl ca init makes them) (default \(Defaults.caDir))."
    )
    var caDir: String?

    @Option(
        name: .customLong("web-listen"),
        help: ArgumentHelp(
            "Where the live view and /metrics are served: ADDR:PORT, or off (default \(Defaults.webListen)).",
            discussion:
                "Beyond loopback, --web-token is required. When the default address is taken, the proxy starts without it and says so."
        ))
    var webListen: String?

    @Option(
        name: .customLong("web-token"),
        help:
            "A secret web clients beyond loopback must present: open http://HOST:PORT/?token=TOKEN once (a cookie keeps it), or send Authorization: Bearer TOKEN."
    )
    var webToken: String?

    @Option(
        name: .customLong("pac-hosts"),
        help:
            "A host the PAC file (/proxy.pac) sends to the proxy, api.example.com or *.example.com (repeatable; default every host but Apple's own services)."
    )
    var pacHosts: [String] = []

    package init() {}

    package typealias OnOff = ATSPolicyArguments.OnOff

    /// Checks the flags alone, so a bad one is refused before anything is read; the config file is
    /// checked by ``resolveConfiguration()``.
    package func validate() throws {
        _ = try commandLineSettings()
    }

    package func run() throws {
        let configuration = try resolveConfiguration()
        if checkConfig {
            print(try ConfigurationCheck(configuration).summary())
            return
        }
        let daemon = Daemon(
            configuration: configuration,
            resolveConfiguration: { () throws(ConfigurationError) in
                try self.resolveConfiguration()
            })
        try daemon.run()
    }
}

/// The daemon's entry point for the executable (ArgumentParser's `main()` with its exit codes).
package enum DaemonMain {
    package static func main() { DaemonCommand.main() }
}
