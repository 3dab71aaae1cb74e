import ATSPolicy
import ProxyCore
import TLSInspection

/// What a server accepts and presents, found with a permissive client one TLS version at a time: the
/// facts `atsproxyctl diagnose` shows beside its verdicts.
struct ServerSurvey: Sendable {
    /// One TLS version: the suites the server chose when offered everything, then everything but what
    /// it had already chosen, until it refused (its preference order, as far as it has one).
    struct VersionSupport: Sendable {
        var version: TLSVersion
        var suites: [CipherSuite]
        /// Why the first handshake at this version failed, when the server does not speak it.
        var refusal: String?

        var isAccepted: Bool { !suites.isEmpty }
    }

    /// One certificate of the chain, with what a pin needs.
    struct Certificate: Sendable {
        var facts: CertificateFacts
        var issuer: String
        /// Whether the server sent it (the anchor at the end of a path usually comes from the trust store).
        var sentByServer: Bool
    }

    /// TLS 1.0 to 1.3, lowest first.
    var versions: [VersionSupport]
    /// The chain of the handshake at the highest version: leaf first, the anchor last when trusted.
    var chain: [Certificate]
    var trust: ChainTrust?

    init(versions: [VersionSupport], chain: [Certificate], trust: ChainTrust?) {
        self.versions = versions
        self.chain = chain
        self.trust = trust
    }

    /// The versions the server speaks, lowest first.
    var acceptedVersions: [TLSVersion] { versions.filter(\.isAccepted).map(\.version) }

    /// At most this many suites are listed per version: a bound on handshakes against a server that
    /// answers every offer.
    static let suiteLimit = 48

    /// Surveys `host:port`, sending `serverName` as SNI, with the probe engine's handshakes (each
    /// path completed as a verdict's is): one handshake per accepted suite and one more per version.
    static func run(probes: ProbeLoop, host: String, port: UInt16, serverName: String?) -> ServerSurvey {
        var versions: [VersionSupport] = []
        var best: ProbeOutcome?
        for version in TLSVersion.exceptionVersions {
            var support = VersionSupport(version: version, suites: [], refusal: nil)
            var excluded: Set<CipherSuite> = []
            while support.suites.count < suiteLimit {
                let outcome = probes.handshake(
                    host: host, port: port, serverName: serverName,
                    profile: .survey(version: version, excluding: excluded))
                guard let observed = outcome.observed, let suite = observed.cipherSuite, !excluded.contains(suite)
                else {
                    if support.suites.isEmpty {
                        support.refusal = outcome.failure?.description ?? "no suite was chosen"
                    }
                    break
                }
                if support.suites.isEmpty { best = outcome }
                support.suites.append(suite)
                excluded.insert(suite)
            }
            versions.append(support)
        }
        return ServerSurvey(versions: versions, chain: best.map(chain(of:)) ?? [], trust: best?.observed?.trust)
    }

    private static func chain(of outcome: ProbeOutcome) -> [Certificate] {
        let sent = Set(outcome.peerCertificates.map(\.facts))
        return outcome.path.map { certificate in
            let facts = certificate.facts
            return Certificate(facts: facts, issuer: certificate.issuer, sentByServer: sent.contains(facts))
        }
    }
}
