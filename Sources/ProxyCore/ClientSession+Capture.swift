import ATSPolicy
import EventLoop
import LogRecord
import ProxyWire

/// How a client reached the proxy, from its listener: through the device's proxy setting, or
/// redirected by a firewall to `--transparent-listen` (docs/capture.md).
enum SessionCapture {
    /// A proxy listener: CONNECT and absolute `http://` requests.
    case proxy
    /// A listener that firewall rules redirect to, with the destination the device dialled (nil:
    /// the kernel gave none) and the path: `--transparent-listen`'s, or the WireGuard tunnel's.
    case redirected(original: SocketAddress?, path: CapturePath)
    /// A redirected connection that is one of the proxy's own upstream connects, sent back by a
    /// rule that does not exempt `--upstream-mark`: refused, or it would loop.
    case loopedBack(original: SocketAddress?, path: CapturePath)
}

/// The transparent listener's connections: the device dialled a server, not the proxy, and sent
/// no CONNECT. Its first bytes name the host: a ClientHello's server name (TLS), or a request's
/// `Host` (cleartext HTTP), else the address it dialled. Each is then judged as a CONNECT to that
/// host and port, or an `http://` request, would be, and connected to the address the device
/// dialled (``ConnectTunnel/capturedDestination``), never to where the name resolves.
extension ClientSession {
    /// The original destination of a transparent listener's connection, once it is known to have
    /// been redirected; nil on a proxy listener.
    var capturedDestination: SocketAddress? {
        if case .redirected(let original, _) = capture { original } else { nil }
    }

    /// Marks `record` with how the client came and which device it is: the one place a line's
    /// `capture`, `original_destination` and `device` are written.
    func noteArrival(in record: inout ConnectionRecord) {
        record.device = device
        switch capture {
        case .proxy: return
        case .redirected(let original, let path), .loopedBack(let original, let path):
            record.capture = path
            record.originalDestination = original?.description
            // Only the tunnel's devices ask the proxy's DNS.
            if path == .wireguard {
                record.dnsName = settings.resolvedNames?.name(
                    of: original?.withAddressBytes { IPAddress(networkBytes: $0) }, device: clientIP)
            }
        }
    }

    /// Whether the device awaits a ServerHello: a captured connection whose first bytes were TLS.
    var answersInTLS: Bool { capturedDestination != nil && tunnel != nil }

    /// A transparent listener's connection with nothing to judge is refused, its line saying why:
    /// one no rule redirected (the device dialled the listener itself, or the kernel knows no other
    /// destination), or one of the proxy's own connections sent back by rules that do not exempt
    /// its mark. Returns whether it was refused.
    func refuseUnredirected() -> Bool {
        let reason: FailureReason
        switch capture {
        case .proxy:
            return false
        case .loopedBack(let original, _):
            let mark = settings.upstreamMarking.map { " \($0.mark)" } ?? ""
            reason = FailureReason(
                .redirectLoop,
                "redirect loop: the proxy's own connection to \(original?.description ?? "its upstream") came back "
                    + "to the transparent listener; the firewall rules must exempt --upstream-mark\(mark) first "
                    + "(atsproxyctl capture rules prints them, docs/capture.md)")
        case .redirected(let original, _):
            if let original, destinations.vet(original)?.isProxyItself != true { return false }
            let listener = localAddress()?.description ?? "the transparent listener"
            reason = FailureReason(
                .notRedirected,
                "not redirected: the client dialled \(listener) itself; a transparent listener takes only connections "
                    + "a firewall rule redirected to it (REDIRECT or TPROXY, docs/capture.md)")
        }
        record = ConnectionRecord(
            startedAt: environment.clock.wallMilliseconds, client: peer, method: "-", scheme: .http, host: "-", port: 0,
            action: .denied)
        record?.fail(reason)
        finish()
        return true
    }

    /// The request heads of a captured connection are origin-form (`GET /path`), relative to the
    /// address the device dialled unless their `Host` names the server.
    func capturedHeadOrigin(_ original: SocketAddress) -> RequestOrigin {
        RequestOrigin(scheme: "http", host: original.host ?? "-", port: original.port)
    }

    // MARK: - TLS

    /// The first byte is a TLS record: the ClientHello is read whole (within what is left of the
    /// head timeout) for its server name, before anything is judged or dialled.
    func awaitCapturedHello(_ original: SocketAddress) {
        reader = .capturedHello(
            TLSHelloScanner(direction: .clientToServer), scanned: 0, since: clock.monotonicMilliseconds)
        readCapturedHello(original)
    }

    /// Feeds the held bytes to the scanner; a complete ClientHello starts the tunnel for its name.
    /// Anything else (bytes that are not a readable ClientHello, or too many of them) starts it for
    /// the address, and the tunnel's own reading of the same bytes says what was wrong.
    func readCapturedHello(_ original: SocketAddress) {
        guard case .capturedHello(var scanner, let scanned, let since) = reader else { return }
        let held = client.peek(maximum: TunnelInspection.maximumHeldBytes)
        let step = scanner.feed(held.dropFirst(scanned))
        switch step {
        case .needMoreData where held.count < TunnelInspection.maximumHeldBytes:
            // What is left of the deadline bounds the next read, so a hello that trickles in a byte
            // at a time does not extend it.
            let left = settings.headTimeout.milliseconds - (clock.monotonicMilliseconds - since)
            guard left > 0 else { return capturedHelloEnded(original, .timeout) }
            reader = .capturedHello(scanner, scanned: held.count, since: since)
            client.setTimeouts(read: .milliseconds(left), write: settings.headTimeout)
            client.setReading(true)
        case .clientHello(let hello):
            startCapturedTunnel(original, serverName: hello.serverName)
        default:
            startCapturedTunnel(original, serverName: nil)
        }
    }

    /// The device ended, failed or timed out before its ClientHello was whole: logged as a tunnel's
    /// first bytes that never came would be, for the address it dialled.
    func capturedHelloEnded(_ original: SocketAddress, _ event: StreamEvent) {
        let reason =
            event == .timeout
            ? "the ClientHello was not complete within \(settings.headTimeout.logText)"
            : "closed: the device ended its connection before its ClientHello was complete"
        logUnfinishedHello(original, FailureReason(.helloTimeout, reason))
    }

    /// Ends a connection whose ClientHello never came whole, with a line for the address dialled.
    func logUnfinishedHello(_ original: SocketAddress, _ reason: FailureReason) {
        record = ConnectionRecord(
            startedAt: environment.clock.wallMilliseconds, client: peer, method: "CONNECT", scheme: .https,
            host: original.host ?? "-", port: original.port, action: .failed)
        record?.fail(reason)
        finish()
    }

    /// Judges the captured TLS connection as a CONNECT to `serverName` (or to the address, when the
    /// ClientHello names none or a name that is not a host) and the port the device dialled.
    private func startCapturedTunnel(_ original: SocketAddress, serverName: String?) {
        client.setReading(false)
        reader = .none
        let address = original.host ?? "-"
        var host = serverName?.lowercased() ?? address
        var requirements: Requirements
        do {
            requirements = try lookUpRequirements(for: host, scheme: .https)
        } catch {
            host = address
            guard let byAddress = try? lookUpRequirements(for: host, scheme: .https) else { return finish() }
            requirements = byAddress
        }
        record = ConnectionRecord(
            startedAt: environment.clock.wallMilliseconds, client: peer, method: "CONNECT", scheme: .https, host: host,
            port: original.port, action: .failed)
        let tunnel = ConnectTunnel(
            owner: self, host: host, port: original.port, requirements: requirements, connectApp: nil,
            capturedDestination: original)
        reader = .tunnel(tunnel)
        tunnel.start()
        if host != address, case .tunnel = reader { checkServerName(host, against: original) }
    }

    // MARK: - Cleartext HTTP

    /// A captured request head: an `http://` request to its `Host` (or the address dialled), at the
    /// port the device dialled, connected to the address it dialled.
    func routeCaptured(_ head: RequestHead, to original: SocketAddress) {
        let app = head.headers.first("User-Agent").flatMap(AppAgent.init(userAgent:))
        let host = head.target.host
        record = ConnectionRecord(
            startedAt: environment.clock.wallMilliseconds, client: peer, method: head.method, scheme: .http, host: host,
            port: original.port, action: .failed, app: app)
        guard case .absolute("http", _, _, _) = head.target else {
            record?.fail(FailureReason(.badRequest, "bad request: \(head.method) \(head.target) to a server"))
            return respond(
                ProxyResponse.text(
                    status: 400, reason: "Bad Request",
                    body: "\(head.method) \(head.target) is not a request to a server\n"))
        }
        plainRequest(head, host: host, port: original.port)
    }

    // MARK: - Answers

    /// ``TunnelOwner/refuse(_:alert:)``: a captured TLS connection gets the alert or a reset.
    func refuse(_ http: [UInt8], alert: TLSAlertDescription?) {
        guard answersInTLS else { return respond(http) }
        if let alert { return respond(alert.fatalRecord) }
        resetClient()
    }

    /// Ends the connection with a reset, the record logged: what a device sees of a server that
    /// refused it, where there is no way to say why inside TLS.
    func resetClient() {
        client.setReading(false)
        endTunnel()
        closeAfterFlush(within: settings.headTimeout, then: .reset)
    }
}

extension ClientSession {
    /// Starts checking that the ClientHello's `name` resolves to the address dialled.
    func checkServerName(_ name: String, against original: SocketAddress) {
        serverNameCheck = ServerNameCheck(name: name, original: original, hosts: settings.hosts) {
            [unowned self] host, port, completion in
            environment.lookUpAddresses(host, port: port, completion: completion)
        }
    }
}
