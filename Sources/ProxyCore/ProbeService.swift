import ATSPolicy
import Dispatch
import TLSInspection

/// What the probes found out about one upstream, for one set of requirements.
public struct ProbeReport: Sendable {
    /// The facts of the ATS-shaped handshake, or of the permissive one when the ATS-shaped one failed.
    public let observed: ObservedConnection?
    /// Why the ATS-shaped handshake failed, when it did (the permissive probe then says why in facts).
    public let atsHandshakeFailure: HandshakeFailure?
    /// Why the upstream could not be reached at all (DNS, refused, timeout): no verdict, a 502.
    public let upstreamFailure: ProbeFailure?
    /// Set when the upstream answered the ClientHello in some other protocol: no TLS verdict; the
    /// tunnel is judged by the device's own first bytes instead (the `cleartext` rule).
    public let cleartextUpstream: String?
    /// `observed` as the log's `tls` value: built here, on the probe's thread, once for every
    /// connection that reuses this report from the verdict cache.
    public let tlsJSON: JSONValue
    /// `tlsJSON` serialized, as the log line splices it in (``ConnectionRecord/logLine``).
    public let tlsLogBytes: [UInt8]

    public init(
        observed: ObservedConnection? = nil, atsHandshakeFailure: HandshakeFailure? = nil, upstreamFailure: ProbeFailure? = nil,
        cleartextUpstream: String? = nil
    ) {
        self.observed = observed
        self.atsHandshakeFailure = atsHandshakeFailure
        self.upstreamFailure = upstreamFailure
        self.cleartextUpstream = cleartextUpstream
        tlsJSON = observed.map(ConnectionRecord.tlsJSON) ?? .null
        tlsLogBytes = tlsJSON.serializedBytes
    }
}

/// The key probe results are cached under: the same host and port probed with the same
/// requirements gives the same facts.
public struct VerdictKey: Hashable, Sendable {
    public var host: String
    public var port: UInt16
    /// The SNI the probe sends, when it is not the one `requirements` imply (a device's ClientHello
    /// naming another host than its CONNECT).
    public var serverName: String?
    public var requirements: Requirements

    public init(host: String, port: UInt16, serverName: String? = nil, requirements: Requirements) {
        self.host = host
        self.port = port
        self.serverName = serverName
        self.requirements = requirements
    }

    /// Hashes the host, port and server name only: keys for one host:port with other requirements
    /// are rare (another client class, a reload) and still told apart by `==`, while hashing every
    /// field of `requirements` (suite lists, the explanation's sentences) cost more than the rest of
    /// a cache hit.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(host)
        hasher.combine(port)
        hasher.combine(serverName)
    }
}

/// Runs blocking probes off the event loops, at most `concurrency` at a time.
public final class ProbeService: Sendable {
    private let queue = DispatchQueue(label: "atsproxy.probes", attributes: .concurrent)
    private let slots: DispatchSemaphore
    private let prober: UpstreamProber

    /// - Parameter hosts: `--hosts-file`, consulted before the system resolver.
    public init(anchors: TrustAnchors, hosts: HostsTable? = nil, concurrency: Int = 16, timeout: Duration = .seconds(10)) {
        prober = UpstreamProber(anchors: anchors, hosts: hosts, timeout: timeout)
        slots = DispatchSemaphore(value: concurrency)
    }

    /// Probes `host:port` as the ATS client for `requirements` would, then permissively if that
    /// failed, and calls `completion` on a probe thread.
    public func probe(
        _ key: VerdictKey, completion: @escaping @Sendable (ProbeReport) -> Void
    ) {
        queue.async { [self] in
            slots.wait()
            defer { slots.signal() }
            completion(run(host: key.host, port: key.port, serverName: key.serverName, requirements: key.requirements))
        }
    }

    /// The two probes, in this thread. `serverName` overrides the SNI the requirements' host implies.
    public func run(host: String, port: UInt16, serverName: String? = nil, requirements: Requirements) -> ProbeReport {
        let probe = prober.verdictProbe(host: host, port: port, serverName: serverName, requirements: requirements)
        return ProbeReport(
            observed: probe.observed, atsHandshakeFailure: probe.atsHandshakeFailure, upstreamFailure: probe.upstreamFailure,
            cleartextUpstream: probe.cleartextUpstream)
    }
}
