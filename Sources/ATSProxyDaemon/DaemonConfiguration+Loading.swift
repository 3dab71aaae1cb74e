import ATSPolicy
import ProxyCore
import ProxyWire
import TLSInspection

/// What the settings name, read from disk: the policy, the trust anchors, the hosts table.
extension DaemonConfiguration {
    package var policySettings: PolicySettings {
        PolicySettings(osProfile: osProfile, cipherProfile: cipherProfile, clientClass: clientClass)
    }

    /// The policy file, parsed with the configured profiles; nil when the settings name none (the
    /// ATS defaults apply).
    package func loadPolicyFile() throws(PolicyLoadError) -> PolicyLoader.Loaded? {
        guard let policyFile else { return nil }
        return try PolicyLoader.load(path: policyFile, settings: policySettings)
    }

    /// The policy to judge by, and how the start-up line names it.
    package func loadPolicy() throws(PolicyLoadError) -> (policy: TransportSecurityPolicy, description: String) {
        guard let loaded = try loadPolicyFile() else {
            return (TransportSecurityPolicy(settings: policySettings), "the ATS defaults")
        }
        return (loaded.policy, "\(loaded.path) (sha256 \(loaded.sha256.prefix(12)))")
    }

    /// The anchors of every kind; an error names the setting whose file is at fault. `systemRoots`
    /// false leaves the OS store out (a configuration check reads the files only).
    package func trustAnchors(systemRoots: Bool? = nil) throws(ConfigurationError) -> TrustAnchors {
        func read(_ files: [String], _ key: ConfigKey) throws(ConfigurationError) -> [X509Certificate] {
            var certificates: [X509Certificate] = []
            for file in files {
                do {
                    certificates += try CertificateFile.read(
                        file, what: key == .caFile ? "CA file" : "\(key.name) file")
                } catch {
                    throw unusableFile(key, error)
                }
            }
            return certificates
        }
        var logs: CTLogList?
        if let ctLogList {
            do { logs = try CTLogList(path: ctLogList) } catch { throw unusableFile(.ctLogList, error) }
        }
        return TrustAnchors(
            systemRoots: systemRoots ?? self.systemRoots, systemAnchors: try read(systemAnchorFiles, .systemAnchor),
            userInstalled: try read(caFiles, .caFile), appAnchors: try read(appAnchorFiles, .appAnchor),
            ctLogList: logs)
    }

    package func hostsTable() throws(HostsTable.ReadError) -> HostsTable? {
        guard let hostsFile else { return nil }
        return try HostsTable.load(path: hostsFile)
    }

    /// What every event loop shares, for `policy`.
    /// - Parameter hosts: the table read from ``hostsFile`` (``hostsTable()``), read by the caller
    ///   once per load or reload.
    /// - Parameter onboarding: the proxy's own pages (``Daemon/onboardingSite(for:)``).
    package func proxySettings(
        policy: TransportSecurityPolicy, hosts: HostsTable?, onboarding: (any LocalSite & Sendable)? = nil
    ) -> ProxySettings {
        var settings = ProxySettings(
            policy: policy, mode: mode, clientClass: clientClass, headTimeout: headTimeout,
            connectTimeout: connectTimeout,
            handshakeTimeout: handshakeTimeout, idleTimeout: idleTimeout,
            // A WireGuard peer is a client by its key: the tunnel lets in no one else.
            allowedClients: allowedClients + (wireguard.map { _ in [WireGuardSettings.network] } ?? []))
        settings.allowedDestinations = allowedDestinations
        settings.hosts = hosts
        settings.intercept = intercept
        settings.onboarding = onboarding
        settings.fetchesIntermediates = fetchesIntermediates
        settings.tunnelStart = tunnelStart
        settings.upstreamMarking = upstreamMark.map { UpstreamMarking(mark: $0, opening: openingConnections) }
        settings.deviceNames = wireguard.map { _ in deviceNames }
        settings.resolvedNames = wireguard.map { _ in resolvedNames }
        return settings
    }

    /// A file the setting `key` names could not be used: the setting's line (or flag), then the
    /// file's own error with its line or key path.
    package func unusableFile(_ key: ConfigKey, _ error: any Error) -> ConfigurationError {
        unusableFile(key, reason: "\(error)")
    }

    /// The file `key` names cannot be used, for `reason`, said at the setting's origin.
    package func unusableFile(_ key: ConfigKey, reason: String) -> ConfigurationError {
        ConfigurationError(.unusableFile, origin: origins[key] ?? .commandLine, key: key.name, reason: reason)
    }
}

extension DaemonConfiguration {
    /// Intercept mode's CA and leaves, from ``caDir``: required (an error naming the file) when
    /// `--inspect intercept` is set; otherwise read when the CA is there, so that a reload may turn
    /// intercept mode on, and nil when it is not.
    package func interceptService() throws(CertificateAuthorityError) -> InterceptService? {
        try loadAuthority().map { authority throws(CertificateAuthorityError) in
            try interceptService(authority: authority)
        }
    }

    /// The CA in ``caDir``: required (an error naming the file) in intercept mode; otherwise nil
    /// when it is missing or unusable (tunnel mode needs none; the onboarding page then says how
    /// to make one).
    package func loadAuthority() throws(CertificateAuthorityError) -> CertificateAuthority? {
        do {
            return try CertificateAuthority.load(from: caDir)
        } catch {
            guard intercept.mode == .intercept else { return nil }
            throw error
        }
    }

    /// Intercept mode's leaves and device context, minted with `authority`.
    package func interceptService(authority: CertificateAuthority) throws(CertificateAuthorityError) -> InterceptService
    {
        do {
            let minter = try LeafMinter(authority: authority)
            let context = try TLSServerContext()
            return InterceptService(deviceContext: context, leaves: minter.statistics) { LeafCache(minter: minter) }
        } catch {
            throw CertificateAuthorityError(path: authority.directory, problem: .openSSL(error))
        }
    }
}
