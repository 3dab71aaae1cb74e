import TLSInspection

/// What a probe needs of the settings: its time limits, the `--hosts-file` names it dials first,
/// and whether it completes paths by fetching. The proxy takes them from its ``ProxySettings``;
/// `atsproxyctl diagnose` from its own options, so both run the same probes under the same rules.
package struct ProbeLimits: Sendable {
    /// How long a connection to an upstream may take to open (each address in turn).
    package var connectTimeout: Duration
    /// How long a verdict's handshakes may take, from the moment the first connection opened.
    package var handshakeTimeout: Duration
    /// Names dialled at these addresses before /etc/hosts and DNS.
    package var hosts: HostsTable?
    /// Whether a path the server left an intermediate out of is completed from its CA Issuers URL.
    package var fetchesIntermediates: Bool
    /// `--upstream-mark`: how every connection the proxy opens upstream is marked.
    package var upstreamMarking: UpstreamMarking?

    package init(
        connectTimeout: Duration = .seconds(10), handshakeTimeout: Duration = .seconds(10), hosts: HostsTable? = nil,
        fetchesIntermediates: Bool = true, upstreamMarking: UpstreamMarking? = nil
    ) {
        self.upstreamMarking = upstreamMarking
        self.connectTimeout = connectTimeout
        self.handshakeTimeout = handshakeTimeout
        self.hosts = hosts
        self.fetchesIntermediates = fetchesIntermediates
    }
}

extension ProxySettings {
    /// The limits this proxy's probes and intermediate fetches run under.
    var probeLimits: ProbeLimits {
        ProbeLimits(
            connectTimeout: connectTimeout, handshakeTimeout: handshakeTimeout, hosts: hosts,
            fetchesIntermediates: fetchesIntermediates, upstreamMarking: upstreamMarking)
    }
}
