import ATSPolicy
import EventLoop
import Glibc
import LogRecord
import ProxyCore
import TLSInspection
import WireGuard

/// Every setting of the daemon once the config file, the flags and the defaults are merged: what
/// the daemon runs with. Built by ``DaemonCommand/resolveConfiguration()``; a value, so a reload can
/// build a new one and compare.
package struct DaemonConfiguration: Sendable {
    /// The `--config` file the settings were read from; nil when there is none.
    package var configFile: String?
    /// The listeners in order, each with the client class its clients stand for.
    package var listeners: [ListenEndpoint]
    /// The policy file; nil for the ATS defaults.
    package var policyFile: String?
    package var mode: EnforcementMode
    /// Extra trust anchors (PEM), treated as user-installed roots.
    package var caFiles: [String]
    /// Anchors the app sets itself with `SecTrustSetAnchorCertificates` (`--app-anchor`).
    package var appAnchorFiles: [String]
    /// Certificates trusted as if in the OS store (`--system-anchor`): a private PKI rehearsed as public.
    package var systemAnchorFiles: [String]
    /// Whether the OS store stands in for Apple's system roots.
    package var systemRoots: Bool
    /// `--aia-fetch`: complete a path the server left an intermediate out of, as iOS does.
    package var fetchesIntermediates: Bool
    /// `--tunnel-start`: when a tunnel-mode CONNECT to a host with no verdict yet gets its 200.
    package var tunnelStart: TunnelStart
    package var hostsFile: String?
    /// `--ct-log-list`: Apple's CT log list, to verify SCTs against; nil: they are counted.
    package var ctLogList: String?
    /// Where the JSON log is appended; nil for standard output.
    package var logFile: String?
    package var osProfile: OSProfile
    package var cipherProfile: CipherProfile
    /// `--transparent-listen`: listeners for connections a firewall redirected (after ``listeners``,
    /// with the shared client class).
    package var transparentListeners: [ListenEndpoint]
    /// `--upstream-mark`: the mark of the proxy's upstream connections (``ProxySettings/upstreamMark``).
    package var upstreamMark: UInt32?
    /// The proxy's upstream connects under way, for every loop (``UpstreamMarking/opening``): kept
    /// from the running configuration across reloads, as the mark is.
    package var openingConnections = OpeningConnections()
    /// `--wireguard-listen`: the tunnel's UDP address; nil: no WireGuard.
    package var wireguardListen: SocketAddress?
    /// `--wireguard-dir`.
    package var wireguardDir: String
    /// `--wireguard-interface`.
    package var wireguardInterface: String
    /// The WireGuard devices by tunnel address, for every loop (``ProxySettings/deviceNames``): kept
    /// from the running configuration across reloads, which refill it.
    package var deviceNames = DeviceNames()
    /// The names the devices' DNS queries resolved (``ProxySettings/resolvedNames``), kept across reloads.
    package var resolvedNames = ResolvedNames()
    /// The client class of every listener unless each names its own.
    package var clientClass: ClientClass
    package var allowedClients: [AddressRange]
    /// `--allow-destination`: local ranges every client may reach (``ProxySettings/allowedDestinations``).
    package var allowedDestinations: [AddressRange]
    package var verdictTTL: Duration
    /// The most verdicts cached, probes in flight included (``VerdictCache/capacity``).
    package var verdictCacheSize: Int
    package var threads: Int
    package var controlSocket: String
    /// How long a graceful stop lets tunnels drain.
    package var shutdownTimeout: Duration
    package var headTimeout: Duration
    package var connectTimeout: Duration
    /// How long a probe's TLS handshake may take in all (``ProxySettings/handshakeTimeout``).
    package var handshakeTimeout: Duration
    package var idleTimeout: Duration
    /// `--inspect` and the rest of intercept mode's settings (``ProxySettings/intercept``).
    package var intercept: InterceptSettings
    /// Where the intercept CA's `ca.pem` and `ca.key` are.
    package var caDir: String
    /// Where the live view and `/metrics` are served (``WebListenSetting``).
    package var webListen: WebListenSetting
    /// Whether `web-listen` was given (a default that cannot bind is skipped with a warning; a
    /// given one that cannot bind stops the start).
    package var webListenGiven: Bool
    /// What a web client beyond loopback must present (`?token=`, a cookie, or a bearer header);
    /// required when the web listener is not on loopback. From `web-token`, or read from
    /// ``webTokenFile`` by ``readWebTokenFile()`` (at start and on every reload).
    package var webToken: String?
    /// `web-token-file`: the file the token is read from (kept out of `ps` and the config file).
    package var webTokenFile: String?
    /// `--pac-hosts`: the hosts the PAC file sends to the proxy (empty: every host but Apple's own).
    package var pacHosts: [HostPattern]
    /// Where each setting that was given came from (a repeated key: its first line); a key missing
    /// here took its default.
    package var origins: [ConfigKey: SettingOrigin]

    /// The defaults, in one place: what the daemon uses for a setting neither the file nor a flag gives.
    package enum Defaults {
        package static let listen = "127.0.0.1:8080"
        static let listenAddress = try! SocketAddress(parsing: listen)
        package static let mode = EnforcementMode.enforce
        package static let systemRoots = true
        package static let fetchesIntermediates = true
        package static let tunnelStart = TunnelStart.atConnect
        package static let osProfile = OSProfile.ios17
        package static let cipherProfile = CipherProfile.current
        package static let clientClass = ClientClass.urlsession
        package static let allowedClients = ProxySettings.loopback
        package static let verdictTTLSeconds = 300
        package static let verdictCacheSize = VerdictCache<VerdictKey, ProbeResult>.defaultCapacity
        package static let controlSocket = "/run/atsproxy/control.sock"
        package static let shutdownTimeoutSeconds = 30
        package static let headTimeoutSeconds = 10
        package static let connectTimeoutSeconds = 10
        package static let handshakeTimeoutSeconds = 10
        package static let idleTimeoutSeconds = 300
        package static let inspect = InspectMode.tunnel
        package static let blockStyle = BlockStyle.abort
        package static let logHeaders = false
        package static let logSecrets = false
        package static let caDir = CertificateAuthority.defaultDirectory
        package static let webListen = "127.0.0.1:8081"
        /// "AT": a mark no common tool uses (firewalld, Docker, Kubernetes and WireGuard's wg-quick
        /// use high bits or 0x1-0xff).
        package static let upstreamMark: UInt32 = 0x4154
        package static let wireguardDir = WireGuardDirectory.defaultPath
        package static let wireguardInterface = "atsproxy-wg"
        static let webListenAddress = try! SocketAddress(parsing: webListen)
        /// One event-loop thread per online core.
        package static var threads: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
    }

    /// The WireGuard tunnel's settings together; nil without `--wireguard-listen`.
    package var wireguard: WireGuardSettings? {
        wireguardListen.map {
            WireGuardSettings(
                listen: $0, directory: WireGuardDirectory(path: wireguardDir), interface: wireguardInterface)
        }
    }

    /// The merged settings with the defaults filled in; fails when client classes and listeners do
    /// not pair up.
    init(_ settings: SettingsLayer, configFile: String?) throws(ConfigurationError) {
        let addresses = settings.listen.isEmpty ? [Defaults.listenAddress] : settings.listen
        let classes = settings.clientClasses
        guard classes.count <= 1 || classes.count == addresses.count else {
            throw Self.mismatch(classes: classes.count, listeners: addresses.count, settings.origins)
        }
        self.configFile = configFile
        origins = settings.origins
        let sharedClass = classes.count == 1 ? classes[0] : Defaults.clientClass
        clientClass = sharedClass
        listeners = addresses.enumerated().map { index, address in
            ListenEndpoint(address: address, clientClass: classes.count > 1 ? classes[index] : sharedClass)
        }
        transparentListeners = settings.transparentListen.map { ListenEndpoint(address: $0, capture: .transparent) }
        upstreamMark =
            settings.upstreamMark.map(UInt32.init) ?? (settings.transparentListen.isEmpty ? nil : Defaults.upstreamMark)
        wireguardListen = settings.wireguardListen
        wireguardDir = settings.wireguardDir ?? Defaults.wireguardDir
        wireguardInterface = settings.wireguardInterface ?? Defaults.wireguardInterface
        policyFile = settings.policy
        mode = settings.mode ?? Defaults.mode
        caFiles = settings.caFiles
        appAnchorFiles = settings.appAnchorFiles
        systemAnchorFiles = settings.systemAnchorFiles
        systemRoots = settings.systemRoots ?? Defaults.systemRoots
        fetchesIntermediates = settings.aiaFetch ?? Defaults.fetchesIntermediates
        tunnelStart = settings.tunnelStart ?? Defaults.tunnelStart
        hostsFile = settings.hostsFile
        ctLogList = settings.ctLogList
        logFile = settings.logFile
        osProfile = settings.osProfile ?? Defaults.osProfile
        cipherProfile = settings.cipherProfile ?? Defaults.cipherProfile
        allowedClients = settings.allowClients.isEmpty ? Defaults.allowedClients : settings.allowClients
        allowedDestinations = settings.allowDestinations
        verdictTTL = .seconds(settings.verdictTTL ?? Defaults.verdictTTLSeconds)
        verdictCacheSize = settings.verdictCacheSize ?? Defaults.verdictCacheSize
        threads = settings.threads ?? Defaults.threads
        controlSocket = settings.controlSocket ?? Defaults.controlSocket
        shutdownTimeout = .seconds(settings.shutdownTimeout ?? Defaults.shutdownTimeoutSeconds)
        headTimeout = .seconds(settings.headTimeout ?? Defaults.headTimeoutSeconds)
        connectTimeout = .seconds(settings.connectTimeout ?? Defaults.connectTimeoutSeconds)
        handshakeTimeout = .seconds(settings.handshakeTimeout ?? Defaults.handshakeTimeoutSeconds)
        idleTimeout = .seconds(settings.idleTimeout ?? Defaults.idleTimeoutSeconds)
        var intercept = InterceptSettings()
        intercept.mode = settings.inspect ?? Defaults.inspect
        intercept.blockStyle = settings.blockStyle ?? Defaults.blockStyle
        intercept.passthrough = settings.passthrough
        intercept.logHeaders = settings.logHeaders ?? Defaults.logHeaders
        intercept.logSecrets = settings.logSecrets ?? Defaults.logSecrets
        self.intercept = intercept
        caDir = settings.caDir ?? Defaults.caDir
        webListen = settings.webListen ?? .address(Defaults.webListenAddress)
        webListenGiven = settings.webListen != nil
        webTokenFile = settings.webTokenFile
        webToken = settings.webToken
        pacHosts = settings.pacHosts
        if webToken != nil, webTokenFile != nil {
            throw ConfigurationError(
                .conflictingValues, origin: settings.origins[.webTokenFile] ?? .commandLine,
                key: ConfigKey.webTokenFile.name,
                reason: "web-token is given too: give the token once, by web-token-file (kept out of ps) or web-token")
        }
        if case .address(let address) = webListen, !address.isLoopback, webToken == nil, webTokenFile == nil {
            throw ConfigurationError(
                .conflictingValues, origin: settings.origins[.webListen] ?? .commandLine, key: ConfigKey.webListen.name,
                reason:
                    "\(address) is reachable beyond this machine: give web-token too (for example --web-token $(openssl rand -hex 16)), "
                    + "which clients beyond loopback must present")
        }
    }

    /// Client classes given neither once for all nor once per listener, named where they were given
    /// (and where the listeners were, when that is elsewhere).
    private static func mismatch(classes: Int, listeners: Int, _ origins: [ConfigKey: SettingOrigin])
        -> ConfigurationError
    {
        let origin = origins[.clientClass] ?? .commandLine
        let fromCommandLine = origin == .commandLine
        let listenPlace: String
        switch origins[.listen] {
        case nil: listenPlace = " (the default)"
        case .commandLine?: listenPlace = fromCommandLine ? "" : " (from the command line)"
        case .file(let path, _)?: listenPlace = fromCommandLine ? " (from \(path))" : ""
        }
        let listen = fromCommandLine ? "--listen" : "listen"
        return ConfigurationError(
            .conflictingValues, origin: origin, key: ConfigKey.clientClass.name,
            reason:
                "given \(classes) times for \(listeners) \(listen) address\(listeners == 1 ? "" : "es")\(listenPlace): "
                + "give it once for all, or once per \(listen)\(fromCommandLine ? "" : " line") in the same order")
    }
}
