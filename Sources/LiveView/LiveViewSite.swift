import ATSPolicy
import ProxyWire
import TextFormats
import TrafficReport

/// The web listener's live view: the daemon's log lines gathered (``LiveTraffic``) and shown
/// against the daemon's current policy.
///
/// Belongs to the web listener's loop alone (not `Sendable`): the daemon calls ``ingest(line:)``
/// with each line it logs, sets ``context`` when it reloads its policy, answers requests with
/// ``reply(to:)`` and, a few times a second, writes ``eventPayload()`` (when not nil) to every
/// open `traffic` event stream.
///
/// Routes (GET and HEAD; 405 for other methods, 404 for other paths):
/// - `/`: the page, filtered by `?app=&client=&host=&verdict=`;
/// - `/host?name=HOST`: one host's connections, requests and explanation;
/// - `/api/state.json`: the state as JSON (``LiveSnapshot/json``);
/// - `/api/plist?app=&client=&host=`: the plist panel for those filters as JSON
///   (``FilteredPlist/json``), which the page's script fetches while a filter is set;
/// - `/events`: the `traffic` event stream (``LocalReply/eventStream(channel:retryMilliseconds:)``).
package final class LiveViewSite: LocalSite {
    /// The event stream's channel: the server writes ``eventPayload()`` to its streams.
    package static let channel = "traffic"

    package private(set) var traffic: LiveTraffic
    /// The policy the traffic is judged against; setting it (on reload) updates every view.
    package var context: LivePolicyContext {
        didSet { policyChanges += 1 }
    }
    private var policyChanges: UInt64 = 0
    private var cached: LiveSnapshot?
    /// The plist panel per filter, for ``cached``'s version: a viewer's updates ask for the same one.
    private var cachedPlists: [HostFilter: FilteredPlist] = [:]
    /// Filters' plists kept per version: a few viewers' filters, not every query a client makes up.
    private static let cachedPlistLimit = 32
    /// The version of the last event payload given out.
    private var sentVersion: UInt64?

    package init(context: LivePolicyContext, limits: LiveTraffic.Limits = LiveTraffic.Limits()) {
        self.context = context
        traffic = LiveTraffic(limits: limits)
    }

    /// Increases with every line ingested and every policy set.
    package var version: UInt64 { traffic.version &+ policyChanges }

    /// One of the daemon's log lines, as written.
    package func ingest(line: [UInt8]) { traffic.ingest(line: line) }

    /// Takes a batch of lines in the order written, skipping the `connection_open` lines of
    /// connections that also ended within the batch (``LineBatch``).
    package func ingest(lines: [[UInt8]]) { ingest(entries: lines.map(LoggedEntry.line)) }

    /// Takes a batch of the daemon's entries (lines, and request lines as records) in the order
    /// written, as ``ingest(lines:)`` takes lines.
    package func ingest(entries: [LoggedEntry]) {
        for entry in LineBatch.worthParsing(entries) {
            switch entry {
            case .line(let line): traffic.ingest(line: line)
            case .request(let request): traffic.ingest(request: request)
            }
        }
    }

    /// The state now, judged once per version.
    package var snapshot: LiveSnapshot {
        if let cached, cached.version == version { return cached }
        let snapshot = LiveSnapshot(version: version, traffic: traffic, context: context)
        cached = snapshot
        cachedPlists = [:]
        return snapshot
    }

    /// The plist panel for `filter`'s app, client and host, judged once per version and filter.
    package func plist(for filter: HostFilter) -> FilteredPlist {
        let snapshot = self.snapshot
        let selection = filter.trafficSelection
        if let plist = cachedPlists[selection] { return plist }
        let plist = FilteredPlist(snapshot: snapshot, filter: selection)
        if cachedPlists.count >= Self.cachedPlistLimit { cachedPlists = [:] }
        cachedPlists[selection] = plist
        return plist
    }

    /// One server-sent event, `event: update` with the state's JSON on one `data:` line, or nil when
    /// nothing changed since the last payload given out.
    /// - Parameter current: the current state's event whether or not it changed (for a stream
    ///   that has just opened), leaving what the open streams were last sent as it is.
    package func eventPayload(current: Bool = false) -> [UInt8]? {
        let snapshot = self.snapshot
        if !current {
            guard sentVersion != snapshot.version else { return nil }
            sentVersion = snapshot.version
        }
        // JSONValue escapes every control character and U+2028/9: the data is one line.
        return Array("event: update\ndata: ".utf8) + snapshot.json.serializedBytes + Array("\n\n".utf8)
    }

    package func reply(to request: LocalRequest) -> LocalReply {
        let known = ["/", "/host", "/api/state.json", "/api/plist", "/events"]
        guard known.contains(request.path) else { return .response(LocalResponse.notFound(request.path)) }
        guard request.method == "GET" || request.method == "HEAD" else {
            return .response(LocalResponse.methodNotAllowed(request.method))
        }
        switch request.path {
        case "/events":
            // HEAD gets the stream's head without holding a connection open.
            guard request.method == "GET" else {
                return .response(LocalResponse(contentType: "text/event-stream", body: []))
            }
            return .eventStream(channel: Self.channel, retryMilliseconds: 1000)
        case "/api/state.json":
            return .response(LocalResponse.json(snapshot.json.serialized))
        case "/api/plist":
            return .response(LocalResponse.json(plist(for: HostFilter(request)).json.serialized))
        case "/host":
            return .response(hostPage(request.queryValue("name") ?? ""))
        default:
            let filter = HostFilter(request)
            return .response(page(LivePage(snapshot: snapshot, filter: filter, plist: plist(for: filter)).html))
        }
    }

    private func hostPage(_ name: String) -> LocalResponse {
        guard let host = try? HostIdentity(parsing: name) else {
            return page(
                HTML.page(
                    title: "Not a host",
                    body: "<p>\(HTML.escaped(name)) is not a host name. <a href=\"/\">All hosts</a></p>\n"), status: 404
            )
        }
        let hostPage = HostPage(host: host, snapshot: snapshot)
        guard hostPage.hasAnything else {
            return page(
                HTML.page(
                    title: "Not seen",
                    body:
                        "<p>atsproxy has seen no traffic to \(HTML.escaped(host.description)). <a href=\"/\">All hosts</a></p>\n"
                ), status: 404)
        }
        return page(hostPage.html)
    }

    private func page(_ html: String, status: Int = 200) -> LocalResponse {
        var response = LocalResponse.html(html, status: status, reason: status == 200 ? "OK" : "Not Found")
        response.headers.append(("Content-Security-Policy", HTML.contentSecurityPolicy))
        return response
    }
}
