import EventLoop
import Glibc
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

/// Devices that refused the minted certificate (``DeviceHandshakeFailure/isCertificateRejection``),
/// per client address and host: once one device has refused a host's certificate the settings'
/// number of times, that host is passed through for that device only (judged by a probe, relayed
/// unread); another device's traffic to it is still intercepted. `status`, the live view and
/// /metrics show the pairs; `atsproxyctl passthrough clear` forgets them. Touched when a device
/// refuses a certificate and once per intercepted CONNECT, under a lock shared by the loops.
package final class ClientRejections: Sendable {
    /// A device (its address, without the port) and the host whose certificate it refused.
    package struct Pair: Hashable, Sendable, Comparable {
        package var client: String
        package var host: String

        package init(client: String, host: String) {
            self.client = client
            self.host = host
        }

        package static func < (left: Pair, right: Pair) -> Bool {
            (left.host, left.client) < (right.host, right.client)
        }
    }

    private let counts = Locked<[Pair: Int]>([:])

    package init() {}

    /// Counts one refusal of `pair`; returns whether the pair has just reached `limit`.
    package func record(_ pair: Pair, limit: Int) -> Bool {
        counts.withLock { counts in
            let count = (counts[pair] ?? 0) + 1
            counts[pair] = count
            return count == limit
        }
    }

    /// Whether `pair` has been refused `limit` times or more.
    package func passesThrough(_ pair: Pair, limit: Int) -> Bool {
        counts.withLock { ($0[pair] ?? 0) >= limit }
    }

    /// The pairs passed through, with their counts, by host then client.
    package func passedThrough(limit: Int) -> [(pair: Pair, rejections: Int)] {
        counts.withLock { counts in counts.filter { $0.value >= limit }.map { ($0.key, $0.value) } }
            .sorted { $0.pair < $1.pair }
    }

    /// Forgets every count: each device's next connection to each host is intercepted again.
    /// Returns how many pairs were passed through (at `limit`) before.
    @discardableResult
    package func clear(limit: Int) -> Int {
        counts.withLock { counts in
            let passed = counts.values.count { $0 >= limit }
            counts = [:]
            return passed
        }
    }
}

extension SessionEnvironment {
    /// The server end of a device's TLS over `client`, presenting a leaf minted for `serverName`
    /// (the device's SNI) or, without one, for `connectHost`: the one way the proxy answers a
    /// device's handshake with its own certificate (an intercepted tunnel, the proxy's own pages).
    /// Nil when there is no CA; throws when no leaf can be minted or no session made.
    func mintedServerSession(serverName: String?, connectHost: String, over client: any ByteStream)
        throws(TLSError) -> TLSStream?
    {
        guard let service = interceptService, let leaves = leafSource else { return nil }
        let credentials = try leaves.credentials(
            serverName: serverName, connectHost: connectHost, now: clock.wallSeconds)
        return try TLSStream(
            role: .server(credentials: credentials), context: service.deviceContext, transport: StreamTransport(client))
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
