import ATSPolicy
import ATSPolicyArguments
import ArgumentParser
import Glibc
import ProxyCore

extension EnforcementMode: ExpressibleByArgument {}
extension InspectMode: ExpressibleByArgument {}
extension BlockStyle: ExpressibleByArgument {}
extension TunnelStart: ExpressibleByArgument {}

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

    @Option(help: "Read settings from this file of key = value lines; flags override it (default: no file).")
    var config: String?

    @Flag(
        name: .customLong("check-config"),
        help: "Check the config file, the flags and the files they name, print a summary and exit; binds nothing.")
    var checkConfig = false

    // The settings: each flag's name and help are its ConfigKey's DaemonSetting (the table), so
    // only the Swift type is said here. SettingsCatalogueTests checks that every key has its flag.
    @Option(name: .setting(.listen), help: .setting(.listen)) var listen: [String] = []
    @Option(name: .setting(.transparentListen), help: .setting(.transparentListen)) var transparentListen: [String] = []
    @Option(name: .setting(.upstreamMark), help: .setting(.upstreamMark)) var upstreamMark: Int?
    @Option(name: .setting(.wireguardListen), help: .setting(.wireguardListen)) var wireguardListen: String?
    @Option(name: .setting(.wireguardDir), help: .setting(.wireguardDir)) var wireguardDir: String?
    @Option(name: .setting(.wireguardInterface), help: .setting(.wireguardInterface)) var wireguardInterface: String?
    @Option(name: .setting(.policy), help: .setting(.policy)) var policy: String?
    @Option(name: .setting(.mode), help: .setting(.mode)) var mode: EnforcementMode?
    @Option(name: .setting(.caFile), help: .setting(.caFile)) var caFiles: [String] = []
    @Option(name: .setting(.appAnchor), help: .setting(.appAnchor)) var appAnchorFiles: [String] = []
    @Option(name: .setting(.systemAnchor), help: .setting(.systemAnchor)) var systemAnchorFiles: [String] = []
    @Option(name: .setting(.systemRoots), help: .setting(.systemRoots)) var systemRoots: OnOff?
    @Option(name: .setting(.logFile), help: .setting(.logFile)) var logFile: String?
    @Option(name: .setting(.osProfile), help: .setting(.osProfile)) var osProfile: OSProfile?
    @Option(name: .setting(.cipherProfile), help: .setting(.cipherProfile)) var cipherProfile: CipherProfile?
    @Option(name: .setting(.clientClass), help: .setting(.clientClass)) var clientClasses: [ClientClass] = []
    @Option(name: .setting(.hostsFile), help: .setting(.hostsFile)) var hostsFile: String?
    @Option(name: .setting(.allowClient), help: .setting(.allowClient)) var allowClients: [String] = []
    @Option(name: .setting(.allowDestination), help: .setting(.allowDestination)) var allowDestinations: [String] = []
    @Option(name: .setting(.verdictTTL), help: .setting(.verdictTTL)) var verdictTTL: Int?
    @Option(name: .setting(.verdictCacheSize), help: .setting(.verdictCacheSize)) var verdictCacheSize: Int?
    @Option(name: .setting(.threads), help: .setting(.threads)) var threads: Int?
    @Option(name: .setting(.controlSocket), help: .setting(.controlSocket)) var controlSocket: String?
    @Option(name: .setting(.shutdownTimeout), help: .setting(.shutdownTimeout)) var shutdownTimeout: Int?
    @Option(name: .setting(.headTimeout), help: .setting(.headTimeout)) var headTimeout: Int?
    @Option(name: .setting(.connectTimeout), help: .setting(.connectTimeout)) var connectTimeout: Int?
    @Option(name: .setting(.handshakeTimeout), help: .setting(.handshakeTimeout)) var handshakeTimeout: Int?
    @Option(name: .setting(.idleTimeout), help: .setting(.idleTimeout)) var idleTimeout: Int?
    @Option(name: .setting(.inspect), help: .setting(.inspect)) var inspect: InspectMode?
    @Option(name: .setting(.blockStyle), help: .setting(.blockStyle)) var blockStyle: BlockStyle?
    @Option(name: .setting(.passthrough), help: .setting(.passthrough)) var passthrough: [String] = []
    @Option(name: .setting(.ctLogList), help: .setting(.ctLogList)) var ctLogList: String?
    @Option(name: .setting(.aiaFetch), help: .setting(.aiaFetch)) var aiaFetch: OnOff?
    @Option(name: .setting(.tunnelStart), help: .setting(.tunnelStart)) var tunnelStart: TunnelStart?
    @Option(name: .setting(.logHeaders), help: .setting(.logHeaders)) var logHeaders: OnOff?
    @Option(name: .setting(.logSecrets), help: .setting(.logSecrets)) var logSecrets: OnOff?
    @Option(name: .setting(.caDir), help: .setting(.caDir)) var caDir: String?
    @Option(name: .setting(.webListen), help: .setting(.webListen)) var webListen: String?
    @Option(name: .setting(.webToken), help: .setting(.webToken)) var webToken: String?
    @Option(name: .setting(.webTokenFile), help: .setting(.webTokenFile)) var webTokenFile: String?
    @Option(name: .setting(.pacHosts), help: .setting(.pacHosts)) var pacHosts: [String] = []

    package init() {}

    package typealias OnOff = ATSPolicyArguments.OnOff

    /// Checks the flags alone, so a bad one is refused before anything is read; the config file is
    /// checked by ``resolveConfiguration()``.
    package func validate() throws {
        _ = try commandLineSettings()
    }

    package func run() throws {
        var configuration = try resolveConfiguration()
        try configuration.readWebTokenFile()
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
        // Stopped, and said so: every line written, the tunnel, its rules and the socket file gone.
        // What is left is the heap, which the kernel reclaims at once; freeing it object by object
        // (and OpenSSL's and the runtime's exit handlers) only delays the exit systemd waits for,
        // which full test runs on a loaded machine saw pass 10 s after "atsproxy stopped".
        // Under a sanitizer the exit runs whole: its checks (leaks, the races' exit status) run then.
        guard !Self.sanitized else { return }
        fflush(nil)
        _exit(0)
    }

    /// Whether AddressSanitizer or ThreadSanitizer is in the process (`make test-sanitize`'s builds).
    private static var sanitized: Bool {
        // dlsym's RTLD_DEFAULT is the null handle on glibc: every object loaded, the binary first.
        let names: [String] = ["__asan_init", "__tsan_init"]
        return names.contains { dlsym(nil, $0) != nil }
    }
}

/// The daemon's entry point for the executable (ArgumentParser's `main()` with its exit codes).
package enum DaemonMain {
    package static func main() { DaemonCommand.main() }
}
