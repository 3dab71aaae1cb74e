/// The open server-sent event streams of one loop, by channel: what a site's updates are written
/// to. Loop-confined, like the connections it holds (which unsubscribe when they close).
package final class EventStreamHub {
    private var channels: [String: [ObjectIdentifier: SiteConnection]] = [:]
    /// The event a stream gets as soon as it opens on a channel (the current state), so that a
    /// page that subscribes late, or reconnects, is not left stale until the next change.
    package var welcome: ((String) -> [UInt8]?)?

    package init() {}

    /// How many streams are open on `channel`.
    package func subscribers(of channel: String) -> Int { channels[channel]?.count ?? 0 }

    func subscribe(_ connection: SiteConnection, to channel: String) {
        channels[channel, default: [:]][ObjectIdentifier(connection)] = connection
        if let event = welcome?(channel) { connection.send(event: event) }
    }

    func unsubscribe(_ connection: SiteConnection, from channel: String) {
        channels[channel]?[ObjectIdentifier(connection)] = nil
        if channels[channel]?.isEmpty == true { channels[channel] = nil }
    }

    /// Writes `event` (one whole server-sent event, ending in a blank line) to every stream on
    /// `channel`; a stream whose reader has fallen too far behind is closed instead.
    package func publish(_ event: [UInt8], on channel: String) {
        guard let streams = channels[channel] else { return }
        for connection in streams.values { connection.send(event: event) }
    }

    /// Closes every stream (the listener is stopping).
    package func closeAll() {
        let all = channels.values.flatMap(\.values)
        channels = [:]
        for connection in all { connection.close() }
    }
}
