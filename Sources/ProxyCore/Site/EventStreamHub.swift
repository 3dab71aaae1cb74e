import EventLoop

/// The open server-sent event streams of one loop, by channel: what a site's updates are written
/// to. Loop-confined, like the connections it holds (which unsubscribe when they close).
///
/// Each event is made once (``SharedBytes``) and every stream's output holds a reference to it; a
/// stream holds at most one event in its output and one waiting (``SiteConnection``), so what the
/// streams hold is bounded by their number times the size of an event, however slow their readers.
/// One address may hold at most ``maximumPerClient`` streams.
package final class EventStreamHub {
    private var channels: [String: [ObjectIdentifier: SiteConnection]] = [:]
    /// Open streams by client address.
    private var perClient: [String: Int] = [:]
    /// The most streams one client address may hold; one more is refused (429).
    package let maximumPerClient: Int
    /// The event a stream gets as soon as it opens on a channel (the current state), so that a
    /// page that subscribes late, or reconnects, is not left stale until the next change. Shared:
    /// the streams that open while the state stays the same get one copy between them.
    package var welcome: ((String) -> SharedBytes?)?

    package init(maximumPerClient: Int = 8) { self.maximumPerClient = maximumPerClient }

    /// How many streams are open on `channel`.
    package func subscribers(of channel: String) -> Int { channels[channel]?.count ?? 0 }

    /// How many streams are open on every channel.
    package var streams: Int { perClient.values.reduce(0, +) }

    /// Whether `client` may open one more stream.
    func admits(_ client: String) -> Bool { perClient[client, default: 0] < maximumPerClient }

    func subscribe(_ connection: SiteConnection, to channel: String) {
        channels[channel, default: [:]][ObjectIdentifier(connection)] = connection
        perClient[connection.client, default: 0] += 1
        if let event = welcome?(channel) { connection.send(event: event) }
    }

    func unsubscribe(_ connection: SiteConnection, from channel: String) {
        guard channels[channel]?.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        if channels[channel]?.isEmpty == true { channels[channel] = nil }
        perClient[connection.client, default: 1] -= 1
        if perClient[connection.client] == 0 { perClient[connection.client] = nil }
    }

    /// Writes `event` (one whole server-sent event, ending in a blank line) to every stream on
    /// `channel`, made once and shared; a stream still sending an earlier one keeps this one aside
    /// in its place.
    package func publish(_ event: [UInt8], on channel: String) {
        guard let streams = channels[channel] else { return }
        let shared = SharedBytes(event)
        for connection in streams.values { connection.send(event: shared) }
    }

    /// Writes a comment line (a heartbeat) to the streams on `channel` with nothing waiting: one
    /// still sending an event needs none, and it never takes the place of one.
    package func publishComment(_ comment: [UInt8], on channel: String) {
        guard let streams = channels[channel] else { return }
        let shared = SharedBytes(comment)
        for connection in streams.values { connection.send(comment: shared) }
    }

    /// Closes every stream (the listener is stopping).
    package func closeAll() {
        let all = channels.values.flatMap(\.values)
        channels = [:]
        perClient = [:]
        for connection in all { connection.close() }
    }
}
