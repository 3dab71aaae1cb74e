internal import CLibevent
import Glibc

/// libevent's asynchronous resolver for one event base: the single owner of its `evdns_base`, freed
/// in `deinit`. Reads /etc/resolv.conf and /etc/hosts.
///
/// The proxy's own `--hosts-file` is not loaded here: it is read once per load or reload into a
/// table every loop shares (the proxy's upstream dialer consults it before this resolver), so a
/// reload can replace it, which evdns's hosts entries cannot be.
package final class DNSResolver {
    let raw: OpaquePointer

    package init(base: EventBase) throws(EventError) {
        guard let dns = evdns_base_new(base.raw, Int32(EVDNS_BASE_DISABLE_WHEN_INACTIVE)) else {
            throw EventError("evdns_base_new")
        }
        raw = dns
        // Without nameservers in resolv.conf (a sandbox, a lab network) names still resolve from the
        // hosts files, so a missing or empty resolv.conf is not fatal.
        let options = DNS_OPTION_SEARCH | DNS_OPTION_NAMESERVERS | DNS_OPTION_MISC | DNS_OPTION_NAMESERVERS_NO_DEFAULT
        _ = evdns_base_resolv_conf_parse(dns, Int32(options), "/etc/resolv.conf")
        // /etc/hosts always counts, whatever resolv.conf said.
        evdns_base_load_hosts(dns, nil)
    }

    deinit { evdns_base_free(raw, 1) }
}

/// One pending name lookup: ``cancel()`` it when its answer is no longer wanted (the completion
/// then never runs).
package final class AddressLookup {
    fileprivate var request: OpaquePointer?
    fileprivate var completion: ((Result<[SocketAddress], AddressLookupError>) -> Void)?

    fileprivate init(completion: @escaping (Result<[SocketAddress], AddressLookupError>) -> Void) {
        self.completion = completion
    }

    /// A lookup that another resolver answers (a test's scripted one), holding the completion
    /// itself: cancelling this one does nothing.
    package init() {}

    package func cancel() {
        completion = nil
        if let request {
            self.request = nil
            evdns_getaddrinfo_cancel(request)  // Runs the callback, which finds no completion.
        }
    }

    fileprivate func finish(_ result: Result<[SocketAddress], AddressLookupError>) {
        request = nil
        let completion = self.completion
        self.completion = nil
        completion?(result)
    }
}

/// Why a name did not resolve, in the resolver's words.
package struct AddressLookupError: Error, Sendable, CustomStringConvertible {
    package var reason: String

    package init(reason: String) { self.reason = reason }
    package var description: String { reason }
}

extension DNSResolver {
    /// Every TCP address for `host:port`, in the resolver's order (/etc/hosts, then DNS; a numeric host is its own answer), asynchronously: `completion` runs from the loop,
    /// possibly before this returns (a numeric address or a hosts entry), unless cancelled first.
    @discardableResult
    package func lookUp(
        _ host: String, port: UInt16, completion: @escaping (Result<[SocketAddress], AddressLookupError>) -> Void
    ) -> AddressLookup {
        let lookup = AddressLookup(completion: completion)
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(Glibc.SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        // The callback's own retain, released when it runs (it always runs: answered, failed or cancelled).
        let context = Unmanaged.passRetained(lookup).toOpaque()
        let request = evdns_getaddrinfo(raw, host, String(port), &hints, addressesCallback, context)
        // Answered already (the callback ran and cleared the completion) or still pending.
        if lookup.completion != nil { lookup.request = request }
        return lookup
    }
}

private func addressesCallback(
    _ result: Int32, _ addresses: UnsafeMutablePointer<addrinfo>?, _ context: UnsafeMutableRawPointer?
) {
    guard let context else { return }
    let lookup = Unmanaged<AddressLookup>.fromOpaque(context).takeRetainedValue()
    defer { if let addresses { evutil_freeaddrinfo(addresses) } }
    guard result == 0 else {
        if result == EVUTIL_EAI_CANCEL {
            return lookup.finish(.failure(AddressLookupError(reason: "cancelled")))
        }
        return lookup.finish(.failure(AddressLookupError(reason: String(cString: evutil_gai_strerror(result)))))
    }
    var found: [SocketAddress] = []
    var entry = addresses
    while let address = entry?.pointee {
        entry = address.ai_next
        guard let socketAddress = address.ai_addr else { continue }
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: socketAddress, count: Int(address.ai_addrlen)))
        }
        found.append(SocketAddress(storage: storage, length: Int32(address.ai_addrlen)))
    }
    if found.isEmpty { return lookup.finish(.failure(AddressLookupError(reason: "no address"))) }
    lookup.finish(.success(found))
}
