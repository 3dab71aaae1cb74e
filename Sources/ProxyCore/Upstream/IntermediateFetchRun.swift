import EventLoop
import Glibc
import ProxyWire
import TLSInspection

/// One fetch of a CA Issuers URL on the loop: dial (under the destination rules of the client whose
/// verdict needs it, so a certificate cannot aim the proxy at a place that client may not reach),
/// send the HTTP/1.0 request, read the bounded answer, all by one deadline. Loop-confined; the
/// completion runs once, from the loop, unless the run is cancelled first.
final class IntermediateFetchRun {
    private let url: CAIssuersURL
    private let base: EventBase
    private let dialer: UpstreamDialer
    private let limit: Duration
    private var connection: SocketStream?
    private var timer: Timer?
    private var reader = CAIssuersResponseReader()
    private var completion: ((IntermediateFetchCache.Answer) -> Void)?

    init(url: CAIssuersURL, base: EventBase, resolver: DNSResolver, limits: ProbeLimits, rules: DestinationRules) {
        self.url = url
        self.base = base
        limit = limits.handshakeTimeout
        dialer = UpstreamDialer(
            base: base, resolver: resolver, hosts: limits.hosts, timeout: limits.connectTimeout,
            marking: limits.upstreamMarking, vet: rules.vet)
    }

    func start(completion: @escaping (IntermediateFetchCache.Answer) -> Void) {
        self.completion = completion
        guard
            let timer = try? Timer(
                base: base, onFire: { [unowned self] in fail("no whole answer in \(limit.logText)") })
        else { return fail("no timer could be made") }
        self.timer = timer
        timer.schedule(after: limit)
        dialer.dial(host: url.host, port: url.port) { [unowned self] result in
            switch result {
            case .failure(.refused(let refusal)): fail("refused: \(refusal)")
            case .failure(.unreachable(let failure, _)): fail(failure.description)
            case .success(let (connection, _)): send(on: connection)
            }
        }
    }

    func cancel() {
        completion = nil
        end()
    }

    private func send(on connection: SocketStream) {
        self.connection = connection
        connection.onReadable = { [unowned self] stream in
            guard completion != nil else { return }
            handle(reader.consume(stream.read(maximum: CAIssuersResponseReader.maximumBody + 16 * 1024)))
        }
        connection.onEvent = { [unowned self] _, event in
            switch event {
            case .endOfStream: handle(reader.end())
            case .error(let code): fail(String(cString: strerror(code)))
            case .timeout: fail("no answer in \(limit.logText)")
            case .connected: break
            }
        }
        connection.write(url.request)
        connection.setReading(true)
    }

    private func handle(_ state: CAIssuersResponseReader.State) {
        switch state {
        case .needMoreData: return
        case .failed(let reason): fail(reason)
        case .complete(let body): finish(X509Certificate.certificates(caIssuersBody: body))
        }
    }

    private func fail(_ reason: String) { finish(.failure(.init(reason))) }

    private func finish(_ answer: IntermediateFetchCache.Answer) {
        let completion = self.completion
        self.completion = nil
        end()
        completion?(answer)
    }

    private func end() {
        dialer.cancel()
        timer?.cancel()
        timer = nil
        connection?.close()
        connection = nil
    }
}
