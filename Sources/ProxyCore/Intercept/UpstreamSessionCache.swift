import ATSPolicy
import TLSInspection

/// The TLS sessions of intercepted tunnels' upstream legs, per event loop (no lock), with the facts
/// of the full handshake that made each: a later connection to the same server, as the same client
/// profile and SNI, offers the session, and when the server resumes it, the verdict is taken from
/// those facts (a resumed handshake sends no certificates), judged anew with the policy of the
/// moment. An iPhone resumes its sessions the same way. Bounded; an entry lives at most
/// ``lifetimeMilliseconds`` from the full handshake, however often it is resumed.
///
/// Generic over the session only so that tests can hold plain objects; the proxy keeps ``TLSSession``s.
final class SessionCache<Session: AnyObject> {
    struct Key: Hashable {
        var host: String
        var port: UInt16
        var serverName: String?
        var profile: ClientProfile
        /// A captured connection's original destination: its facts are that server's, not those of
        /// another the name reaches (nil: through the proxy setting, where the name is dialled).
        var address: String? = nil
    }

    struct Entry {
        let session: Session
        /// The full handshake's facts, and the address it reached.
        let result: ProbeResult
        /// When it was stored (``MonotonicClock`` milliseconds).
        let storedAt: Int64
    }

    private var entries: [Key: Entry] = [:]
    /// Insertion order, for eviction: oldest first.
    private var order: [Key] = []
    let capacity: Int
    /// How long a session is offered after the full handshake that made it.
    static var lifetimeMilliseconds: Int64 { 300_000 }

    init(capacity: Int = 1024) { self.capacity = capacity }

    var count: Int { entries.count }

    /// The entry for `key`, unless it is older than its lifetime (then dropped).
    func entry(for key: Key, now: Int64) -> Entry? {
        guard let entry = entries[key] else { return nil }
        guard now - entry.storedAt < Self.lifetimeMilliseconds else {
            remove(key)
            return nil
        }
        return entry
    }

    /// Keeps `session` for `key` when its connection ends. After a full handshake (`resumed`
    /// false) it comes with that handshake's facts, `report`, and its lifetime starts `now`. After
    /// a resumption it replaces the entry's session (TLS 1.3 servers issue a new ticket each time)
    /// but keeps the entry's facts and time: facts are never older than the lifetime. A resumed
    /// session whose entry is gone is not kept (how old its facts are is not known).
    func keep(_ session: Session, result: ProbeResult, resumed: Bool, for key: Key, now: Int64) {
        if resumed {
            guard let entry = entries[key] else { return }
            entries[key] = Entry(session: session, result: entry.result, storedAt: entry.storedAt)
            return
        }
        if entries[key] == nil {
            order.append(key)
            if order.count > capacity { remove(order[0]) }
        }
        entries[key] = Entry(session: session, result: result, storedAt: now)
    }

    /// Forgets every session: a reload may have changed the hosts table or what is trusted.
    func removeAll() {
        entries = [:]
        order = []
    }

    /// Forgets `key`: its server refused the session, or its facts no longer hold.
    func remove(_ key: Key) {
        guard entries.removeValue(forKey: key) != nil else { return }
        if let index = order.firstIndex(of: key) { order.remove(at: index) }
    }
}

/// The upstream sessions of intercepted tunnels.
typealias UpstreamSessionCache = SessionCache<TLSSession>
