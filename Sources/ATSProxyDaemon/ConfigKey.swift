import ATSPolicy

/// A setting of the daemon: a key in the config file and the flag of the same name. What each one
/// is (its value, default, reload behaviour and help) is its ``setting``.
package enum ConfigKey: String, CaseIterable, Sendable {
    case listen
    case transparentListen = "transparent-listen"
    case upstreamMark = "upstream-mark"
    case wireguardListen = "wireguard-listen"
    case wireguardDir = "wireguard-dir"
    case wireguardInterface = "wireguard-interface"
    case policy
    case mode
    case caFile = "ca-file"
    case appAnchor = "app-anchor"
    case systemAnchor = "system-anchor"
    case systemRoots = "system-roots"
    case aiaFetch = "aia-fetch"
    case tunnelStart = "tunnel-start"
    case ctLogList = "ct-log-list"
    case hostsFile = "hosts-file"
    case logFile = "log-file"
    case osProfile = "os-profile"
    case cipherProfile = "cipher-profile"
    case clientClass = "client-class"
    case allowClient = "allow-client"
    case allowDestination = "allow-destination"
    case verdictTTL = "verdict-ttl"
    case verdictCacheSize = "verdict-cache-size"
    case threads
    case controlSocket = "control-socket"
    case shutdownTimeout = "shutdown-timeout"
    case headTimeout = "head-timeout"
    case connectTimeout = "connect-timeout"
    case handshakeTimeout = "handshake-timeout"
    case idleTimeout = "idle-timeout"
    case inspect
    case blockStyle = "block-style"
    case passthrough
    case logHeaders = "log-headers"
    case logSecrets = "log-secrets"
    case caDir = "ca-dir"
    case webListen = "web-listen"
    case webToken = "web-token"
    case webTokenFile = "web-token-file"
    case pacHosts = "pac-hosts"

    /// The key as written in the file, and as the flag without its `--`.
    package var name: String { rawValue }

    /// The flag as written on the command line.
    package var flag: String { "--" + rawValue }

    /// Whether each line of this key adds a value (as each flag does) instead of being an error.
    package var isRepeatable: Bool { setting.isRepeatable }

    /// Whether a changed value takes effect when the daemon reloads (``DaemonSetting/Reload``).
    package var takesEffectOnReload: Bool { setting.reload == .applies }

    /// Whether the value is a path, which the file resolves against its own directory when relative.
    var isPath: Bool { if case .path = setting.kind { true } else { false } }

    /// The key meant by a misspelt one, if one is close enough to suggest: the same key with
    /// underscores, spaces, capitals or a leading `--`, or one at most two edits away.
    static func suggestion(for text: String) -> ConfigKey? {
        var normalized = String(text.lowercased().map { $0 == "_" || $0 == " " ? "-" : $0 })
        while normalized.hasPrefix("-") { normalized.removeFirst() }
        if let exact = ConfigKey(rawValue: normalized) { return exact }
        let scored = allCases.map { (key: $0, distance: KeySuggestions.editDistance(normalized, $0.rawValue)) }
        guard let best = scored.min(by: { $0.distance < $1.distance }), best.distance <= 2 else { return nil }
        return best.key
    }
}
