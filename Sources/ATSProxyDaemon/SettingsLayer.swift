import ATSPolicy
import ATSPolicyArguments
import EventLoop
import ProxyCore

/// The settings one source gives, checked and typed: the config file, or the flags. A setting the
/// source does not give is nil (or empty, for repeatable ones), so a layer can override another.
struct SettingsLayer {
    var listen: [SocketAddress] = []
    var transparentListen: [SocketAddress] = []
    var upstreamMark: Int?
    var wireguardListen: SocketAddress?
    var wireguardDir: String?
    var wireguardInterface: String?
    var policy: String?
    var mode: EnforcementMode?
    var caFiles: [String] = []
    var appAnchorFiles: [String] = []
    var systemAnchorFiles: [String] = []
    var systemRoots: Bool?
    var hostsFile: String?
    var ctLogList: String?
    var logFile: String?
    var osProfile: OSProfile?
    var cipherProfile: CipherProfile?
    var clientClasses: [ClientClass] = []
    var allowClients: [AddressRange] = []
    var allowDestinations: [AddressRange] = []
    var verdictTTL: Int?
    var verdictCacheSize: Int?
    var threads: Int?
    var controlSocket: String?
    var shutdownTimeout: Int?
    var headTimeout: Int?
    var connectTimeout: Int?
    var handshakeTimeout: Int?
    var idleTimeout: Int?
    var inspect: InspectMode?
    var blockStyle: BlockStyle?
    var passthrough: [HostPattern] = []
    var logHeaders: Bool?
    var aiaFetch: Bool?
    var tunnelStart: TunnelStart?
    var logSecrets: Bool?
    var caDir: String?
    var webListen: WebListenSetting?
    var webToken: String?
    var webTokenFile: String?
    var pacHosts: [HostPattern] = []
    /// Where each given setting came from (its first line, for a repeated key), for errors that
    /// involve two settings.
    var origins: [ConfigKey: SettingOrigin] = [:]

    init() {}

    /// Whether this layer sets `key`.
    func gives(_ key: ConfigKey) -> Bool {
        switch key {
        case .listen: !listen.isEmpty
        case .transparentListen: !transparentListen.isEmpty
        case .upstreamMark: upstreamMark != nil
        case .wireguardListen: wireguardListen != nil
        case .wireguardDir: wireguardDir != nil
        case .wireguardInterface: wireguardInterface != nil
        case .policy: policy != nil
        case .mode: mode != nil
        case .caFile: !caFiles.isEmpty
        case .appAnchor: !appAnchorFiles.isEmpty
        case .systemAnchor: !systemAnchorFiles.isEmpty
        case .systemRoots: systemRoots != nil
        case .hostsFile: hostsFile != nil
        case .ctLogList: ctLogList != nil
        case .logFile: logFile != nil
        case .osProfile: osProfile != nil
        case .cipherProfile: cipherProfile != nil
        case .clientClass: !clientClasses.isEmpty
        case .allowClient: !allowClients.isEmpty
        case .allowDestination: !allowDestinations.isEmpty
        case .verdictTTL: verdictTTL != nil
        case .verdictCacheSize: verdictCacheSize != nil
        case .threads: threads != nil
        case .controlSocket: controlSocket != nil
        case .shutdownTimeout: shutdownTimeout != nil
        case .headTimeout: headTimeout != nil
        case .connectTimeout: connectTimeout != nil
        case .handshakeTimeout: handshakeTimeout != nil
        case .idleTimeout: idleTimeout != nil
        case .inspect: inspect != nil
        case .blockStyle: blockStyle != nil
        case .passthrough: !passthrough.isEmpty
        case .logHeaders: logHeaders != nil
        case .aiaFetch: aiaFetch != nil
        case .tunnelStart: tunnelStart != nil
        case .logSecrets: logSecrets != nil
        case .caDir: caDir != nil
        case .webListen: webListen != nil
        case .webToken: webToken != nil
        case .webTokenFile: webTokenFile != nil
        case .pacHosts: !pacHosts.isEmpty
        }
    }

    /// This layer's settings, and `lower`'s where this one is silent. A repeatable setting is taken
    /// whole from one layer: flags replace the file's list instead of adding to it.
    func overriding(_ lower: SettingsLayer) -> SettingsLayer {
        var merged = SettingsLayer()
        merged.listen = listen.isEmpty ? lower.listen : listen
        merged.transparentListen = transparentListen.isEmpty ? lower.transparentListen : transparentListen
        merged.upstreamMark = upstreamMark ?? lower.upstreamMark
        merged.wireguardListen = wireguardListen ?? lower.wireguardListen
        merged.wireguardDir = wireguardDir ?? lower.wireguardDir
        merged.wireguardInterface = wireguardInterface ?? lower.wireguardInterface
        merged.policy = policy ?? lower.policy
        merged.mode = mode ?? lower.mode
        merged.caFiles = caFiles.isEmpty ? lower.caFiles : caFiles
        merged.appAnchorFiles = appAnchorFiles.isEmpty ? lower.appAnchorFiles : appAnchorFiles
        merged.systemAnchorFiles = systemAnchorFiles.isEmpty ? lower.systemAnchorFiles : systemAnchorFiles
        merged.systemRoots = systemRoots ?? lower.systemRoots
        merged.hostsFile = hostsFile ?? lower.hostsFile
        merged.ctLogList = ctLogList ?? lower.ctLogList
        merged.logFile = logFile ?? lower.logFile
        merged.osProfile = osProfile ?? lower.osProfile
        merged.cipherProfile = cipherProfile ?? lower.cipherProfile
        merged.clientClasses = clientClasses.isEmpty ? lower.clientClasses : clientClasses
        merged.allowClients = allowClients.isEmpty ? lower.allowClients : allowClients
        merged.allowDestinations = allowDestinations.isEmpty ? lower.allowDestinations : allowDestinations
        merged.verdictTTL = verdictTTL ?? lower.verdictTTL
        merged.verdictCacheSize = verdictCacheSize ?? lower.verdictCacheSize
        merged.threads = threads ?? lower.threads
        merged.controlSocket = controlSocket ?? lower.controlSocket
        merged.shutdownTimeout = shutdownTimeout ?? lower.shutdownTimeout
        merged.headTimeout = headTimeout ?? lower.headTimeout
        merged.connectTimeout = connectTimeout ?? lower.connectTimeout
        merged.handshakeTimeout = handshakeTimeout ?? lower.handshakeTimeout
        merged.idleTimeout = idleTimeout ?? lower.idleTimeout
        merged.inspect = inspect ?? lower.inspect
        merged.blockStyle = blockStyle ?? lower.blockStyle
        merged.passthrough = passthrough.isEmpty ? lower.passthrough : passthrough
        merged.logHeaders = logHeaders ?? lower.logHeaders
        merged.aiaFetch = aiaFetch ?? lower.aiaFetch
        merged.tunnelStart = tunnelStart ?? lower.tunnelStart
        merged.logSecrets = logSecrets ?? lower.logSecrets
        merged.caDir = caDir ?? lower.caDir
        merged.webListen = webListen ?? lower.webListen
        merged.webToken = webToken ?? lower.webToken
        merged.webTokenFile = webTokenFile ?? lower.webTokenFile
        merged.pacHosts = pacHosts.isEmpty ? lower.pacHosts : pacHosts
        // Only keys a layer gives have an origin in it, so the upper one wins where both do.
        merged.origins = lower.origins.merging(origins) { _, upper in upper }
        return merged
    }
}

extension SettingsLayer {
    /// The file's settings, each value checked; relative paths are taken from the file's directory.
    init(file: ConfigFile) throws(ConfigurationError) {
        self.init()
        for entry in file.entries {
            let origin = SettingOrigin.file(path: file.path, line: entry.line)
            if origins[entry.key] == nil { origins[entry.key] = origin }
            let text = entry.key.isPath ? file.resolvingPath(entry.value) : entry.value
            do {
                try set(entry.key, text)
            } catch {
                throw ConfigurationError(.badValue, origin: origin, key: entry.key.name, reason: error.reason)
            }
        }
    }

    /// Sets `key` from its text (adding to the list for a repeatable key).
    private mutating func set(_ key: ConfigKey, _ text: String) throws(InvalidValue) {
        switch key {
        case .listen: listen.append(try SettingValue.listenAddress(text))
        case .transparentListen: transparentListen.append(try SettingValue.listenAddress(text))
        case .upstreamMark: upstreamMark = try SettingValue.integer(text, for: key)
        case .wireguardListen: wireguardListen = try SettingValue.listenAddress(text)
        case .wireguardDir: wireguardDir = text
        case .wireguardInterface: wireguardInterface = try SettingValue.interfaceName(text)
        case .policy: policy = text
        case .mode: mode = try SettingValue.choice(text, EnforcementMode.self)
        case .caFile: caFiles.append(text)
        case .appAnchor: appAnchorFiles.append(text)
        case .systemAnchor: systemAnchorFiles.append(text)
        case .systemRoots: systemRoots = try SettingValue.choice(text, DaemonCommand.OnOff.self) == .on
        case .hostsFile: hostsFile = text
        case .ctLogList: ctLogList = text
        case .logFile: logFile = text
        case .osProfile: osProfile = try SettingValue.choice(text, OSProfile.self)
        case .cipherProfile: cipherProfile = try SettingValue.choice(text, CipherProfile.self)
        case .clientClass: clientClasses.append(try SettingValue.choice(text, ClientClass.self))
        case .allowClient: allowClients.append(try SettingValue.clientRange(text))
        case .allowDestination: allowDestinations.append(try SettingValue.destinationRange(text))
        case .verdictTTL: verdictTTL = try SettingValue.integer(text, for: key)
        case .verdictCacheSize: verdictCacheSize = try SettingValue.integer(text, for: key)
        case .threads: threads = try SettingValue.integer(text, for: key)
        case .controlSocket: controlSocket = text
        case .shutdownTimeout: shutdownTimeout = try SettingValue.integer(text, for: key)
        case .headTimeout: headTimeout = try SettingValue.integer(text, for: key)
        case .connectTimeout: connectTimeout = try SettingValue.integer(text, for: key)
        case .handshakeTimeout: handshakeTimeout = try SettingValue.integer(text, for: key)
        case .idleTimeout: idleTimeout = try SettingValue.integer(text, for: key)
        case .inspect: inspect = try SettingValue.choice(text, InspectMode.self)
        case .blockStyle: blockStyle = try SettingValue.choice(text, BlockStyle.self)
        case .passthrough: passthrough.append(try SettingValue.hostPattern(text))
        case .logHeaders: logHeaders = try SettingValue.choice(text, DaemonCommand.OnOff.self) == .on
        case .aiaFetch: aiaFetch = try SettingValue.choice(text, DaemonCommand.OnOff.self) == .on
        case .tunnelStart: tunnelStart = try SettingValue.choice(text, TunnelStart.self)
        case .logSecrets: logSecrets = try SettingValue.choice(text, DaemonCommand.OnOff.self) == .on
        case .caDir: caDir = text
        case .webListen: webListen = try SettingValue.webListen(text)
        case .webToken: webToken = try SettingValue.webToken(text)
        case .webTokenFile: webTokenFile = text
        case .pacHosts: pacHosts.append(try SettingValue.hostPattern(text))
        }
    }
}
