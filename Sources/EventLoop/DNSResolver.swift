internal import CLibevent

/// libevent's asynchronous resolver for one event base: the single owner of its `evdns_base`, freed
/// in `deinit`. Reads /etc/resolv.conf and /etc/hosts; an extra hosts file may be added.
public final class DNSResolver {
    let raw: OpaquePointer

    /// - Parameter hostsFile: names to addresses in /etc/hosts format, consulted before /etc/hosts
    ///   and DNS (evdns answers from the first hosts entry loaded for a name).
    public init(base: EventBase, hostsFile: String? = nil) throws(EventError) {
        guard let dns = evdns_base_new(base.raw, Int32(EVDNS_BASE_DISABLE_WHEN_INACTIVE)) else {
            throw EventError("evdns_base_new")
        }
        raw = dns
        if let hostsFile, evdns_base_load_hosts(dns, hostsFile) != 0 {
            throw EventError("reading the hosts file \(hostsFile)", errno: 0)
        }
        // Without nameservers in resolv.conf (a sandbox, a lab network) names still resolve from the
        // hosts files, so a missing or empty resolv.conf is not fatal.
        let options = DNS_OPTION_SEARCH | DNS_OPTION_NAMESERVERS | DNS_OPTION_MISC | DNS_OPTION_NAMESERVERS_NO_DEFAULT
        _ = evdns_base_resolv_conf_parse(dns, Int32(options), "/etc/resolv.conf")
        // /etc/hosts always counts, whatever resolv.conf said.
        evdns_base_load_hosts(dns, nil)
    }

    deinit { evdns_base_free(raw, 1) }
}
