import ATSPolicyArguments

extension DaemonCommand {
    /// The settings: the config file's (re-read on every call, so a reload sees its changes),
    /// overridden by the flags, with the defaults for the rest. Throws instead of exiting, so a
    /// reload that meets a broken file can keep the settings it has.
    package func resolveConfiguration() throws(ConfigurationError) -> DaemonConfiguration {
        let flags = try commandLineSettings()
        let file = try config.map { path throws(ConfigurationError) in
            try SettingsLayer(file: ConfigFile.read(path: path))
        }
        return try DaemonConfiguration(file.map(flags.overriding) ?? flags, configFile: config)
    }

    /// The flags that were given, each checked by the same rules as the file's values.
    func commandLineSettings() throws(ConfigurationError) -> SettingsLayer {
        var layer = SettingsLayer()
        func checked(_ key: ConfigKey, _ value: Int?) throws(ConfigurationError) -> Int? {
            guard let value else { return nil }
            do { try SettingValue.check(value, for: key) } catch {
                throw ConfigurationError(
                    .badValue, origin: .commandLine, key: key.name, value: "\(value)", reason: error.reason)
            }
            return value
        }
        func parsed<Value>(_ key: ConfigKey, _ texts: [String], _ parse: (String) throws(InvalidValue) -> Value)
            throws(ConfigurationError) -> [Value]
        {
            var values: [Value] = []
            for text in texts {
                do { values.append(try parse(text)) } catch {
                    throw ConfigurationError(
                        .badValue, origin: .commandLine, key: key.name, value: text, reason: error.reason)
                }
            }
            return values
        }

        layer.listen = try parsed(.listen, listen, SettingValue.listenAddress)
        layer.transparentListen = try parsed(.transparentListen, transparentListen, SettingValue.listenAddress)
        layer.upstreamMark = try checked(.upstreamMark, upstreamMark)
        layer.wireguardListen = try parsed(
            .wireguardListen, wireguardListen.map { [$0] } ?? [], SettingValue.listenAddress
        ).first
        layer.wireguardDir = wireguardDir
        layer.wireguardInterface = try parsed(
            .wireguardInterface, wireguardInterface.map { [$0] } ?? [], SettingValue.interfaceName
        ).first
        layer.policy = policy
        layer.mode = mode
        layer.caFiles = caFiles
        layer.appAnchorFiles = appAnchorFiles
        layer.systemAnchorFiles = systemAnchorFiles
        layer.systemRoots = systemRoots.map { $0 == .on }
        layer.hostsFile = hostsFile
        layer.ctLogList = ctLogList
        layer.logFile = logFile
        layer.osProfile = osProfile
        layer.cipherProfile = cipherProfile
        layer.clientClasses = clientClasses
        layer.allowClients = try parsed(.allowClient, allowClients, SettingValue.clientRange)
        layer.allowDestinations = try parsed(.allowDestination, allowDestinations, SettingValue.destinationRange)
        layer.verdictTTL = try checked(.verdictTTL, verdictTTL)
        layer.verdictCacheSize = try checked(.verdictCacheSize, verdictCacheSize)
        layer.threads = try checked(.threads, threads)
        layer.controlSocket = controlSocket
        layer.shutdownTimeout = try checked(.shutdownTimeout, shutdownTimeout)
        layer.headTimeout = try checked(.headTimeout, headTimeout)
        layer.connectTimeout = try checked(.connectTimeout, connectTimeout)
        layer.handshakeTimeout = try checked(.handshakeTimeout, handshakeTimeout)
        layer.idleTimeout = try checked(.idleTimeout, idleTimeout)
        layer.inspect = inspect
        layer.blockStyle = blockStyle
        layer.passthrough = try parsed(.passthrough, passthrough, SettingValue.hostPattern)
        layer.logHeaders = logHeaders.map { $0 == .on }
        layer.aiaFetch = aiaFetch.map { $0 == .on }
        layer.tunnelStart = tunnelStart
        layer.logSecrets = logSecrets.map { $0 == .on }
        layer.caDir = caDir
        layer.webListen = try parsed(.webListen, webListen.map { [$0] } ?? [], SettingValue.webListen).first
        layer.webToken = try parsed(.webToken, webToken.map { [$0] } ?? [], SettingValue.webToken).first
        layer.webTokenFile = webTokenFile
        layer.pacHosts = try parsed(.pacHosts, pacHosts, SettingValue.hostPattern)

        for key in ConfigKey.allCases where layer.gives(key) { layer.origins[key] = .commandLine }
        return layer
    }
}
