import ATSPolicy
import EventLoop
import POSIX
import TLSInspection
import TextFormats

/// What the probes found out about one upstream, for one set of requirements. A class, immutable:
/// the verdict cache holds a reference, and results with the same facts share one (many names
/// served by one server, or a client naming random SNIs, cost one result, not one per name).
package final class ProbeResult: Sendable {
    /// The facts of the ATS-shaped handshake, or of the permissive one when the ATS-shaped one failed.
    package let observed: ObservedConnection?
    /// Why the ATS-shaped handshake failed, when it did (the permissive probe then says why in facts).
    package let atsHandshakeFailure: HandshakeFailure?
    /// Why the upstream could not be reached at all (DNS, refused, timeout): no verdict, a 502 or 504.
    package let upstreamFailure: ProbeFailure?
    /// Set when the upstream answered the ClientHello in some other protocol: no TLS verdict; the
    /// tunnel is judged by the device's own first bytes instead (the `cleartext` rule).
    package let cleartextUpstream: String?
    /// The address the probes reached, which a tunnel on this verdict then connects to: the verdict
    /// is about that server, not another address of the same name.
    package let address: SocketAddress?
    /// Set when the client the probe ran for may not reach an address of the name: nothing was
    /// sent to it. Such a result also carries an `upstreamFailure` (so it is never cached), and
    /// says nothing about another client, whose own rules decide.
    package let refusal: DestinationRefusal?
    /// `observed` as the log's `tls` value, serialized once per probe for every connection that
    /// reuses this result from the verdict cache (``ConnectionRecord/logLine`` splices it in). Only
    /// the bytes are kept: a value tree as well cost each cache entry about as much again.
    package let tlsLogBytes: [UInt8]

    package convenience init(
        observed: ObservedConnection? = nil, atsHandshakeFailure: HandshakeFailure? = nil,
        upstreamFailure: ProbeFailure? = nil,
        cleartextUpstream: String? = nil, address: SocketAddress? = nil
    ) {
        self.init(
            observed: observed, atsHandshakeFailure: atsHandshakeFailure, upstreamFailure: upstreamFailure,
            cleartextUpstream: cleartextUpstream, address: address, refusal: nil, tlsLogBytes: nil)
    }

    /// - Parameter tlsLogBytes: `observed`'s log form when another result has it already.
    init(
        observed: ObservedConnection?, atsHandshakeFailure: HandshakeFailure?, upstreamFailure: ProbeFailure?,
        cleartextUpstream: String?, address: SocketAddress?, refusal: DestinationRefusal?, tlsLogBytes: [UInt8]?
    ) {
        self.observed = observed
        self.atsHandshakeFailure = atsHandshakeFailure
        self.upstreamFailure = upstreamFailure
        self.cleartextUpstream = cleartextUpstream
        self.address = address
        self.refusal = refusal
        self.tlsLogBytes = tlsLogBytes ?? (observed.map(ConnectionRecord.tlsJSON) ?? .null).serializedBytes
    }

    /// the result of a probe that did not start: the client may not reach the name's address.
    convenience init(refusal: DestinationRefusal, host: String, port: UInt16) {
        self.init(
            observed: nil, atsHandshakeFailure: nil,
            upstreamFailure: .connect(host: host, port: port, reason: "refused: \(refusal)"), cleartextUpstream: nil,
            address: nil, refusal: refusal, tlsLogBytes: nil)
    }

    /// The same result with facts that differ only where the log's `tls` value does not look (the
    /// application protocol of a resumed handshake): its log form is kept, not serialized again.
    func replacing(observed: ObservedConnection) -> ProbeResult {
        ProbeResult(
            observed: observed, atsHandshakeFailure: atsHandshakeFailure, upstreamFailure: upstreamFailure,
            cleartextUpstream: cleartextUpstream, address: address, refusal: refusal, tlsLogBytes: tlsLogBytes)
    }

    /// Whether `other` saw the same facts (the same server's certificates and handshake).
    func hasSameFacts(as other: ProbeResult) -> Bool {
        observed != nil && tlsLogBytes == other.tlsLogBytes && observed == other.observed
    }

    /// Whether `other` says all this one says: the same facts, address and failures.
    func isSame(as other: ProbeResult) -> Bool {
        hasSameFacts(as: other) && address?.description == other.address?.description
            && atsHandshakeFailure == other.atsHandshakeFailure && upstreamFailure == other.upstreamFailure
            && cleartextUpstream == other.cleartextUpstream && refusal == nil && other.refusal == nil
    }

    /// This result, holding `other`'s storage for the facts they share (``hasSameFacts(as:)``).
    func sharingFacts(with other: ProbeResult) -> ProbeResult {
        ProbeResult(
            observed: other.observed, atsHandshakeFailure: atsHandshakeFailure, upstreamFailure: upstreamFailure,
            cleartextUpstream: cleartextUpstream, address: address, refusal: refusal, tlsLogBytes: other.tlsLogBytes)
    }
}

/// The key probe results are cached under: the same host and port probed as the same client (TLS
/// versions and suites) with the same SNI gives the same facts. The verdict itself is not cached:
/// each connection judges the facts with its own requirements, so a key holds only what the probe
/// depends on, which keeps each of the cache's entries small.
package struct VerdictKey: Hashable, Sendable {
    package var host: String
    package var port: UInt16
    /// The SNI the probe sends, when it is not the one the host implies (a device's ClientHello
    /// naming another host than its CONNECT).
    package var serverName: String?
    /// The SNI the probe sends: `serverName`, or the host's own name (none for an IP literal, as
    /// Apple's client sends none).
    package var sentServerName: String?
    /// The client the probe is: versions and suites, from the requirements.
    package var profile: ClientProfile
    /// The address the probe connects to instead of resolving `host`: a captured connection's
    /// original destination, the server the device itself reached (``SessionCapture``).
    package var address: SocketAddress?

    package init(
        host: String, port: UInt16, serverName: String? = nil, requirements: Requirements, address: SocketAddress? = nil
    ) {
        self.host = host
        self.port = port
        self.address = address
        self.serverName = serverName
        sentServerName = serverName ?? Self.impliedServerName(requirements)
        profile = .ats(for: requirements)
    }

    /// The SNI the requirements' host implies: its name; none for an IP literal, as Apple's client
    /// sends none.
    package static func impliedServerName(_ requirements: Requirements) -> String? {
        if case .name(let name) = requirements.host { name } else { nil }
    }

    /// Hashes the host, port and server name only: keys for one host:port as another client are
    /// rare (another client class, a reload) and still told apart by `==`.
    package func hash(into hasher: inout Hasher) {
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
package final class ProbeService: Sendable {
    /// One configured SSL_CTX per client profile, made on first use: making one loads the trust
    /// store, which every probe would otherwise repeat. Contexts are safe to share once set up.
    private let contexts = Locked<[ClientProfile: TLSClientContext]>([:])
    /// The anchors the probes' paths are built against (a path completed by fetching, too).
    let anchors: TrustAnchors
    /// Intermediates fetched from CA Issuers URLs, and the fetches under way, for every loop.
    package let intermediates = IntermediateFetchCache()
    private let maximumInFlight: Int
    private let maximumPerUpstream: Int
    private let slots = Locked(Slots())

    private struct Slots: ~Copyable {
        var total = 0
        var perUpstream: [UpstreamSlot: Int] = [:]
    }

    package init(anchors: TrustAnchors, maximumInFlight: Int = 4096, maximumPerUpstream: Int = 64) {
        self.anchors = anchors
        self.maximumInFlight = maximumInFlight
        self.maximumPerUpstream = maximumPerUpstream
    }

    /// The shared context for `profile`: every handshake as that client, on any loop, uses the same one.
    package func context(for profile: ClientProfile) throws(TLSError) -> TLSClientContext {
        if let made = contexts.withLock({ $0[profile] }) { return made }
        let made = try TLSClientContext(profile: profile, anchors: anchors)
        return contexts.withLock { cache in
            if let raced = cache[profile] { return raced }
            cache[profile] = made
            return made
        }
    }

    /// Probes under way, on every loop.
    package var inFlight: Int { slots.withLock { $0.total } }

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
