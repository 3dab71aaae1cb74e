import EventLoop
import Glibc
import ProxyWire
import TLSInspection

/// TLS from a client to the proxy's own pages: the handshake with a leaf minted by the proxy's CA,
/// then a ``SiteConnection`` over the session's plaintext. The handshake must finish within the
/// head timeout. Loop-confined; owned by its ``ClientSession``, which ends when the pages'
/// connection closes, and which hands it the client's callbacks (``ClientReader/site(_:)``) until
/// the ``TLSByteStream`` over the client takes them.
final class SiteTLSConnection: ClientBytesHandler {
    enum State {
        case handshake(TLSStream)
        case serving(SiteConnection)
        case done
    }

    unowned let session: ClientSession
    let site: any LocalSite & Sendable
    let arrival: LocalRequest.Arrival
    private var state: State

    /// Nil when there is no CA (no intercept service); throws when a leaf cannot be minted.
    init?(
        session: ClientSession, site: any LocalSite & Sendable, serverName: String?, connectHost: String,
        arrival: LocalRequest.Arrival
    ) throws(TLSError) {
        guard
            let tls = try session.environment.mintedServerSession(
                serverName: serverName, connectHost: connectHost, over: session.client)
        else { return nil }
        self.session = session
        self.site = site
        self.arrival = arrival
        state = .handshake(tls)
    }

    func start() {
        let client = session.client
        client.setTimeouts(read: session.settings.headTimeout, write: session.settings.headTimeout)
        client.setReading(true)
        advance()
    }

    func clientReadable() { advance() }

    func clientEvent(_ event: StreamEvent) {
        if event == .endOfStream { advance() } else { session.finish() }
    }

    /// Nothing waits for the client's output during the handshake.
    func clientDrained() {}

    private func advance() {
        guard case .handshake(let tls) = state else { return }
        do {
            guard try tls.handshake() == .complete else { return }
        } catch {
            // A device that does not trust the CA aborts here: nothing to answer.
            state = .done
            return session.finish()
        }
        let settings = session.settings
        let pages = SiteConnection(
            stream: TLSByteStream(transport: session.client, tls: tls), site: site, client: session.deviceAddress,
            arrival: arrival,
            listener: session.listenerText,
            limits: SiteConnection.Limits(headTimeout: settings.headTimeout, idleTimeout: settings.idleTimeout)
        ) { [unowned self] _ in
            state = .done
            session.finish()
        }
        state = .serving(pages)
        pages.start()
    }

    func close() {
        let current = state
        state = .done
        if case .serving(let pages) = current { pages.close() }
    }
}
