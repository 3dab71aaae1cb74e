import ATSPolicy
import EventLoop
import ProxyWire
import TLSInspection

/// One client connection, from its request head to the end of its tunnel. Loop-confined.
///
/// CONNECT: requirements for the host, a verdict from a (cached, shared) probe, then a 403, a 502
/// or `200 Connection established` and a relay both ways with backpressure and half-close.
final class ClientSession {
    let id: UInt64
    unowned let server: ProxyServer
    let client: Connection
    let peer: String
    /// Whether `--allow-client` admits this client.
    let allowed: Bool
    let startedAt = ProxyServer.nowMilliseconds()

    private var parser = RequestHeadParser()
    private var record: ConnectionRecord?
    private var upstream: Connection?
    private var earlyBytes: [UInt8] = []
    private var requirements: Requirements?
    private var target: (host: String, port: UInt16)?
    private var finished = false
    private var clientDone = false
    private var upstreamDone = false

    /// Above this much unsent data toward one side, stop reading from the other (le-proxy's rule).
    static let highWater = 512 * 1024

    init(id: UInt64, server: ProxyServer, client: Connection, peer: String, allowed: Bool) {
        self.id = id
        self.server = server
        self.client = client
        self.peer = peer
        self.allowed = allowed
    }

    func start() {
        client.setTimeouts(read: server.settings.headTimeout, write: server.settings.headTimeout)
        guard allowed else {
            respond(ProxyResponse.text(
                status: 403, reason: "Forbidden",
                body: "client \(peer) is not allowed to use this proxy (see --allow-client)\n"))
            return
        }
        client.onReadable = { [unowned self] _ in readHead() }
        client.onEvent = { [unowned self] _, event in
            if event == .timeout {
                respond(ProxyResponse.text(status: 408, reason: "Request Timeout", body: "no complete request head in time\n"))
            } else {
                finish()
            }
        }
    }

    // MARK: - The request head

    private func readHead() {
        switch parser.consume(client.read()) {
        case .needMoreData:
            return
        case .failed(let error):
            respond(ProxyResponse.text(status: error.status, reason: error.statusPhrase, body: error.reason + "\n"))
        case .complete(let head, let leftover):
            client.setReading(false)
            earlyBytes = leftover
            route(head)
        }
    }

    private func route(_ head: RequestHead) {
        if case .absolute(let scheme, let host, let port, _) = head.target, scheme == "http" {
            return plainRequest(head, host: host, port: port ?? 80)
        }
        guard head.method == "CONNECT", case .authority(let host, let port) = head.target else {
            respond(ProxyResponse.text(
                status: 400, reason: "Bad Request",
                body: "send CONNECT host:port for https, or an absolute http:// URL for plain HTTP\n"))
            return
        }
        var record = ConnectionRecord(
            startedAt: startedAt, client: peer, method: head.method, scheme: .https, host: host, port: port, action: .failed)
        let requirements: Requirements
        do {
            requirements = try lookUpRequirements(for: host, scheme: .https)
        } catch {
            record.upstreamError = "\(host) is not a host: \(error)"
            self.record = record
            respond(ProxyResponse.text(status: 400, reason: "Bad Request", body: "\(host) is not a host: \(error)\n"))
            return
        }
        self.record = record
        self.requirements = requirements
        target = (host, port)
        lookUpVerdict(host: host, port: port, requirements: requirements)
    }

    /// A plain http:// request: blocked with Apple's cleartext error where the policy requires HTTPS
    /// (report mode logs it as non-compliant).
    private func plainRequest(_ head: RequestHead, host: String, port: UInt16) {
        var record = ConnectionRecord(
            startedAt: startedAt, client: peer, method: head.method, scheme: .http, host: host, port: port, action: .failed)
        guard let requirements = try? lookUpRequirements(for: host, scheme: .http) else {
            self.record = record
            return respond(ProxyResponse.text(status: 400, reason: "Bad Request", body: "\(host) is not a host\n"))
        }
        let verdict = server.settings.policy.verdict(for: requirements, observed: nil)
        record.verdict = verdict
        if !verdict.isCompliant, server.settings.mode == .enforce {
            record.action = .blocked
            self.record = record
            return respond(ProxyResponse.cleartextBlocked(verdict, host: host))
        }
        record.upstreamError = "plain http:// forwarding is not built yet"
        self.record = record
        respond(ProxyResponse.text(
            status: 501, reason: "Not Implemented",
            body: "ATS allows cleartext to \(host), but this build of atsproxy cannot forward plain http:// yet\n"))
    }

    /// The policy's answer for the host, without the "why" lines (this is the per-connection path).
    private func lookUpRequirements(for host: String, scheme: URLScheme) throws(HostIdentity.ParseFailure) -> Requirements {
        try server.settings.policy.requirements(
            forHost: host, scheme: scheme, clientClass: server.settings.clientClass, explaining: false)
    }

    private func lookUpVerdict(host: String, port: UInt16, requirements: Requirements) {
        guard let poster = server.poster else { return finish() }
        let key = VerdictKey(host: host, port: port, requirements: requirements)
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
            server.probes.probe(host: host, port: port, requirements: requirements) { report in
                // Unreachable upstreams are not cached: the next request tries again.
                if report.upstreamFailure != nil {
                    cache.abandon(key, answering: report)
                } else {
                    cache.complete(key, with: report, now: ProxyServer.nowMilliseconds())
                }
                poster.post(.probeFinished(session: session, report: report))
            }
        }
    }

    // MARK: - The verdict

    func probeFinished(_ report: ProbeReport) {
        guard !finished, let requirements, let target, var record else { return }
        record.probed = report.observed
        guard let observed = report.observed else {
            record.action = .failed
            record.upstreamError = report.upstreamFailure?.description ?? "the upstream could not be reached"
            self.record = record
            respond(ProxyResponse.text(
                status: 502, reason: "Bad Gateway", body: "atsproxy could not reach \(target.host):\(target.port): "
                    + (record.upstreamError ?? "") + "\n"))
            return
        }
        let verdict = server.settings.policy.verdict(for: requirements, observed: observed)
        record.verdict = verdict
        if !verdict.isCompliant, server.settings.mode == .enforce {
            record.action = .blocked
            self.record = record
            respond(ProxyResponse.blocked(verdict, host: target.host))
            return
        }
        record.action = .allowed
        self.record = record
        openTunnel(to: target.host, port: target.port)
    }

    // MARK: - The tunnel

    private func openTunnel(to host: String, port: UInt16) {
        let upstream: Connection
        do {
            upstream = try Connection(base: server.base, connectingTo: host, port: port, resolver: server.resolver)
        } catch {
            return upstreamFailed(error.description)
        }
        self.upstream = upstream
        upstream.setTimeouts(read: nil, write: server.settings.headTimeout)
        upstream.onEvent = { [unowned self] connection, event in
            switch event {
            case .connected:
                tunnelEstablished()
            case .error, .timeout:
                upstreamFailed(connection.dnsError ?? "\(event)")
            case .endOfStream:
                upstreamFailed("the server closed the connection")
            }
        }
    }

    private func upstreamFailed(_ reason: String) {
        record?.action = .failed
        record?.upstreamError = reason
        respond(ProxyResponse.text(status: 502, reason: "Bad Gateway", body: "atsproxy could not connect upstream: \(reason)\n"))
    }

    private func tunnelEstablished() {
        guard let upstream else { return }
        client.write(ProxyResponse.connectionEstablished)
        upstream.write(earlyBytes)
        record?.bytesUp += Int64(earlyBytes.count)
        earlyBytes = []
        let idle = server.settings.idleTimeout
        client.setTimeouts(read: idle, write: idle)
        upstream.setTimeouts(read: idle, write: idle)
        relay(from: client, to: upstream, up: true)
        relay(from: upstream, to: client, up: false)
        client.setReading(true)
    }

    /// Moves bytes from `source` to `target` as they come, pausing `source` while `target` has more
    /// than ``highWater`` bytes unsent; forwards end-of-stream as a half-close.
    private func relay(from source: Connection, to target: Connection, up: Bool) {
        source.onReadable = { [unowned self] source in
            let count = Int64(source.availableBytes)
            if up { record?.bytesUp += count } else { record?.bytesDown += count }
            source.moveInput(to: target)
            if target.pendingOutputBytes > ClientSession.highWater {
                source.setReading(false)
                target.setDrainedMark(ClientSession.highWater / 2)
                target.onDrained = { [unowned self] target in
                    target.onDrained = nil
                    target.setDrainedMark(0)
                    if !(up ? clientDone : upstreamDone) { source.setReading(true) }
                }
            }
        }
        source.onEvent = { [unowned self] source, event in
            guard event == .endOfStream else { return finish() }
            if up { clientDone = true } else { upstreamDone = true }
            source.setReading(false)
            // Half-close: the other side learns of the end once what we hold for it is written.
            if target.pendingOutputBytes == 0 {
                target.shutdownWrite()
            } else {
                target.setDrainedMark(0)
                target.onDrained = { target in target.shutdownWrite() }
            }
            if clientDone, upstreamDone { finish() }
        }
    }

    // MARK: - Ending

    /// Sends the proxy's own response, then closes once it is written.
    private func respond(_ bytes: [UInt8]) {
        client.setReading(false)
        upstream?.close()
        upstream = nil
        client.write(bytes)
        client.setDrainedMark(0)
        client.onDrained = { [unowned self] _ in finish() }
        // A client that half-closed after its request still reads the answer: only a real error or
        // a timeout ends the session before the response is written.
        client.onEvent = { [unowned self] _, event in
            if event != .endOfStream { finish() }
        }
    }

    private func finish() {
        guard !finished else { return }
        finished = true
        if var record {
            record.durationMilliseconds = ProxyServer.nowMilliseconds() - startedAt
            server.log.write(line: record.json.serialized)
        }
        upstream?.close()
        client.close()
        server.sessionEnded(id)
    }
}
