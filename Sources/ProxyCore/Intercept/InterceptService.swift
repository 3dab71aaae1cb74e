import POSIX
import TLSInspection

/// Finds the certificate a device is shown for a host: minted on first use and kept. One per
/// event loop (not thread-safe), so the hot path takes no lock.
package protocol LeafSource: AnyObject {
    /// The credentials for `serverName` (the device's SNI), or, when it sent none, for the
    /// CONNECT's host (an IP address gets an IP SAN). `now`: seconds since 1970.
    func credentials(serverName: String?, connectHost: String, now: Int64) throws(TLSError) -> ServerCredentials
}

/// What intercept mode shares between the loops: the device-side TLS context, a way to make each
/// loop's leaf source, and which hosts' devices keep rejecting the minted certificate.
package final class InterceptService: Sendable {
    /// The server context of every device handshake (TLS 1.2-1.3, ATS's forward-secret AEAD suites).
    package let deviceContext: TLSServerContext
    let makeLeafSource: @Sendable () -> any LeafSource
    package let rejections = ClientRejections()
    /// The leaves minted and the leaf caches' hits, across the loops (the metrics read them).
    package let leaves: LeafStatistics

    /// - Parameter leaves: the counters of the minter behind `makeLeafSource`'s caches.
    package init(
        deviceContext: TLSServerContext, leaves: LeafStatistics = LeafStatistics(),
        makeLeafSource: @escaping @Sendable () -> any LeafSource
    ) {
        self.deviceContext = deviceContext
        self.leaves = leaves
        self.makeLeafSource = makeLeafSource
    }
}

/// Devices that aborted the minted handshake, per host: after the settings' limit the host is
/// passed through (judged by a probe, relayed unread), and the status lists it. Touched only when
/// a device rejects a certificate and once per intercepted CONNECT, under a lock shared by loops.
package final class ClientRejections: Sendable {
    private let state = Locked<[String: Int]>([:])

    package init() {}

    /// Counts one rejection for `host`; returns whether the host has just reached `limit`.
    package func record(host: String, limit: Int) -> Bool {
        state.withLock { counts in
            let count = (counts[host] ?? 0) + 1
            counts[host] = count
            return count == limit
        }
    }

    /// Whether `host` has been rejected `limit` times or more.
    package func passesThrough(_ host: String, limit: Int) -> Bool {
        state.withLock { ($0[host] ?? 0) >= limit }
    }

    /// The hosts passed through, with their counts, sorted by name.
    package func passedThrough(limit: Int) -> [(host: String, rejections: Int)] {
        state.withLock { counts in counts.filter { $0.value >= limit }.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
        }
    }
}

extension LeafCache: LeafSource {
    /// The device's SNI as a DNS name; without one, the CONNECT's host (an IP address gets an IP SAN).
    package func credentials(serverName: String?, connectHost: String, now: Int64) throws(TLSError) -> ServerCredentials
    {
        // Names are compared without case: Example.com and example.com share one leaf.
        try credentials(for: serverName.map { LeafName.dns($0.lowercased()) } ?? LeafName(host: connectHost), now: now)
    }
}
