import ATSPolicy
import EventLoop
import Synchronization
import TLSInspection

/// What the probes found out about one upstream, for one set of requirements.
public struct ProbeReport: Sendable {
    /// The facts of the ATS-shaped handshake, or of the permissive one when the ATS-shaped one failed.
    public let observed: ObservedConnection?
    /// Why the ATS-shaped handshake failed, when it did (the permissive probe then says why in facts).
    public let atsHandshakeFailure: HandshakeFailure?
    /// Why the upstream could not be reached at all (DNS, refused, timeout): no verdict, a 502 or 504.
    public let upstreamFailure: ProbeFailure?
    /// Set when the upstream answered the ClientHello in some other protocol: no TLS verdict; the
    /// tunnel is judged by the device's own first bytes instead (the `cleartext` rule).
    public let cleartextUpstream: String?
    /// The address the probes reached, which a tunnel on this verdict then connects to: the verdict
    /// is about that server, not another address of the same name.
    public let address: SocketAddress?
    /// Set when the client the probe ran for may not reach an address of the name: nothing was
    /// sent to it. Such a report also carries an `upstreamFailure` (so it is never cached), and
    /// says nothing about another client, whose own rules decide.
    public let refusal: DestinationRefusal?
    /// `observed` as the log's `tls` value: built once per probe, for every connection that reuses
    /// this report from the verdict cache.
    public let tlsJSON: JSONValue
    /// `tlsJSON` serialized, as the log line splices it in (``ConnectionRecord/logLine``).
    public let tlsLogBytes: [UInt8]

    public init(
        observed: ObservedConnection? = nil, atsHandshakeFailure: HandshakeFailure? = nil, upstreamFailure: ProbeFailure? = nil,
        cleartextUpstream: String? = nil, address: SocketAddress? = nil
    ) {
        self.observed = observed
        self.atsHandshakeFailure = atsHandshakeFailure
        self.upstreamFailure = upstreamFailure
        self.cleartextUpstream = cleartextUpstream
        self.address = address
        refusal = nil
        tlsJSON = observed.map(ConnectionRecord.tlsJSON) ?? .null
        tlsLogBytes = tlsJSON.serializedBytes
    }
}

extension ProbeReport {
    /// The report of a probe that did not start: the client may not reach the name's address.
    init(refusal: DestinationRefusal, host: String, port: UInt16) {
        self.init(refusal: refusal, upstreamFailure: .connect(host: host, port: port, reason: "refused: \(refusal)"))
    }

    private init(refusal: DestinationRefusal, upstreamFailure: ProbeFailure) {
        observed = nil
        atsHandshakeFailure = nil
        self.upstreamFailure = upstreamFailure
        cleartextUpstream = nil
        address = nil
        self.refusal = refusal
        tlsJSON = .null
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

/// What every loop's probes share: the TLS client contexts (one `SSL_CTX` per client profile, made
/// once) and the limits on probes under way. (The `--hosts-file` table travels with the settings:
/// ``ProxySettings/hosts``.)
///
/// Probes themselves run on the loop of the connection that needs the verdict
/// (``VerdictProbeRun``): no threads, no blocking sockets. How many may run at once is bounded by
/// memory (`maximumInFlight`, a few KiB each while they wait) and per upstream host and port
/// (`maximumPerUpstream`), never by a thread count: a slow upstream holds only its own slots.
public final class ProbeService: Sendable {
    let prober: UpstreamProber
    private let publishedHosts = Mutex<HostsTable?>(nil)
    private let maximumInFlight: Int
    private let maximumPerUpstream: Int
    private let slots = Mutex(Slots())

    private struct Slots: ~Copyable {
        var total = 0
        var perUpstream: [UpstreamSlot: Int] = [:]
    }

    public init(anchors: TrustAnchors, maximumInFlight: Int = 4096, maximumPerUpstream: Int = 64) {
        // The prober's contexts only: its blocking connects (and their hosts table) are not used here.
        prober = UpstreamProber(anchors: anchors)
        self.maximumInFlight = maximumInFlight
        self.maximumPerUpstream = maximumPerUpstream
    }

    /// The hosts table of the settings a loop most recently took (``ProxySettings/hosts``).
    ///
    /// Transitional, for callers that do not read their own settings' table yet (ClientSession's
    /// plain-HTTP dial): a session should use `settings.hosts`, which stays the table it started
    /// with across a reload. Remove once nothing reads it.
    var hosts: HostsTable? { publishedHosts.withLock { $0 } }

    /// Called by each loop when it takes settings (at start and on every reload).
    func publishHosts(_ table: HostsTable?) { publishedHosts.withLock { $0 = table } }

    /// Probes under way, on every loop.
    public var inFlight: Int { slots.withLock { $0.total } }

    /// Takes a slot for a probe of `upstream`, or says why none is free.
    func reserve(_ upstream: UpstreamSlot) -> String? {
        slots.withLock { slots in
            if slots.total >= maximumInFlight { return "\(maximumInFlight) TLS handshakes are already under way" }
            let taken = slots.perUpstream[upstream, default: 0]
            if taken >= maximumPerUpstream {
                return "\(maximumPerUpstream) TLS handshakes to \(upstream.host):\(upstream.port) are already under way"
            }
            slots.total += 1
            slots.perUpstream[upstream] = taken + 1
            return nil
        }
    }

    func release(_ upstream: UpstreamSlot) {
        slots.withLock { slots in
            slots.total -= 1
            let left = slots.perUpstream[upstream, default: 1] - 1
            slots.perUpstream[upstream] = left > 0 ? left : nil
        }
    }
}

/// The upstream a probe slot is counted against.
struct UpstreamSlot: Hashable, Sendable {
    var host: String
    var port: UInt16
}
