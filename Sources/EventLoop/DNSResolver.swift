internal import CLibevent

/// libevent's asynchronous resolver for one event base: the single owner of its `evdns_base`, freed
/// in `deinit`. Reads /etc/resolv.conf and /etc/hosts; an extra hosts file may be added.
public final class DNSResolver {
    let raw: OpaquePointer

    public init(base: EventBase, hostsFile: String? = nil) throws(EventError) {
        // Without nameservers in resolv.conf (a sandbox, a lab network) names still resolve from the
        // hosts files, so a missing resolv.conf is not fatal.
        let flags = EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_NAMESERVERS_NO_DEFAULT | EVDNS_BASE_DISABLE_WHEN_INACTIVE
        guard let dns = evdns_base_new(base.raw, Int32(flags)) ?? evdns_base_new(base.raw, 0) else {
            throw EventError("evdns_base_new")
        }
        raw = dns
        // /etc/hosts always counts, whatever resolv.conf said.
        evdns_base_load_hosts(dns, nil)
        if let hostsFile, evdns_base_load_hosts(dns, hostsFile) != 0 {
            throw EventError("reading the hosts file \(hostsFile)", errno: 0)
        }
    }

    deinit { evdns_base_free(raw, 1) }
}
