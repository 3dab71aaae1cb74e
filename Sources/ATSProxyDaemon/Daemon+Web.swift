import ATSPolicy
import EventLoop
import LiveView
import ProxyCore

/// The web listener: the live view of the traffic and `/metrics`, on the daemon's main loop.
extension Daemon {
    /// Binds `web-listen` and starts the live view. An address given in the settings that cannot
    /// be bound stops the start; the default one, taken by another program (a second proxy), is
    /// skipped with a warning, since the proxy itself does not need it.
    func startWebListener(base: EventBase) throws {
        guard case .address(let address) = configuration.webListen else { return }
        let site = WebSite(live: LiveViewSite(context: livePolicyContext)) { [unowned self] in metricsText() }
        do {
            web = try WebListener(
                base: base, address: address, site: site, feed: feed, access: WebAccess(token: configuration.webToken),
                limits: SiteConnection.Limits(
                    headTimeout: configuration.headTimeout, idleTimeout: configuration.idleTimeout),
                ingest: { entries, dropped in
                    site.live.ingest(entries: entries)
                    // The feed wakes this loop when half full, so it drops lines only when the loop cannot keep up.
                    if dropped > 0 { Daemon.say("atsproxy: the live view fell behind and missed \(dropped) log lines") }
                },
                update: { site.live.eventPayload() }, welcome: { site.live.eventPayload(current: true) })
            webSite = site
            if let bound = web?.address { listening.include(bound) }
        } catch {
            guard configuration.webListenGiven else {
                return Daemon.say(
                    "atsproxy: the live view is off: \(error) (choose another address with --web-listen, or off)")
            }
            throw configuration.unusableFile(.webListen, error)
        }
        if let url = webURL { Daemon.say("atsproxy live view and /metrics: \(url)") }
    }

    /// What the live view judges the traffic it shows by: the policy and settings in force.
    var livePolicyContext: LivePolicyContext {
        LivePolicyContext(
            policy: policy.policy, settings: configuration.policySettings, clientClass: configuration.clientClass,
            description: policy.description)
    }
}
