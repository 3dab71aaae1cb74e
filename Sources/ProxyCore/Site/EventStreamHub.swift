/// The open server-sent event streams of one loop, by channel: what a site's updates are written
/// to. Loop-confined, like the connections it holds (which unsubscribe when they close).
public final class EventStreamHub {
    private var channels: [String: [ObjectIdentifier: SiteConnection]] = [:]

    public init() {}

    /// How many streams are open on `channel`.
    public func subscribers(of channel: String) -> Int { channels[channel]?.count ?? 0 }

    func subscribe(_ connection: SiteConnection, to channel: String) {
        channels[channel, default: [:]][ObjectIdentifier(connection)] = connection
    }

    func unsubscribe(_ connection: SiteConnection, from channel: String) {
        channels[channel]?[ObjectIdentifier(connection)] = nil
        if channels[channel]?.isEmpty == true { channels[channel] = nil }
    }

    /// Writes `event` (one whole server-sent event, ending in a blank line) to every stream on
    /// `channel`; a stream whose reader has fallen too far behind is closed instead.
    public func publish(_ event: [UInt8], on channel: String) {
        guard let streams = channels[channel] else { return }
        for connection in streams.values { connection.send(event: event) }
    }

    /// Closes every stream (the listener is stopping).
    public func closeAll() {
        let all = channels.values.flatMap(\.values)
        channels = [:]
        for connection in all { connection.close() }
    }
}
