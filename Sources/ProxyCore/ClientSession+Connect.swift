import ATSPolicy
import EventLoop
import ProxyWire
import TLSInspection

/// CONNECT: the requirements for the host, a verdict from a (cached, shared) probe, then a 403, a
/// 502, or an upstream connection and `200 Connection established`.
extension ClientSession {
    func connectRequest(host: String, port: UInt16) {
        let requirements: Requirements
        do {
            requirements = try lookUpRequirements(for: host, scheme: .https)
        } catch {
            record?.upstreamError = "\(host) is not a host: \(error)"
            respond(ProxyResponse.text(status: 400, reason: "Bad Request", body: "\(host) is not a host: \(error)\n"))
            return
        }
        record?.requirements = requirements
        self.requirements = requirements
        target = (host, port)
        tunnel.phase = .awaitingVerdict
        lookUpVerdict(VerdictKey(host: host, port: port, requirements: requirements))
    }

    /// Answers from the verdict cache, joins a probe in flight, or starts one; the answer comes back
    /// through ``probeFinished(_:)`` on this loop.
    func lookUpVerdict(_ key: VerdictKey) {
        guard let poster = server.messages else { return finish() }
        let session = id
        let cache = server.cache
        switch cache.lookup(key, now: ProxyServer.nowMilliseconds(), waiter: { report in
            poster.post(.probeFinished(session: session, report: report))
        }) {
        case .hit(let report):
            probeFinished(report)
        case .waiting:
            return
        case .probe:
            server.startProbe(key, rules: destinations) { report in
                // Unreachable upstreams are not cached: the next request tries again. Nor are
                // refusals (they carry an upstream failure): they hold for this client's rules only.
                if report.upstreamFailure != nil {
                    cache.abandon(key, answering: report)
                } else {
                    cache.complete(key, with: report, now: ProxyServer.nowMilliseconds())
                }
                poster.post(.probeFinished(session: session, report: report))
            }
        }
    }

    /// A probe's answer, for the CONNECT host or for the ClientHello's server name.
    func probeFinished(_ report: ProbeReport) {
        switch tunnel.phase {
        case .awaitingVerdict: connectVerdict(report)
        case .awaitingServerNameVerdict(let requirements): serverNameVerdict(report, requirements: requirements)
        default: return
        }
    }

    private func connectVerdict(_ report: ProbeReport) {
        guard let requirements, let target else { return }
        if let refusal = report.refusal {
            // The probe may have run for another client (this one joined it in flight): this
            // client's own rules decide, and a probe with them is started when they allow it.
            guard destinations.vet(refusal.destination.address, port: refusal.destination.port) == nil, !verdictRetried
            else { return deny(refusal) }
            verdictRetried = true
            return lookUpVerdict(VerdictKey(host: target.host, port: target.port, requirements: requirements))
        }
        // A cached verdict may come from another client's probe (a loopback client's, which may
        // reach 127.0.0.1): the address it judged must be one this client may reach.
        if let address = report.address, let refusal = destinations.vet(address) { return deny(refusal) }
        record?.noteProbe(report)
        record?.upstreamAddress = report.address?.description
        if let reason = report.cleartextUpstream {
            // No TLS to judge: the device's own first bytes decide (the `cleartext` rule, or a TLS
            // handshake that would fail against this server).
            tunnel.upstreamSpeaksCleartext = reason
            if refusesCleartextUpstream(reason) { return }
            record?.action = .allowed
            return openTunnel(to: target.host, port: target.port, address: report.address)
        }
        guard let observed = report.observed else {
            record?.action = .failed
            let reason = report.upstreamFailure?.description ?? "the upstream could not be reached"
            record?.upstreamError = reason
            let timedOut = report.upstreamFailure?.isTimeout == true
            respond(ProxyResponse.text(
                status: timedOut ? 504 : 502, reason: timedOut ? "Gateway Timeout" : "Bad Gateway",
                body: "atsproxy could not reach \(target.host):\(target.port): \(reason)\n"))
            return
        }
        let verdict = settings.policy.verdict(
            for: requirements, observed: observed, atsHandshakeFailure: report.atsHandshakeFailure)
        record?.verdict = verdict
        if !verdict.isCompliant, settings.mode == .enforce {
            record?.action = .blocked
            respond(ProxyResponse.blocked(verdict, host: target.host))
            return
        }
        record?.action = .allowed
        openTunnel(to: target.host, port: target.port, address: report.address)
    }

    /// Connects to the address the verdict was about (by name only when the probe reached none).
    private func openTunnel(to host: String, port: UInt16, address: SocketAddress?) {
        tunnel.phase = .connectingUpstream
        dial(host: host, port: port, address: address) { [unowned self] result in
            switch result {
            case .success(let (upstream, address)):
                self.upstream = upstream
                record?.upstreamAddress = address.description
                tunnelEstablished()
            case .failure(.refused(let refusal)):
                deny(refusal)
            case .failure(.unreachable(let failure, _)):
                upstreamFailed(failure.description)
            }
        }
    }

    private func upstreamFailed(_ reason: String) {
        record?.action = .failed
        record?.upstreamError = reason
        respond(ProxyResponse.text(status: 502, reason: "Bad Gateway", body: "atsproxy could not connect upstream: \(reason)\n"))
    }
}
