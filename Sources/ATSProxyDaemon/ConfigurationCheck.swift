import ATSPolicy
import ProxyCore
import TLSInspection

/// `atsproxy --check-config`: reads every file the settings name, as the daemon does at start, but
/// binds no socket and starts no thread; the summary says what the daemon would run with.
struct ConfigurationCheck {
    let configuration: DaemonConfiguration

    init(_ configuration: DaemonConfiguration) { self.configuration = configuration }

    /// Loads the policy, the CA files and the hosts file, and describes the whole configuration.
    /// Errors name the setting's line (or flag), then the file at fault with its own line or key path.
    func summary() throws(ConfigurationError) -> String {
        let policy: String
        do { policy = try describePolicy() } catch { throw configuration.unusableFile(.policy, error) }
        // The OS store is left out: it is the same for every configuration, and not worth reading here.
        let anchors = try configuration.trustAnchors(systemRoots: false)
        let hosts: String
        do {
            hosts = try configuration.hostsTable()?.path ?? "none"
        } catch {
            throw configuration.unusableFile(.hostsFile, error)
        }
        let c = configuration  // short, for the summary's long lines
        let destinations =
            c.allowedDestinations.isEmpty
            ? "loopback clients only"
            : "loopback clients, and every client to \(c.allowedDestinations.map(\.description).joined(separator: ", "))"
        let listeners = c.listeners.map { "\($0.address) (\(($0.clientClass ?? c.clientClass).rawValue))" }
        let trust =
            (c.systemRoots ? "system roots" : "no system roots")
            + ", \(plural(anchors.userInstalled.count, "user-installed root"))"
            + (c.caFiles.isEmpty ? "" : " from \(c.caFiles.joined(separator: ", "))")
            + (c.appAnchorFiles.isEmpty
                ? ""
                : ", \(plural(anchors.appAnchors.count, "app anchor")) from \(c.appAnchorFiles.joined(separator: ", "))")
            + (c.systemAnchorFiles.isEmpty
                ? ""
                : ", \(plural(anchors.systemAnchors.count, "system anchor")) from \(c.systemAnchorFiles.joined(separator: ", "))")
        return """
            config file: \(c.configFile ?? "none (flags and defaults only)")
            policy: \(policy)
            mode: \(c.mode.rawValue), os profile \(c.osProfile.rawValue), cipher profile \(c.cipherProfile.rawValue)
            listen: \(listeners.joined(separator: ", "))
            clients allowed: \(c.allowedClients.map(\.description).joined(separator: ", "))
            local destinations: \(destinations)
            trust: \(trust)
            hosts file: \(hosts)
            log: \(c.logFile ?? "standard output")
            control socket: \(c.controlSocket)
            threads: \(c.threads); verdict ttl \(c.verdictTTL.components.seconds) s, cache \(c.verdictCacheSize) entries; \
            timeouts: head \(seconds(c.headTimeout)), connect \(seconds(c.connectTimeout)), \
            handshake \(seconds(c.handshakeTimeout)), idle \(seconds(c.idleTimeout)), shutdown \(seconds(c.shutdownTimeout))
            configuration OK
            """
    }

    private func describePolicy() throws(PolicyLoadError) -> String {
        guard let loaded = try configuration.loadPolicyFile() else { return "the ATS defaults (no policy file)" }
        let findings = loaded.policy.findings
        let errors = findings.filter { $0.severity == .error }.count
        let warnings = findings.filter { $0.severity == .warning }.count
        let notes =
            errors + warnings == 0
            ? "no findings"
            : "\(plural(errors, "error")), \(plural(warnings, "warning")) (atsproxyctl check explains them)"
        return "\(loaded.path) (\(loaded.format.rawValue) plist, sha256 \(loaded.sha256)): "
            + "\(plural(loaded.policy.exceptions.count, "exception domain")), "
            + "\(plural(loaded.policy.pins.count, "pinned domain")), \(notes)"
    }

    private func seconds(_ duration: Duration) -> String { "\(duration.components.seconds) s" }

    private func plural(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
}
