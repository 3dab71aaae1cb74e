import ATSPolicy
import TLSInspection
import Testing

@testable import ProxyCore

/// The upstream sessions of intercepted tunnels: facts are never older than the lifetime, however
/// often a session is resumed; bounded; forgotten on request.
@Suite("Upstream session cache")
struct UpstreamSessionCacheTests {
    final class Session {}

    static func key(_ host: String) -> SessionCache<Session>.Key {
        .init(host: host, port: 443, serverName: host, profile: .permissive)
    }

    static let result = ProbeResult()

    @Test(
        "a resumed session keeps the full handshake's time: the entry ends a lifetime after it, however often resumed")
    func resumptionKeepsTheTime() {
        let cache = SessionCache<Session>()
        let lifetime = SessionCache<Session>.lifetimeMilliseconds
        let key = Self.key("a.test")
        cache.keep(Session(), result: Self.result, resumed: false, for: key, now: 0)
        // Resumed every minute: each time the server's new ticket replaces the session.
        var resumedSession = Session()
        for minute in 1...4 {
            resumedSession = Session()
            cache.keep(resumedSession, result: Self.result, resumed: true, for: key, now: Int64(minute) * 60_000)
        }
        #expect(cache.entry(for: key, now: lifetime - 1)?.session === resumedSession, "the newest ticket is offered")
        #expect(cache.entry(for: key, now: lifetime) == nil, "a lifetime after the full handshake, a full one again")
    }

    @Test("a resumed session whose entry is gone is not kept; a full handshake's is")
    func resumedWithoutEntry() {
        let cache = SessionCache<Session>()
        cache.keep(Session(), result: Self.result, resumed: true, for: Self.key("b.test"), now: 0)
        #expect(cache.count == 0)
        cache.keep(Session(), result: Self.result, resumed: false, for: Self.key("b.test"), now: 0)
        #expect(cache.count == 1)
    }

    @Test("bounded: the oldest entry goes first; removeAll forgets every one")
    func bounded() {
        let cache = SessionCache<Session>(capacity: 2)
        for host in ["c.test", "d.test", "e.test"] {
            cache.keep(Session(), result: Self.result, resumed: false, for: Self.key(host), now: 0)
        }
        #expect(cache.count == 2)
        #expect(cache.entry(for: Self.key("c.test"), now: 1) == nil)
        #expect(cache.entry(for: Self.key("e.test"), now: 1) != nil)
        cache.removeAll()
        #expect(cache.count == 0)
    }
}
