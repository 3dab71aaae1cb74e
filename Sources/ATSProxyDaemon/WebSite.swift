import LiveView
import ProxyWire

/// What the web listener serves: `/metrics` in Prometheus's text format, everything else from the
/// live view. Main-thread-confined, like the live view it holds.
final class WebSite: LocalSite {
    let live: LiveViewSite
    private let metrics: () -> String

    init(live: LiveViewSite, metrics: @escaping () -> String) {
        self.live = live
        self.metrics = metrics
    }

    func reply(to request: LocalRequest) -> LocalReply {
        guard request.path == "/metrics" else { return live.reply(to: request) }
        guard request.method == "GET" || request.method == "HEAD" else {
            return .response(.methodNotAllowed(request.method))
        }
        // The content type Prometheus asks for and expects of the text format, version 0.0.4.
        return .response(
            LocalResponse(contentType: "text/plain; version=0.0.4; charset=utf-8", body: Array(metrics().utf8)))
    }
}
